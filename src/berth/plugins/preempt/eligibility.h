// Who may be evicted to make room for a job, and what each eviction costs: the
// rules shared by the `preempt` and `preempt-lowest-priority` post-filters, so
// that the two differ only in how they choose among the same candidates.
//
// J is the job that could not be placed (leaf queue qJ, priority pJ); V is a
// running job (leaf queue qV, priority pV). V is a candidate when
//   guards:  V has run at least `min_runtime` in its current run (or V is
//            best-effort work, JobSpec::best_effort; the post-filters pass 0
//            for a service replica reclaiming a reservation), and V is not
//            the job whose preemption last evicted J (a job evicted by X never
//            evicts X: no A-evicts-B-evicts-A ping-pong);
//   and      qV == qJ and pV < pJ (priority inside a queue),
//   or       qV != qJ, qV is borrowing in J's dimension, and J has the reclaim
//            right (qJ has a guarantee there and stays within it with J) or
//            pV < pJ. Only borrowed capacity is taken from another queue:
//            the evictions from qV may not exceed what qV borrowed (its
//            budget), so no queue is ever pushed below its guarantee.
// So a preemptor always ranks strictly above each of its victims in
// (reclaim right, priority) order, with guarantees outranking priority across
// queues, as in Kueue's reclaim and Volcano's reclaim action.
//
// J's dimension: the single GPU type that all its GPU groups accept when its
// queue has a quota for that type, else all types together ("*"). Borrowing
// is judged on the queues from qV up to, not including, the closest ancestor
// it shares with qJ; queues there without a quota in that dimension do not
// limit it, and when none has one, qV's guarantee is 0 (all it uses is
// borrowed: e.g. the unconstrained per-tenant leaves of a run without
// --queues, where only priority decides).
//
// Cost of evicting V: its GPUs x the time since its last checkpoint
// (RunningJob::LostGpuSeconds at now).
#pragma once

#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "berth/common/bits.h"
#include "berth/framework/plugin.h"

namespace berth::plugins::preempt {

struct Candidate {
  double cost = 0;        // GPU-seconds lost if evicted now
  int32_t run = 0;        // index in view.running
  // What it is charged in J's dimension, in the ledger's unit (its eviction
  // gives that back); -1 until a budget check needs it (Eligibility::CanTake
  // reads its placements then).
  mutable int32_t dim_milli = -1;
  int32_t milli = 0;      // milli-GPU it holds in all
  int32_t path_begin = 0;  // its queue's budget path (queues with a quota in J's dimension)
  int16_t path_len = 0;    // 0: no budget
};

// The candidates' tasks indexed by node: for each node, a copy of each
// candidate task's allocation there, the tasks of one candidate adjacent.
class CandidatesByNode {
 public:
  struct Entry {  // one task of a candidate, copied for sequential scans
    int32_t cand;  // index in Eligibility::candidates()
    MilliGpu milli_per_gpu;
    uint64_t gpu_mask;
    MilliCpu cpu;
    MiB mem;
    int64_t milli() const { return int64_t{PopCount(gpu_mask)} * milli_per_gpu; }
  };
  // Sizes each node's room by its task count in the state.
  void Reset(const state::ClusterState& state);
  // Appends candidate `cand`'s tasks.
  void Add(int32_t cand, std::span<const framework::TaskPlacement> placements) {
    for (const auto& p : placements) {
      const state::Allocation& a = p.alloc;
      entries_[end_[a.node.value()]++] = {cand, a.milli_per_gpu, a.gpu_mask, a.cpu_milli, a.memory_mib};
    }
  }
  std::span<const Entry> On(int32_t node) const {
    return {entries_.data() + begin_[node], static_cast<size_t>(end_[node] - begin_[node])};
  }

