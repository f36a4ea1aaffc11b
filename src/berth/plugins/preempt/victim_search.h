// Berth's victim choice: the least-cost minimal set of running jobs whose
// eviction lets a gang fit inside one topology domain.
//
// Levels are tried from the narrowest (NVLink) to the job's required level
// (else the region), skipping those whose domains are smaller than the gang.
// At a level, every domain whose free GPUs plus its candidates' GPUs could
// hold the gang (a per-node bound read from prefix sums) is searched, and the
// best set of the level wins: least cost, then fewest victims, then the
// lowest domain id. The first level with any set ends the search.
//
// Domains are searched in order of a lower bound on their cost, and the
// search of a level stops at the first domain whose bound exceeds the best
// set found (so it returns what searching every domain would). The bound: a
// victim's cost is shared among its GPUs; freeing the GPUs a node lacks for
// its s-th slot costs at least its cheapest GPU shares (fractionally, CPU and
// memory ignored); the domain's bound is the sum of the cheapest such slot
// increments over its nodes, as many as it lacks slots.
//
// In one domain (greedy, then prune):
//   1. per node, the best "option": its candidates in order of cost per
//      milli-GPU they hold there, taking the prefix with the least cost per
//      task slot gained in the domain (slots of the gang's widest task shape:
//      whole free GPUs on a node, CPU and memory; a victim spread over
//      several nodes gains on each), the gain capped at the slots still
//      missing. Victims already chosen cost nothing more.
//   2. repeatedly take the node option with the least cost per slot (lazily
//      re-evaluated: a node's option is recomputed when a chosen victim
//      touches it or when it reaches the top), until the domain holds the gang.
//      A victim spread over several nodes or domains frees room on all of
//      them; it counts wherever it helps, and its cost once.
//   3. prune: drop victims, most expensive first, while the gang still fits:
//      the set is minimal (fitting is monotone in the set, so one pass suffices).
// Queue budgets (eligibility.h) are honoured throughout.
//
// Cost: O(running tasks) to index the candidates by node, then per searched
// domain O(nodes + option recomputations x candidates per node).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "berth/cluster/level.h"
#include "berth/plugins/preempt/eligibility.h"
#include "berth/plugins/preempt/room.h"

namespace berth::plugins::preempt {

struct VictimSet {
  DomainId domain;
  cluster::Level level = cluster::Level::kRegion;
  std::vector<int32_t> victims;  // indexes in view.running, by job id
  double cost = 0;               // GPU-seconds lost
};

// Reusable: keep one per plugin (scratch sized to the cluster).
class VictimSearch {
 public:
  std::optional<VictimSet> Find(const framework::PreemptContext& ctx, const GangNeed& need, Eligibility& elig);

  // Finds whose NVLink level FindOnNodes decided (tests).
  int64_t decided_on_nodes() const { return decided_on_nodes_; }

  // Searches one node range [begin, end) only (tests; exact comparisons).
  std::optional<VictimSet> FindIn(const framework::PreemptContext& ctx, const GangNeed& need, Eligibility& elig,
                                  int32_t begin, int32_t end);

 private:
  struct Option {
    double ratio = 0;  // cost per slot gained
    int32_t gain = 0;
    int32_t node = 0;
    uint32_t version = 0;
    int32_t first = 0, count = 0;  // victims: option_victims_[first, first + count)
  };
  static bool Worse(const Option& a, const Option& b);  // heap order: a after b

  // Binds to the view and sizes the scratch; no node is indexed yet.
  void Attach(const framework::PreemptContext& ctx, const GangNeed& need, Eligibility& elig);
  // Node n's slots now and with every candidate gone (base_slots_,
  // max_slots_, cur_slots_); true when evictions there could gain a slot.
  bool IndexNode(int32_t n);
  // Every node, with its slot bounds and the prefix sums (once per Find).
  void IndexAll();
  // The NVLink level when each of its domains is one node, the job has one
  // task shape with GPUs and no candidate holds shares. A node's domain bound
  // is then at least (GPUs it lacks) x 1000 x the least cost per milli-GPU
  // of a candidate holding GPUs there, so only the nodes of the cheapest
  // candidates (and those with enough GPUs free, whose bound may be 0) are
  // searched: the set is the one of Find's loop over every domain. False
  // when it could not decide (then Find's loop runs).
  bool FindOnNodes(const GangNeed& need, Eligibility& elig, std::optional<VictimSet>& best);
  // Find's order of sets: least cost, fewest victims, lowest domain id.
  static bool Better(const VictimSet& a, const std::optional<VictimSet>& best);
  // Slot-cost bounds of node n (entries `on`), appended to bound_.
  void NodeBounds(int32_t n, std::span<const CandidatesByNode::Entry> on);
  // The domain's cost bound: the cheapest `missing` slot bounds in [begin, end).
  double DomainBound(int32_t begin, int32_t end, int64_t missing);
  std::optional<VictimSet> SearchDomain(const GangNeed& need, Eligibility& elig, int32_t begin, int32_t end);
  std::optional<Option> BestOption(int32_t node, int64_t missing, Eligibility& elig);
  bool Done(const GangNeed& need, int32_t begin, int32_t end) const;
  void Apply(int32_t cand, int sign, int32_t begin, int32_t end);

  // FindOnNodes gives up (Find's loop decides) past this many searched nodes.
  static constexpr int32_t kMaxVisits = 256;

  const framework::SchedulerView* view_ = nullptr;
  Eligibility* elig_ = nullptr;
  bool indexed_ = false;
  std::vector<uint32_t> visited_;  // per node: == visit_now_ when FindOnNodes reached it
  uint32_t visit_now_ = 0;
  int64_t decided_on_nodes_ = 0;
  TaskShape primary_;
  Room room_;
  std::vector<int32_t> base_slots_, max_slots_, cur_slots_;
  std::vector<int64_t> base_prefix_, max_prefix_;
  // Lower bounds of the cost of each further slot per node (increasing), by
  // node: bound_[bound_begin_[n], bound_begin_[n + 1]).
  std::vector<int32_t> bound_begin_;
  std::vector<double> bound_;
  std::vector<double> bound_scratch_;
  struct Share {
    double per_milli;
    int64_t milli;
  };
  std::vector<Share> shares_;
  struct Ranked {
    double bound;
    int32_t domain;
  };
  std::vector<Ranked> ranked_;
  std::vector<uint32_t> version_;
  std::vector<uint8_t> selected_;  // per candidate
  std::vector<int32_t> chosen_;    // candidates chosen in this domain
  int64_t total_ = 0;              // slots of the primary shape in the domain now
  std::vector<Option> heap_;
  std::vector<int32_t> option_victims_;
  std::vector<int32_t> changed_;
  std::vector<int32_t> gained_nodes_;
  std::vector<int32_t> refresh_;
  int32_t begin_ = 0, end_ = 0;  // the domain searched
  std::vector<uint32_t> stamp_;
  uint32_t stamp_now_ = 0;
  struct Group {
    double key;
    int64_t id;
    int32_t cand;
    size_t begin, end;  // its entries in by_node().On(node)
  };
  std::vector<Group> groups_;
};

}  // namespace berth::plugins::preempt
