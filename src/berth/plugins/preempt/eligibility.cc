// Candidates for eviction (see eligibility.h).
#include "berth/plugins/preempt/eligibility.h"

#include <algorithm>
#include <bit>

#include "berth/common/bits.h"

namespace berth::plugins::preempt {
namespace {
// Added to the cost of evicting a guaranteed run when the tree has budgets, so
// that any set of best-effort victims costs less than one with a guaranteed run.
constexpr double kGuaranteedCost = 1e12;
}  // namespace

int32_t JobDimension(const job::JobSpec& job, int32_t queue, const tenancy::Ledger& ledger) {
  const int32_t all = ledger.all_types_dim();
  uint64_t type_bits = 0;
  for (const auto& g : job.groups) {
    if (g.gpus == 0) continue;
    const uint64_t bits = g.gpu_types.bits();
    if (PopCount(bits) != 1 || (type_bits != 0 && bits != type_bits)) return all;
    type_bits = bits;
  }
  if (type_bits == 0 || queue < 0 || queue >= ledger.tree().size()) return all;
  const int32_t t = std::countr_zero(type_bits);
  const auto& node = ledger.tree().node(queue);
  return t < static_cast<int32_t>(node.has_quota.size()) && node.has_quota[t] ? t : all;
}

int64_t JobAmount(const job::JobSpec& job, int32_t dim, const tenancy::Ledger& ledger) {
  const int64_t milli = JobMilli(job);
  return dim != ledger.all_types_dim() ? ledger.Amount(job, GpuTypeId(static_cast<int16_t>(dim)), milli)
                                       : ledger.LeastAmount(job, milli);
}

int64_t JobMilli(const job::JobSpec& job) {
  int64_t milli = 0;
  for (const auto& g : job.groups) milli += int64_t{g.gang_min()} * g.gpus * g.milli_per_gpu;
  return milli;
}

// RunningJob::LostGpuSeconds without a 64-bit integer division (this runs
// for every running job at every decision): the quotient from a double
// division, corrected to the exact remainder.
double LostGpuSeconds(const framework::RunningJob& v, TimeUs now) {
  const TimeUs elapsed = now - v.run_start;
  if (elapsed <= 0) return 0;
  TimeUs age = elapsed;
  if (v.checkpoint_interval > 0) {
    const TimeUs interval = v.checkpoint_interval;
    const auto q = static_cast<TimeUs>(static_cast<double>(elapsed) / static_cast<double>(interval));
    age = elapsed - q * interval;
    if (age < 0) age += interval;
    if (age >= interval) age -= interval;
  }
  return static_cast<double>(v.milli_gpu) * static_cast<double>(age) * 1e-9;
}

bool Eligibility::Build(const framework::PreemptContext& ctx, TimeUs min_runtime) {
  candidates_.clear();
  node_entries_.clear();
  by_node_indexed_ = false;
  shares_ = false;
  ++stamp_;
  const auto& view = ctx.view;
  const auto& running = view.running;
  ledger_ = &view.ledger;
  state_ = &view.state;
  running_ = running;
  lookup_ = view.lookup;
  if (ctx.verdict.code == framework::VerdictCode::kUnresolvable || running.empty()) return false;
  const tenancy::QueueTree& tree = ledger_->tree();
  const int32_t queues = tree.size();
  const int32_t qj = ctx.queue;
  dim_ = JobDimension(ctx.job, qj, *ledger_);
  const bool qj_known = qj >= 0 && qj < queues;
  reclaim_ = qj_known && tree.node(qj).has_quota[dim_] &&
             ledger_->usage(qj, dim_) + JobAmount(ctx.job, dim_, *ledger_) <= ledger_->guarantee(qj, dim_);
  const int32_t pj = ctx.job.priority;

  // A job whose own budget is spent runs only on idle capacity: it evicts nobody.
  const bool budgets = ledger_->has_budgets();
  if (budgets && qj_known && ledger_->SpentBudget(qj, view.now) >= 0) return false;
  j_ancestor_.assign(queues, 0);
  for (int32_t a = qj_known ? qj : -1; a >= 0; a = tree.node(a).parent) j_ancestor_[a] = 1;
  path_of_queue_begin_.assign(queues, -1);
  path_of_queue_len_.assign(queues, 0);
  path_lends_.assign(queues, -1);
  paths_.clear();
  taken_.assign(queues, 0);
  taken_touched_.clear();
  // The budget path of queue q (queues with a quota in dim_ from q up to the
  // closest ancestor shared with qJ), cached; false when q lends nothing.
  auto path_of = [&](int32_t q, int32_t& begin, int16_t& len) {
    if (path_of_queue_begin_[q] < 0) {
      path_of_queue_begin_[q] = static_cast<int32_t>(paths_.size());
      for (int32_t a = q; a >= 0 && !j_ancestor_[a]; a = tree.node(a).parent)
        if (tree.node(a).has_quota[dim_]) paths_.push_back(a);
      path_of_queue_len_[q] = static_cast<int32_t>(paths_.size()) - path_of_queue_begin_[q];
    }
    begin = path_of_queue_begin_[q];
    len = static_cast<int16_t>(path_of_queue_len_[q]);
    if (path_lends_[q] < 0) {
      path_lends_[q] = 1;
      for (int32_t i = begin; i < begin + len; ++i)
        if (ledger_->borrowed(paths_[i], dim_) <= 0) path_lends_[q] = 0;
    }
    return path_lends_[q] == 1;
  };

  const bool all_types = dim_ == ledger_->all_types_dim();
  if (lookup_ != nullptr) cand_of_run_.assign(running.size(), -1);
  for (size_t r = 0; r < running.size(); ++r) {
    // The records further ahead (two cache lines each): the loop is too
    // short for the hardware to stream them in time.
    if (r + 32 < running.size()) {
      const char* ahead = reinterpret_cast<const char*>(&running[r + 32]);
      __builtin_prefetch(ahead);
      __builtin_prefetch(ahead + 64);
    }
    const framework::RunningJob& v = running[r];
    if (ctx.preempted_by.valid() && v.id == ctx.preempted_by) continue;
    if (view.now - v.start_time < min_runtime && !v.best_effort) continue;  // best effort is never shielded
    const int32_t pv = v.priority;
    Candidate c;
    c.run = static_cast<int32_t>(r);
    const bool by_priority = pv < pj;
    if (budgets && v.run_class == framework::RunClass::kOverBudget && v.queue != qj) {
      // Started on idle capacity while its budget was spent: it yields to any other queue's work.
    } else if (v.queue == qj || v.queue < 0 || v.queue >= queues) {
      if (!by_priority) continue;
    } else {
      if (!reclaim_ && !by_priority) continue;
      if (!path_of(v.queue, c.path_begin, c.path_len)) continue;
    }
    c.milli = static_cast<int32_t>(v.milli_gpu);
    if (all_types) c.dim_milli = ledger_->normalized() ? static_cast<int32_t>(v.charge) : c.milli;
    c.cost = LostGpuSeconds(v, view.now);
    // With budgets, best-effort runs (beyond guarantee, over budget) go first.
    if (budgets && v.run_class == framework::RunClass::kGuaranteed) c.cost += kGuaranteedCost;
    shares_ |= v.shares;
    if (lookup_ != nullptr) cand_of_run_[r] = static_cast<int32_t>(candidates_.size());
    candidates_.push_back(c);
  }
  return !candidates_.empty();
}

int32_t Eligibility::DimMilli(const Candidate& c) const {
  if (c.dim_milli < 0) {
    const framework::RunningJob& v = running_[c.run];
    const cluster::Cluster& cluster = state_->cluster();
    int64_t held = 0;
    for (const auto& p : v.placements)
      if (cluster.node(p.alloc.node).gpu_type.value() == dim_) held += p.alloc.total_milli();
    c.dim_milli = static_cast<int32_t>(ledger_->Amount(*v.spec, GpuTypeId(static_cast<int16_t>(dim_)), held));
  }
  return c.dim_milli;
}

const CandidatesByNode& Eligibility::by_node() {
  if (by_node_indexed_) return by_node_;
  by_node_.Reset(*state_);
  for (size_t i = 0; i < candidates_.size(); ++i) {
    // The placements live with each job's record: fetch a few jobs ahead.
    if (i + 8 < candidates_.size()) __builtin_prefetch(running_[candidates_[i + 8].run].placements.data());
    by_node_.Add(static_cast<int32_t>(i), running_[candidates_[i].run].placements);
  }
  by_node_indexed_ = true;
  return by_node_;
}

std::span<const CandidatesByNode::Entry> Eligibility::On(int32_t n) {
  if (by_node_indexed_ || lookup_ == nullptr) return by_node().On(n);
  const auto nodes = static_cast<size_t>(state_->cluster().num_nodes());
  if (node_stamp_.size() != nodes) {
    node_stamp_.assign(nodes, 0);
    node_begin_.assign(nodes, 0);
    node_len_.assign(nodes, 0);
  }
  if (node_stamp_[n] != stamp_) {
    node_stamp_[n] = stamp_;
    node_begin_[n] = static_cast<int32_t>(node_entries_.size());
    for (const TaskKey& k : state_->tasks_on(NodeId(n))) {
      const int32_t slot = lookup_->SlotOf(k.job);
      if (slot < 0 || static_cast<size_t>(slot) >= cand_of_run_.size() || cand_of_run_[slot] < 0) continue;
      const state::Allocation* a = state_->Find(k);
      if (a == nullptr) continue;
      node_entries_.push_back({cand_of_run_[slot], a->milli_per_gpu, a->gpu_mask, a->cpu_milli, a->memory_mib});
    }
    // A candidate's tasks adjacent, candidates in order (as by_node() has them).
    const auto begin = node_entries_.begin() + node_begin_[n];
    std::sort(begin, node_entries_.end(), [](const CandidatesByNode::Entry& a, const CandidatesByNode::Entry& b) {
      return a.cand != b.cand ? a.cand < b.cand : a.gpu_mask < b.gpu_mask;
    });
    node_len_[n] = static_cast<int32_t>(node_entries_.end() - begin);
  }
  return {node_entries_.data() + node_begin_[n], static_cast<size_t>(node_len_[n])};
}

bool Eligibility::CanTake(const Candidate& c) const {
  for (int32_t i = c.path_begin; i < c.path_begin + c.path_len; ++i) {
    const int32_t q = paths_[i];
    if (taken_[q] + DimMilli(c) > ledger_->borrowed(q, dim_)) return false;
  }
  return true;
}

void Eligibility::Take(const Candidate& c, int64_t sign) {
  for (int32_t i = c.path_begin; i < c.path_begin + c.path_len; ++i) {
    const int32_t q = paths_[i];
    if (taken_[q] == 0) taken_touched_.push_back(q);
    taken_[q] += sign * DimMilli(c);
  }
}

void Eligibility::Reset() {
  for (int32_t q : taken_touched_) taken_[q] = 0;
  taken_touched_.clear();
}

void CandidatesByNode::Reset(const state::ClusterState& state) {
  const int32_t nodes = state.cluster().num_nodes();
  begin_.resize(nodes + 1);
  end_.resize(nodes);
  int32_t at = 0;
  for (int32_t n = 0; n < nodes; ++n) {
    begin_[n] = end_[n] = at;
    at += static_cast<int32_t>(state.tasks_on(NodeId(n)).size());
  }
  begin_[nodes] = at;
  entries_.resize(at);
}

std::string Eligibility::Describe(const framework::PreemptContext& ctx) const {
  std::string s = "priority " + std::to_string(ctx.job.priority);
  if (reclaim_) {
    s += ", reclaim for queue '" + ledger_->tree().node(ctx.queue).name + "' (within its " +
         ledger_->DimName(dim_) + " guarantee)";
  }
  return s;
}

}  // namespace berth::plugins::preempt