 private:
  // Node n's room is sized by its task count in the state, so that one pass
  // over the candidates fills it: entries_[begin_[n], end_[n]).
  std::vector<int32_t> begin_;
  std::vector<int32_t> end_;
  std::vector<Entry> entries_;
};

class Eligibility {
 public:
  // Finds the candidates for ctx.job among ctx.view.running (reading only
  // their records, not their placements). Returns false (and no candidates)
  // when nothing could be evicted for it at all.
  bool Build(const framework::PreemptContext& ctx, TimeUs min_runtime);

  std::span<const Candidate> candidates() const { return candidates_; }
  // Every candidate's tasks by node, indexed at the first call after Build.
  const CandidatesByNode& by_node();
  // The candidates' tasks on node n, a candidate's tasks adjacent: from
  // by_node() once it is indexed, else from the state's tasks on n through
  // the view's lookup (per_node()). Valid until the next call of On or by_node.
  std::span<const CandidatesByNode::Entry> On(int32_t n);
  // On can answer for one node without indexing every candidate: the view
  // had a lookup of running jobs by id.
  bool per_node() const { return lookup_ != nullptr; }
  // Some candidate holds a GPU share (RunningJob::shares).
  bool shares() const { return shares_; }
  bool reclaim() const { return reclaim_; }
  int32_t dim() const { return dim_; }

  // Budgets: whether candidate c can be evicted on top of what was taken, and
  // taking / giving back its share. Reset() clears what was taken.
  bool CanTake(const Candidate& c) const;
  void Take(const Candidate& c, int64_t sign);
  void Reset();

  // "priority 10" or "priority 10, reclaim for queue q" (for plan reasons).
  std::string Describe(const framework::PreemptContext& ctx) const;

 private:
  // Candidate c's charge in dim_ (Candidate::dim_milli), from its placements.
  int32_t DimMilli(const Candidate& c) const;

  const tenancy::Ledger* ledger_ = nullptr;
  const state::ClusterState* state_ = nullptr;
  std::span<const framework::RunningJob> running_;
  const framework::RunningLookup* lookup_ = nullptr;
  int32_t dim_ = 0;
  bool reclaim_ = false;
  bool shares_ = false;
  std::vector<Candidate> candidates_;
  CandidatesByNode by_node_;
  bool by_node_indexed_ = false;
  // With a lookup: the candidate of each running job (-1: none), and the
  // nodes On indexed so far (node_stamp_[n] == stamp_): their entries are
  // node_entries_[node_begin_[n], + node_len_[n]).
  std::vector<int32_t> cand_of_run_;
  std::vector<uint32_t> node_stamp_;
  uint32_t stamp_ = 0;
  std::vector<int32_t> node_begin_, node_len_;
  std::vector<CandidatesByNode::Entry> node_entries_;
  std::vector<int32_t> paths_;        // queue ids, by candidate path ranges
  std::vector<int64_t> taken_;        // per queue: milli evicted so far
  std::vector<int32_t> taken_touched_;
  std::vector<int32_t> path_of_queue_begin_, path_of_queue_len_;  // per queue, -1: not computed
  std::vector<int8_t> path_lends_;    // per queue: every queue of its path borrows (1), not (0), -1: not computed
  std::vector<uint8_t> j_ancestor_;   // per queue: qJ or one of its ancestors
};

// The dimension J is judged in (see the file comment).
int32_t JobDimension(const job::JobSpec& job, int32_t queue, const tenancy::Ledger& ledger);
// RunningJob::LostGpuSeconds, computed faster (same value up to rounding).
double LostGpuSeconds(const framework::RunningJob& v, TimeUs now);
// J's milli-GPU in a dimension: every group's gang minimum x GPUs x share.
int64_t JobMilli(const job::JobSpec& job);
// JobMilli in the ledger's unit in a dimension: on that one GPU type, or for
// all types the least it could be charged (normalized units, ledger.h).
int64_t JobAmount(const job::JobSpec& job, int32_t dim, const tenancy::Ledger& ledger);

}  // namespace berth::plugins::preempt
