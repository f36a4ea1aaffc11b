// Candidates for eviction (see eligibility.h).
#include "berth/plugins/preempt/eligibility.h"

#include <algorithm>
#include <bit>

namespace berth::plugins::preempt {

int32_t JobDimension(const job::JobSpec& job, int32_t queue, const tenancy::Ledger& ledger) {
  const int32_t all = ledger.all_types_dim();
  uint64_t type_bits = 0;
  for (const auto& g : job.groups) {
    if (g.gpus == 0) continue;
    const uint64_t bits = g.gpu_types.bits();
    if (std::popcount(bits) != 1 || (type_bits != 0 && bits != type_bits)) return all;
    type_bits = bits;
  }
  if (type_bits == 0 || queue < 0 || queue >= ledger.tree().size()) return all;
  const int32_t t = std::countr_zero(type_bits);
  const auto& node = ledger.tree().node(queue);
  return t < static_cast<int32_t>(node.has_quota.size()) && node.has_quota[t] ? t : all;
}

int64_t JobMilli(const job::JobSpec& job) {
  int64_t milli = 0;
  for (const auto& g : job.groups) milli += int64_t{g.gang_min()} * g.gpus * g.milli_per_gpu;
  return milli;
}

bool Eligibility::Build(const framework::PreemptContext& ctx, TimeUs min_runtime) {
  candidates_.clear();
  const auto& view = ctx.view;
  const auto& running = view.running;
  of_run_.assign(running.size(), -1);
  ledger_ = &view.ledger;
  if (ctx.verdict.code == framework::VerdictCode::kUnresolvable || running.empty()) return false;
  const tenancy::QueueTree& tree = ledger_->tree();
  const int32_t queues = tree.size();
  const int32_t qj = ctx.queue;
  dim_ = JobDimension(ctx.job, qj, *ledger_);
  const bool qj_known = qj >= 0 && qj < queues;
  reclaim_ = qj_known && tree.node(qj).has_quota[dim_] &&
             ledger_->usage(qj, dim_) + JobMilli(ctx.job) <= ledger_->guarantee(qj, dim_);
  const int32_t pj = ctx.job.priority;

  j_ancestor_.assign(queues, 0);
  for (int32_t a = qj_known ? qj : -1; a >= 0; a = tree.node(a).parent) j_ancestor_[a] = 1;
  path_of_queue_begin_.assign(queues, -1);
  path_of_queue_len_.assign(queues, 0);
  paths_.clear();
  taken_.assign(queues, 0);
  taken_touched_.clear();
  // The budget path of queue q (queues with a quota in dim_ from q up to the
  // closest ancestor shared with qJ), cached; false when q lends nothing.
  auto path_of = [&](int32_t q, int32_t& begin, int32_t& len) {
    if (path_of_queue_begin_[q] < 0) {
      path_of_queue_begin_[q] = static_cast<int32_t>(paths_.size());
      for (int32_t a = q; a >= 0 && !j_ancestor_[a]; a = tree.node(a).parent)
        if (tree.node(a).has_quota[dim_]) paths_.push_back(a);
      path_of_queue_len_[q] = static_cast<int32_t>(paths_.size()) - path_of_queue_begin_[q];
    }
    begin = path_of_queue_begin_[q];
    len = path_of_queue_len_[q];
    for (int32_t i = begin; i < begin + len; ++i)
      if (ledger_->borrowed(paths_[i], dim_) <= 0) return false;
    return true;
  };

  const cluster::Cluster& cluster = view.state.cluster();
  const bool all_types = dim_ == ledger_->all_types_dim();
  for (size_t r = 0; r < running.size(); ++r) {
    const framework::RunningJob& v = running[r];
    if (ctx.preempted_by.valid() && v.spec->id == ctx.preempted_by) continue;
    if (v.spec->id == ctx.job.id) continue;
    if (view.now - v.start_time < min_runtime) continue;
    const int32_t pv = v.spec->priority;
    Candidate c;
    c.run = static_cast<int32_t>(r);
    c.by_priority = pv < pj;
    if (v.queue == qj || v.queue < 0 || v.queue >= queues) {
      if (!c.by_priority) continue;
    } else {
      if (!reclaim_ && !c.by_priority) continue;
      if (!path_of(v.queue, c.path_begin, c.path_len)) continue;
    }
    if (all_types) {
      c.dim_milli = v.milli_gpu;
    } else {
      for (const auto& p : v.placements)
        if (cluster.node(p.alloc.node).gpu_type.value() == dim_) c.dim_milli += p.alloc.total_milli();
    }
    c.cost = v.LostGpuSeconds(view.now);
    of_run_[r] = static_cast<int32_t>(candidates_.size());
    candidates_.push_back(c);
  }
  return !candidates_.empty();
}

bool Eligibility::CanTake(const Candidate& c) const {
  for (int32_t i = c.path_begin; i < c.path_begin + c.path_len; ++i) {
    const int32_t q = paths_[i];
    if (taken_[q] + c.dim_milli > ledger_->borrowed(q, dim_)) return false;
  }
  return true;
}

void Eligibility::Take(const Candidate& c, int64_t sign) {
  for (int32_t i = c.path_begin; i < c.path_begin + c.path_len; ++i) {
    const int32_t q = paths_[i];
    if (taken_[q] == 0) taken_touched_.push_back(q);
    taken_[q] += sign * c.dim_milli;
  }
}

void Eligibility::Reset() {
  for (int32_t q : taken_touched_) taken_[q] = 0;
  taken_touched_.clear();
}

void CandidatesByNode::Build(std::span<const framework::RunningJob> running, std::span<const Candidate> cands,
                             int32_t nodes) {
  begin_.assign(nodes + 1, 0);
  for (const Candidate& c : cands)
    for (const auto& p : running[c.run].placements) ++begin_[p.alloc.node.value() + 1];
  for (int32_t n = 0; n < nodes; ++n) begin_[n + 1] += begin_[n];
  entries_.resize(begin_[nodes]);
  fill_.assign(begin_.begin(), begin_.end() - 1);
  for (int32_t c = 0; c < static_cast<int32_t>(cands.size()); ++c) {
    const auto& placements = running[cands[c].run].placements;
    for (int32_t i = 0; i < static_cast<int32_t>(placements.size()); ++i)
      entries_[fill_[placements[i].alloc.node.value()]++] = {c, i};
  }
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
