// The scheduling loop and the cycle for one job.
#include "berth/scheduler/scheduler.h"

#include <algorithm>
#include <bit>
#include <cassert>

#include "berth/common/bits.h"

namespace berth::scheduler {

namespace {
// A score the class score cache decides: node-local, or a uniform draw.
bool KeptPerClass(const framework::ScorePlugin& p) { return p.NodeLocal() || p.UniformPick(); }
}  // namespace

using framework::CycleContext;
using framework::TaskPlacement;
using framework::TaskRequest;
using framework::Verdict;
using job::JobState;

Scheduler::Scheduler(const cluster::Cluster& cluster, std::unique_ptr<framework::Framework> framework,
                     SchedulerOptions options, const Clock& clock)
    : cluster_(cluster),
      framework_(std::move(framework)),
      options_(std::move(options)),
      clock_(clock),
      rng_(options_.seed),
      state_(cluster),
      ledger_(options_.queues ? *options_.queues : tenancy::QueueTree(static_cast<int32_t>(cluster.gpu_types().size())),
              cluster, options_.usage_half_life, options_.speeds) {
  type_max_.resize(cluster.gpu_types().size());
  type_first_node_.assign(cluster.gpu_types().size(), -1);
  for (int32_t i = 0; i < cluster.num_nodes(); ++i) {
    const auto& node = cluster.node(NodeId(i));
    if (node.gpu_count > 0 && type_first_node_[node.gpu_type.value()] < 0) type_first_node_[node.gpu_type.value()] = i;
  }
  for (const auto& n : cluster.nodes()) {
    TypeMax& m = n.gpu_count > 0 ? type_max_[n.gpu_type.value()] : cpu_node_max_;
    m.gpus = std::max(m.gpus, n.gpu_count);
    m.cpu = std::max(m.cpu, n.cpu_milli);
    m.mem = std::max(m.mem, n.memory_mib);
    if (n.gpu_count > 0) {
      cpu_node_max_.cpu = std::max(cpu_node_max_.cpu, n.cpu_milli);
      cpu_node_max_.mem = std::max(cpu_node_max_.mem, n.memory_mib);
    }
  }
  reject_count_.assign(framework_->filter().size() + 1, 0);
  for (const TypeMax& m : type_max_) type_cpu_max_.push_back(m.cpu);
  bool has_fit = false;
  for (const auto* f : framework_->filter()) {
    if (f->Name() == "fit") {
      has_fit = true;
    } else {
      extra_filters_.push_back(f);
    }
  }
  const bool searchable = !options_.full_scan && has_fit && framework_->candidates().empty();
  const bool one_score =
      searchable && framework_->score().size() == 1 && framework_->score().front().second > 0;
  // A node-local score that bounds nothing (or a uniform draw) keeps its
  // scores per task class; the others search the indexes (and keep scores
  // for large groups). A filter besides fit must pass every node for the
  // task for the cache to decide it (PlaceTask asks).
  use_class_cache_ = one_score && KeptPerClass(*framework_->score().front().first);
  use_index_search_ = one_score && !use_class_cache_;
  // Several score plugins: per task, those neutral for it drop out; when one
  // is left, the task takes that one's fast path.
  reducible_ = searchable && framework_->score().size() > 1;
  if (reducible_) {
    use_index_search_ = true;
    for (const auto& [plugin, weight] : framework_->score()) use_class_cache_ |= weight > 0 && KeptPerClass(*plugin);
  }
  if (use_index_search_) index_search_.Reset(state_, type_cpu_max_);
  // The group cache decides only tasks for which every filter but fit passes
  // every node (PlaceTask asks), as the class cache.
  use_group_cache_ = one_score && use_index_search_;
  const framework::QueueSortPlugin& qs = framework_->queue_sort();
  if (qs.Dynamic() && !options_.full_scan && !options_.full_sort)
    bucketed_ = dynamic_cast<const framework::BucketedOrder*>(&qs);
  within_less_ = [this](int32_t a, int32_t b) { return WithinQueueLess(a, b); };
}

Status Scheduler::ApplyChecked(const state::Event& e) {
  NodeId node;
  if (use_index_search_ || use_group_cache_ || use_class_cache_) {
    if (const auto* p = std::get_if<state::PlaceTask>(&e)) node = p->alloc.node;
    if (const auto* u = std::get_if<state::SetNodeUp>(&e)) node = u->node;
    if (const auto* g = std::get_if<state::SetGpuUp>(&e)) node = g->node;
    if (const auto* r = std::get_if<state::ReleaseTask>(&e))
      if (const state::Allocation* a = state_.Find(r->task)) node = a->node;
  }
  ++epoch_;
  Status s = state_.Apply(e);
  if (s.ok() && use_index_search_ && node.valid()) index_search_.NodeChanged(state_, node);
  if (s.ok() && use_group_cache_ && node.valid()) group_cache_.NodeChanged(node);
  if (s.ok() && use_class_cache_ && node.valid()) class_cache_.NodeChanged(node);
  if (s.ok() && options_.check_indexes) s = state_.CheckIndexes();
  return s;
}

const JobRecord* Scheduler::Find(JobId id) const {
  const int32_t* it = index_of_.Find(id);
  return it == nullptr ? nullptr : &jobs_[*it];
}

framework::QueuedJob Scheduler::Queued(int32_t index) const {
  const JobRecord& r = jobs_[index];
  return {&r.spec, r.seq, r.enqueue_time, r.attained_gpu_seconds, r.queue, r.work_done, r.preemptions};
}

bool Scheduler::QueueLess(int32_t a, int32_t b) const {
  const framework::QueuedJob qa = Queued(a);
  const framework::QueuedJob qb = Queued(b);
  const auto& qs = framework_->queue_sort();
  if (qs.Less(qa, qb)) return true;
  if (qs.Less(qb, qa)) return false;
  return qa.seq < qb.seq;
}

bool Scheduler::WithinQueueLess(int32_t a, int32_t b) const {
  const framework::QueuedJob qa = Queued(a);
  const framework::QueuedJob qb = Queued(b);
  if (bucketed_->WithinLess(qa, qb)) return true;
  if (bucketed_->WithinLess(qb, qa)) return false;
  return qa.seq < qb.seq;
}

framework::SchedulerView Scheduler::View(TimeUs now) const {
  const bool oracle = options_.full_preempt || options_.full_scan;
  lookup_.Bind(this);
  return {state_, ledger_, running_jobs_, now, options_.node_rank, oracle ? 0 : epoch_, oracle ? nullptr : &lookup_};
}

int32_t Scheduler::Lookup::SlotOf(JobId id) const {
  const int32_t* it = s_->index_of_.Find(id);
  if (it == nullptr || static_cast<size_t>(*it) >= s_->running_pos_.size()) return -1;
  return s_->running_pos_[*it];
}

void Scheduler::RunStarted(int32_t index, TimeUs now) {
  ++epoch_;
  JobRecord& rec = jobs_[index];
  ++rec.alloc_version;
  rec.charge = ChargeLedger(rec, +1, now);
  rec.run_class = rec.start_over_budget  ? framework::RunClass::kOverBudget
                  : BeyondGuarantee(rec)   ? framework::RunClass::kBeyondGuarantee
                  : rec.spec.best_effort  ? framework::RunClass::kDeclared
                                           : framework::RunClass::kGuaranteed;
  rec.start_over_budget = false;
  if (rec.run_class != framework::RunClass::kGuaranteed) ++rec.best_effort_starts;
  if (rec.run_class == framework::RunClass::kOverBudget) ++rec.over_budget_starts;
  rec.ref_charge = 0;
  for (const auto& p : rec.placements)
    rec.ref_charge += RefAmount(rec, cluster_.node(p.alloc.node).gpu_type, p.alloc.total_milli());
  framework::RunningJob r;
  r.spec = &rec.spec;
  r.placements = rec.placements;
  r.queue = rec.queue;
  r.seq = rec.seq;
  r.start_time = rec.start_time;
  r.run_start = rec.start_time + rec.startup_delay;
  r.work_done = rec.work_done;
  for (const auto& p : rec.placements) {
    r.milli_gpu += int64_t{PopCount(p.alloc.gpu_mask)} * p.alloc.milli_per_gpu;
    if (p.alloc.gpu_mask != 0 && p.alloc.milli_per_gpu != kMilliPerGpu) r.shares = true;
  }
  r.charge = rec.charge;
  r.preemptions = rec.preemptions;
  r.run_class = rec.run_class;
  r.priority = rec.spec.priority;
  r.checkpoint_interval = rec.spec.checkpoint_interval;
  r.id = rec.spec.id;
  r.best_effort = rec.spec.best_effort;
  r.attained_gpu_seconds = rec.attained_gpu_seconds;
  if (running_pos_.size() < jobs_.size()) running_pos_.resize(jobs_.size(), -1);
  running_pos_[index] = static_cast<int32_t>(running_jobs_.size());
  running_jobs_.push_back(r);
  running_index_.push_back(index);
}

void Scheduler::RunEnded(int32_t index, TimeUs now, bool completed) {
  ++epoch_;
  JobRecord& rec = jobs_[index];
  ++rec.alloc_version;
  const int32_t pos = running_pos_[index];
  assert(pos >= 0);
  rec.attained_gpu_seconds +=
      static_cast<double>(running_jobs_[pos].milli_gpu) / kMilliPerGpu * UsToSeconds(now - rec.start_time);
  rec.attained_charge_seconds += static_cast<double>(rec.charge) / kMilliPerGpu * UsToSeconds(now - rec.start_time);
  rec.attained_ref_seconds += static_cast<double>(rec.ref_charge) / kMilliPerGpu * UsToSeconds(now - rec.start_time);
  ChargeLedger(rec, -1, now);
  rec.charge = 0;
  rec.ref_charge = 0;
  const int32_t last = static_cast<int32_t>(running_jobs_.size()) - 1;
  if (pos != last) {
    running_jobs_[pos] = running_jobs_[last];
    running_index_[pos] = running_index_[last];
    running_pos_[running_index_[pos]] = pos;
  }
  running_jobs_.pop_back();
  running_index_.pop_back();
  running_pos_[index] = -1;
  for (auto* a : framework_->admit()) a->OnRunEnded(rec.spec, rec.start_time, now, completed);
}

void Scheduler::Enqueue(int32_t index) {
  if (bucketed_) {
    // The pass orders pending_ from the bucket queue.
    pending_.push_back(index);
    bucket_queue_.Add(index, bucketed_->Bucket(Queued(index)), jobs_[index].enqueue_time,
                      bucketed_->PromoteAfter() > 0, within_less_);
  } else {
    auto it = std::upper_bound(pending_.begin(), pending_.end(), index,
                               [this](int32_t a, int32_t b) { return QueueLess(a, b); });
    pending_.insert(it, index);
  }
  if (jobs_[index].spec.replica_of.valid()) ++pending_replica_jobs_;
  Demand& d = demand_[index];
  d.full_verdict = false;
  d.capacity_free = -1;
  fresh_.push_back(index);
  if (d.gpu_bound) ++pending_need_[d.whole_gpus]; else ++pending_other_;
  const JobRecord& rec = jobs_[index];
  d.counted_queue = rec.queue;
  d.counted_priority = rec.spec.priority;
  d.counted_replica = rec.spec.service.has_value() || rec.spec.replica_of.valid();
  if (rec.queue >= 0) {
    if (static_cast<size_t>(rec.queue) >= pending_per_queue_.size()) pending_per_queue_.resize(rec.queue + 1, 0);
    ++pending_per_queue_[rec.queue];
  }
  ++pending_priority_[d.counted_priority];
  pending_replicas_ += d.counted_replica;
}

void Scheduler::Dequeued(int32_t index) {
  if (jobs_[index].spec.replica_of.valid()) --pending_replica_jobs_;
  const Demand& d = demand_[index];
  if (d.counted_queue >= 0) --pending_per_queue_[d.counted_queue];
  auto p = pending_priority_.find(d.counted_priority);
  assert(p != pending_priority_.end());
  if (--p->second == 0) pending_priority_.erase(p);
  pending_replicas_ -= d.counted_replica;
  if (!d.gpu_bound) {
    --pending_other_;
    return;
  }
  auto it = pending_need_.find(d.whole_gpus);
  assert(it != pending_need_.end());
  if (--it->second == 0) pending_need_.erase(it);
}

void Scheduler::RemovePending(int32_t index) {
  auto it = std::find(pending_.begin(), pending_.end(), index);
  if (it == pending_.end()) return;
  pending_.erase(it);
  if (bucketed_) bucket_queue_.Remove(index);
  Dequeued(index);
}

Status Scheduler::Submit(job::JobSpec spec) {
  BERTH_RETURN_IF_ERROR(job::ValidateJob(spec));
  if (!spec.id.valid()) spec.id = JobId(submitted_);
  if (index_of_.Contains(spec.id)) return AlreadyExists("job id " + std::to_string(spec.id.value()) + " already exists");
  BERTH_RETURN_IF_ERROR(job::CheckGpuMemory(spec, cluster_));
  job::ResolveGpuTypes(spec, cluster_);
  const int32_t queue = ledger_.QueueFor(spec);  // may add an auto leaf
  ++epoch_;
  if (queue < 0)
    return InvalidArgument("job '" + spec.name + "': tenant '" + spec.tenant + "'" +
                           (spec.queue.empty() ? std::string() : " (queue '" + spec.queue + "')") +
                           " maps to no leaf queue, and the queue tree has no 'default' leaf");
  JobRecord rec;
  rec.spec = std::move(spec);
  rec.seq = next_seq_++;
  rec.enqueue_time = clock_.Now();
  rec.queue = queue;
  rec.demand = ledger_.AddDemand(queue, rec.spec);
  if (rec.spec.elastic()) rec.requested_tasks = rec.spec.groups.front().count;
  ++submitted_;
  int32_t index;
  if (free_slots_.empty()) {
    index = static_cast<int32_t>(jobs_.size());
    jobs_.push_back(std::move(rec));
    demand_.emplace_back();
  } else {
    index = free_slots_.back();
    free_slots_.pop_back();
    jobs_[index] = std::move(rec);
    demand_[index] = Demand{};
  }
  index_of_.Insert(jobs_[index].spec.id, index);
  ComputeDemand(index);
  Enqueue(index);
  return Status::Ok();
}

void Scheduler::ComputeDemand(int32_t index) {
  const job::JobSpec& spec = jobs_[index].spec;
  Demand d;
  d.checkable = true;
  bool share = false;
  for (const auto& g : spec.groups) {
    d.checkable = d.checkable && StaticallyFeasible(TaskRequest::FromGroup(g));
    if (g.is_sharing()) share = true; else d.whole_gpus += int64_t{g.gang_min()} * g.gpus;
  }
  d.whole_only = !share;
  d.too_big = !share && d.whole_gpus > cluster_.total_gpus();
  d.gpu_bound = d.checkable && !share && !d.too_big && d.whole_gpus > 0;
  demand_[index] = d;
}

bool Scheduler::StaticallyFeasible(const TaskRequest& req) const {
  if (req.gpu_types_unknown) return false;
  if (req.gpus == 0) return req.cpu_milli <= cpu_node_max_.cpu && req.memory_mib <= cpu_node_max_.mem;
  for (size_t t = 0; t < type_max_.size(); ++t) {
    if (!req.gpu_types.Accepts(GpuTypeId(static_cast<int16_t>(t)))) continue;
    const TypeMax& m = type_max_[t];
    if (m.gpus >= req.gpus && m.cpu >= req.cpu_milli && m.mem >= req.memory_mib) return true;
  }
  return false;
}

uint64_t Scheduler::DefaultGpus(const TaskRequest& req, NodeId node) const {
  if (req.gpus == 0) return 0;
  if (req.milli_per_gpu == kMilliPerGpu) {
    uint64_t mask = 0, free = state_.full_free_mask(node);
    for (int k = 0; k < req.gpus && free; ++k) {
      uint64_t low = free & (~free + 1);
      mask |= low;
      free &= free - 1;
    }
    return mask;
  }
  // A share: the fitting GPU with the least free milli, lowest index on ties.
  const auto& n = cluster_.node(node);
  const MilliGpu* free = state_.gpu_free_array(node);
  int best = -1;
  for (int g = 0; g < n.gpu_count; ++g)
    if (state_.GpuHolds(node, g, req.milli_per_gpu, req.gpu_memory_mib) && (best < 0 || free[g] < free[best]))
      best = g;
  return best < 0 ? 0 : uint64_t{1} << best;
}

bool Scheduler::MaskHoldsMemory(const TaskRequest& req, NodeId node, uint64_t mask) const {
  if (req.gpu_memory_mib <= 0) return true;
  for (uint64_t m = mask; m; m &= m - 1)
    if (!state_.GpuHolds(node, std::countr_zero(m), req.milli_per_gpu, req.gpu_memory_mib)) return false;
  return true;
}

std::string Scheduler::GpuMemoryWhy(const CycleContext& ctx, const TaskRequest& req) const {
  if (ctx.group < 0 || static_cast<size_t>(ctx.group) >= ctx.job.groups.size()) return "";
  // The types the group accepts before its GPU memory narrowed them.
  const auto types = cluster_.ParseTypeSet(ctx.job.groups[ctx.group].gpu_type_spec);
  if (types.unknown) return "";
  int64_t smaller = 0, taken = 0;
  const int32_t num = cluster_.num_nodes();
  for (int32_t i = 0; i < num; ++i) {
    const NodeId n(i);
    const auto& node = cluster_.node(n);
    if (!state_.up(n) || node.gpu_count < req.gpus || !types.set.Accepts(node.gpu_type)) continue;
    if (req.cpu_milli > state_.free_cpu(n) || req.memory_mib > state_.free_memory(n)) continue;
    int holds = 0;  // GPUs with the share free, memory aside
    for (int g = 0; g < node.gpu_count; ++g) holds += state_.GpuHolds(n, g, req.milli_per_gpu, 0);
    if (holds < req.gpus) continue;
    if (!node.gpu_type.valid() || cluster_.gpu_types()[node.gpu_type.value()].memory_mib < req.gpu_memory_mib)
      ++smaller;
    else if (!state_.GpuMemoryFits(n, req.gpus, req.milli_per_gpu, req.gpu_memory_mib))
      ++taken;
  }
  if (smaller == 0 && taken == 0) return "";
  std::string why = "; GPU memory (" + std::to_string(req.gpu_memory_mib) + " MiB per GPU):";
  if (smaller) why += " " + std::to_string(smaller) + " nodes' GPUs are smaller";
  if (taken) why += std::string(smaller ? "," : "") + " " + std::to_string(taken) + " nodes lack free GPU memory";
  return why;
}

// Runs of at least this many identical tasks build the group score cache (a
// full scan) rather than search the indexes task by task.
constexpr int32_t kGroupCacheMinRepeats = 16;

Scheduler::PlaceOutcome Scheduler::PlaceTask(const CycleContext& ctx, const TaskRequest& req, int32_t repeats) {
  PlaceOutcome out;
  const auto& filters = framework_->filter();
  std::fill(reject_count_.begin(), reject_count_.end(), 0);
  feasible_.clear();
  auto run_filters = [&](NodeId n) {
    if (!state_.up(n)) {
      ++reject_count_.back();
      return;
    }
    for (size_t f = 0; f < filters.size(); ++f) {
      if (!filters[f]->Filter(ctx, req, n)) {
        ++reject_count_[f];
        return;
      }
    }
    feasible_.push_back(n);
  };
  const auto& scorers = framework_->score();
  std::optional<NodeId> found;
  // The caches keep why each node fails, so a task that fits nowhere gets the
  // scan's counts without a scan.
  bool counted = false;
  auto counts_from = [&](std::span<const int32_t> rejects) {
    std::copy(rejects.begin(), rejects.end(), reject_count_.begin());
    counted = true;
  };
  // The one score plugin that decides this task: the profile's only one, or
  // the only one left when those neutral for the task drop out.
  const framework::ScorePlugin* decider = nullptr;
  if (use_class_cache_ || use_index_search_) decider = Decider(ctx, req);
  const bool per_class = decider != nullptr && KeptPerClass(*decider);
  const bool fit_only = (use_class_cache_ || use_group_cache_) && OnlyFitFilters(ctx, req);
  if (per_class && use_class_cache_ && fit_only) {
    found = class_cache_.Find(ctx, req, *decider, filters);
    if (found) {
      ++placement_counts_.class_cache;
      return Chosen(ctx, req, *found);
    }
    counts_from(class_cache_.rejects());
  }
  // A score plugin that bounds its scores promises what the cache needs.
  if (use_group_cache_ && fit_only && !group_cache_.Holds(req) && repeats >= kGroupCacheMinRepeats &&
      scorers.front().first->ScoreBound(ctx, req, framework::NodeTier{}))
    group_cache_.Build(ctx, req, *scorers.front().first, filters);
  if (use_group_cache_ && fit_only && group_cache_.Holds(req)) {
    found = group_cache_.Find(ctx, req, *scorers.front().first, filters);
    if (found) {
      ++placement_counts_.group_cache;
      return Chosen(ctx, req, *found);
    }
    counts_from(group_cache_.rejects());
  }
  if (decider != nullptr && !per_class && use_index_search_ && !counted)
    found = index_search_.Find(ctx, req, *decider, filters, type_cpu_max_);
  if (decider == nullptr && reducible_ && !counted) found = PlaceByType(ctx, req);
  if (found) {
    ++placement_counts_.index_search;
    return Chosen(ctx, req, *found);
  }
  candidates_.clear();
  if (!options_.full_scan && !counted)
    for (auto* c : framework_->candidates()) c->Candidates(ctx, req, candidates_);
  if (!candidates_.empty()) {
    for (NodeId n : candidates_) run_filters(n);
  }
  if (feasible_.empty() && !counted && use_index_search_ && candidates_.empty() && CountRejectsFromIndexes(ctx, req)) {
    ++placement_counts_.counted_from_indexes;
    counted = true;
  }
  if (feasible_.empty() && !counted) {
    ++placement_counts_.full_scan;
    std::fill(reject_count_.begin(), reject_count_.end(), 0);
    const int32_t num = cluster_.num_nodes();
    for (int32_t i = 0; i < num; ++i) run_filters(NodeId(i));
  }
  if (feasible_.empty()) {
    std::string reason = "0/" + std::to_string(cluster_.num_nodes()) + " nodes fit:";
    for (size_t f = 0; f < filters.size(); ++f)
      if (reject_count_[f]) reason += " " + std::to_string(reject_count_[f]) + " " + std::string(filters[f]->FailReason()) + ";";
    if (reject_count_.back()) reason += " " + std::to_string(reject_count_.back()) + " down;";
    reason.pop_back();
    if (req.gpu_memory_mib > 0) reason += GpuMemoryWhy(ctx, req);
    out.verdict = StaticallyFeasible(req) ? Verdict::Unschedulable("filter", reason)
                                          : Verdict::Unresolvable("filter", "no node can ever hold this task: " + reason);
    for (size_t f = 0; f < filters.size(); ++f)
      if (reject_count_[f]) out.verdict.rejects.push_back({std::string(filters[f]->FailReason()), reject_count_[f]});
    if (reject_count_.back()) out.verdict.rejects.push_back({"down", reject_count_.back()});
    return out;
  }
  NodeId best = feasible_[0];
  if (feasible_.size() > 1 && !scorers.empty()) {
    const size_t m = feasible_.size();
    total_score_.assign(m, 0);
    plugin_score_.resize(m);
    for (const auto& [plugin, weight] : scorers) {
      for (size_t i = 0; i < m; ++i) plugin_score_[i] = plugin->Score(ctx, req, feasible_[i]);
      plugin->Normalize(ctx, req, feasible_, plugin_score_);
      for (size_t i = 0; i < m; ++i) total_score_[i] += weight * plugin_score_[i];
    }
    size_t bi = 0;
    for (size_t i = 1; i < m; ++i) {
      if (total_score_[i] > total_score_[bi] ||
          (total_score_[i] == total_score_[bi] && ctx.RankOf(feasible_[i]) < ctx.RankOf(feasible_[bi])))
        bi = i;
    }
    best = feasible_[bi];
  } else if (feasible_.size() > 1) {
    for (NodeId n : feasible_)
      if (ctx.RankOf(n) < ctx.RankOf(best)) best = n;
  }
  return Chosen(ctx, req, best);
}

Scheduler::PlaceOutcome Scheduler::Chosen(const CycleContext& ctx, const TaskRequest& req, NodeId best) const {
  PlaceOutcome out;
  const auto& scorers = framework_->score();
  std::optional<uint64_t> gpus;
  for (const auto& [plugin, weight] : scorers) {
    gpus = plugin->SelectGpus(ctx, req, best);
    if (gpus) break;
  }
  out.ok = true;
  out.alloc.node = best;
  // A plugin's GPUs that lack the task's GPU memory give way to the default
  // choice, which respects it (the fit filter passed the node, so one exists).
  if (gpus && !MaskHoldsMemory(req, best, *gpus)) gpus.reset();
  out.alloc.gpu_mask = gpus ? *gpus : DefaultGpus(req, best);
  out.alloc.milli_per_gpu = req.gpus > 0 ? req.milli_per_gpu : 0;
  out.alloc.gpu_memory_mib = req.gpus > 0 ? req.gpu_memory_mib : 0;
  out.alloc.cpu_milli = req.cpu_milli;
  out.alloc.memory_mib = req.memory_mib;
  return out;
}

void Scheduler::Rollback(JobRecord& rec) {
  for (auto it = rec.placements.rbegin(); it != rec.placements.rend(); ++it) {
    CycleContext ctx{state_, rec.spec, it->task.index, 0, rng_, clock_.Now(), options_.node_rank, &ledger_, rec.queue};
    for (auto* r : framework_->reserve()) r->Unreserve(ctx, it->alloc);
    Status s = ApplyChecked(state::ReleaseTask{it->task});
    assert(s.ok());
    (void)s;
  }
  rec.placements.clear();
}

Verdict Scheduler::TryPlace(JobRecord& rec) {
  const TimeUs now = clock_.Now();
  ++rec.attempts;
  for (auto* a : framework_->admit()) {
    Verdict v = a->Admit(rec.spec, state_, now);
    if (!v.ok()) return v;
  }
  std::vector<int32_t> placed_per_group(rec.spec.groups.size(), 0);
  // Records a tentatively applied task and runs the reserve plugins.
  auto reserve = [&](const CycleContext& ctx, TaskKey key, const state::Allocation& alloc) -> Verdict {
    Status s = ApplyChecked(state::PlaceTask{key, alloc});
    if (!s.ok()) return Verdict{framework::VerdictCode::kError, "state", s.message(), {}};
    rec.placements.push_back({key, alloc});
    for (auto* r : framework_->reserve()) {
      Verdict v = r->Reserve(ctx, alloc);
      if (!v.ok()) return v;
    }
    ++placed_per_group[ctx.group];
    return Verdict::Success();
  };
  bool planned = false;
  for (auto* p : framework_->plan()) {
    CycleContext ctx{state_, rec.spec, 0, 0, rng_, now, options_.node_rank, &ledger_, rec.queue};
    framework::PlanOutcome o = p->Plan(ctx);
    if (o.kind == framework::PlanOutcome::Kind::kNoOpinion) continue;
    if (o.kind == framework::PlanOutcome::Kind::kRejected) return o.verdict;
    for (size_t i = 0; i < o.allocs.size(); ++i) {
      const int32_t t = o.task_index[i];
      CycleContext tctx{state_, rec.spec, t, rec.spec.TaskPosition(t).first, rng_, now, options_.node_rank, &ledger_, rec.queue};
      Verdict v = reserve(tctx, TaskKey{rec.spec.id, t}, o.allocs[i]);
      if (!v.ok()) {
        Rollback(rec);
        if (v.code == framework::VerdictCode::kError) v.reason = std::string(p->Name()) + " plan: " + v.reason;
        return v;
      }
    }
    planned = true;
    break;
  }
  int32_t task_index = 0;
  for (size_t g = 0; g < rec.spec.groups.size() && !planned; ++g) {
    const auto& group = rec.spec.groups[g];
    const TaskRequest req = TaskRequest::FromGroup(group);
    for (int32_t k = 0; k < group.count; ++k, ++task_index) {
      CycleContext ctx{state_, rec.spec, task_index, static_cast<int32_t>(g), rng_, now, options_.node_rank, &ledger_, rec.queue};
      PlaceOutcome o = PlaceTask(ctx, req, group.count - k);
      if (!o.ok) {
        if (placed_per_group[g] >= group.gang_min()) {
          task_index += group.count - k;
          break;  // elastic group: enough members placed
        }
        Rollback(rec);
        o.verdict.reason = "task " + std::to_string(task_index) + " of group '" + group.name + "': " + o.verdict.reason;
        return o.verdict;
      }
      Verdict v = reserve(ctx, TaskKey{rec.spec.id, task_index}, o.alloc);
      if (!v.ok()) {
        Rollback(rec);
        return v;
      }
    }
  }
  for (auto* p : framework_->permit()) {
    Verdict v = p->Permit(rec.spec, placed_per_group);
    if (!v.ok()) {
      Rollback(rec);
      return v;
    }
  }
  for (auto* b : framework_->bind()) {
    Status s = b->Bind(rec.spec, rec.placements);
    if (!s.ok()) {
      Rollback(rec);
      return Verdict{framework::VerdictCode::kError, std::string(b->Name()), s.message(), {}};
    }
  }
  return Verdict::Success();
}

std::vector<JobId> Scheduler::Schedule(const std::function<bool()>& out_of_time) {
  std::vector<JobId> started;
  preempted_.clear();
  const int32_t resume = resume_index_;
  resume_index_ = -1;
  visited_.clear();
  if (pending_.empty()) {
    fresh_.clear();
    GrowShrunk();
    return started;
  }
  const TimeUs now = clock_.Now();
  ledger_.Advance(now);
  framework::QueueSortPlugin& queue_sort = framework_->queue_sort();
  const bool dynamic = queue_sort.Dynamic();
  if (dynamic) queue_sort.Prepare(ledger_, now);
  const bool preempting = !framework_->post_filter().empty();
  // The FGD protocol tries every job in full; with preemption, a job short of
  // free GPUs may still start by evicting others.
  const bool fast = !options_.drop_unschedulable;
  const bool stop_when_full = fast && !preempting;
  // With preemption, a pass stops the same way when the post-filters promise
  // no plan for any pending job (NoPlanForAny; asked only once nothing fits,
  // and again only after a change). Without budgets: a stopped pass does not
  // note the queues whose spent budget stopped a job.
  const bool stop_when_hopeless = fast && preempting && !ledger_.has_budgets();
  no_plan_epoch_ = 0;
  bucket_count_valid_ = false;
  ++pass_;
  if (resume < 0) budget_blocked_.clear();
  const bool hol = framework_->profile().head_of_line_blocking;
  const auto& admits = framework_->admit();
  if (!admits.empty()) {
    const framework::SchedulerView view = View(now);
    for (auto* a : admits) a->BeginPass(view);
  }
  auto blocked = [&](JobRecord& rec) {
    if (admits.empty()) return;
    const framework::SchedulerView view = View(now);
    for (auto* a : admits) a->OnBlocked(rec.spec, rec.last_verdict, view);
  };
  std::vector<int32_t> done;
  std::vector<size_t> done_at;  // their positions in pending_ (ascending: pending_ does not change in the pass)
  // Nothing pending can start: every job needs more whole GPUs than are free.
  auto nothing_fits = [&] {
    return (stop_when_full || stop_when_hopeless) && CapacityBlocksAll() &&
           (stop_when_full || (!AdmitsObserveBlocked() && NoPlanForAny(now)));
  };
  // A dynamic order is made now, unless the pass stops before its first job
  // without looking at the order (not under strict FIFO, which names the
  // head): then a pass over a million pending jobs costs what one over a
  // thousand does. The next pass orders them again.
  const bool stops_at_once = !hol && nothing_fits();
  bool by_queue = false;  // pending_ is in runs of one leaf queue each (bucket_queue_.segments())
  if (dynamic && !stops_at_once) {
    if (bucketed_ && bucket_queue_.Order(*bucketed_, now, within_less_, pending_)) {
      by_queue = bucketed_->BucketIsQueue();
    } else {
      std::sort(pending_.begin(), pending_.end(), [this](int32_t a, int32_t b) { return QueueLess(a, b); });
    }
    assert(!bucketed_ || bucket_queue_.size() == pending_.size());
  }
  // While nothing fits the free GPUs but some queue may reclaim (so the pass
  // goes on), the run of a queue whose jobs can get no plan is passed over
  // whole: each of its jobs would get the capacity verdict and nothing else.
  // Its jobs queued since the last pass get that verdict; the others keep
  // theirs, as in a pass stopped early.
  const bool pass_over_queues = by_queue && stop_when_hopeless && !hol && !options_.full_pass && !options_.full_scan;
  const auto& segments = bucket_queue_.segments();
  size_t segment = 0;
  bool passed_over = false;  // some job was passed over (noted at the end: jobs reached later keep their marks)
  // (Not with budgets: a job a spent budget holds back is noted for the
  // budget's renewal and its figures, whether or not GPUs are free.)
  const bool pass_over_short =
      stop_when_full && !hol && !options_.full_pass && !options_.full_scan && !ledger_.has_budgets();
  // pending_ does not change during the pass: placed and failed jobs leave it
  // at the end, and jobs evicted for others rejoin it then.
  // A pass split by its time budget continues where it stopped.
  size_t first = 0;
  if (resume >= 0 && !stops_at_once) {
    auto at = std::find(pending_.begin(), pending_.end(), resume);
    if (at != pending_.end()) first = static_cast<size_t>(at - pending_.begin());
  }
  for (size_t pos = first; pos < pending_.size(); ++pos) {
    const int32_t index = pending_[pos];
    if (out_of_time && pos > first && out_of_time()) {
      resume_index_ = index;
      break;
    }
    // Nothing pending can start: the jobs a full pass would reach first get
    // their capacity verdicts (the head under strict FIFO, else those queued
    // since the last pass); the others keep theirs.
    if ((pos == first && stops_at_once) || nothing_fits()) {
      if (hol) {
        CapacityShort(index);
        visited_.push_back(jobs_[index].spec.id);
      } else {
        for (int32_t f : fresh_)
          if (demand_[f].seen_pass != pass_ && jobs_[f].state == JobState::kPending) {
            CapacityShort(f);
            visited_.push_back(jobs_[f].spec.id);
          }
      }
      if (!stop_when_full) hopeless_stop_pass_ = pass_;
      break;
    }
    if (pass_over_queues && CapacityBlocksAll() && !AdmitsObserveBlocked()) {
      while (segment < segments.size() && segments[segment].end <= pos) ++segment;
      if (segment < segments.size() && segments[segment].bucket >= 0 &&
          NoPlanForQueue(segments[segment].bucket, now)) {
        const int32_t queue = segments[segment].bucket;
        for (int32_t f : fresh_)
          if (jobs_[f].queue == queue && demand_[f].seen_pass != pass_ && jobs_[f].state == JobState::kPending) {
            CapacityShort(f);
            visited_.push_back(jobs_[f].spec.id);
          }
        passed_over = true;
        ++queue_runs_passed_over_;
        pos = segments[segment].end - 1;
        continue;
      }
    }
    // A pass of a preempting profile that stopped early since this job was
    // last reached would have given it a capacity verdict (every pending job
    // needed more GPUs than were free): its verdict is no longer one of a
    // full attempt, as if that pass had reached it.
    // Without preemption, a job that needs more whole GPUs than are free and
    // whose verdict already names these free GPUs would get that same
    // verdict again and nothing else: it is passed over without reading its
    // record (a long queue of jobs waiting for large gangs costs a pass
    // little more than its length in these checks).
    if (pass_over_short) {
      const Demand& d = demand_[index];
      const int64_t free = state_.free_full_gpus_total();
      if (d.gpu_bound && d.capacity_free == free && d.whole_gpus > free && !AdmitsObserveBlocked()) continue;
    }
    if (demand_[index].seen_pass < hopeless_stop_pass_) demand_[index].full_verdict = false;
    demand_[index].seen_pass = pass_;
    demand_[index].capacity_free = -1;
    JobRecord& rec = jobs_[index];
    visited_.push_back(rec.spec.id);
    Verdict v;
    // A spent budget: the job waits, or starts only on idle capacity (no preemption).
    const int32_t spent = ledger_.SpentBudget(rec.queue, now);
    const bool idle_only = spent >= 0 && ledger_.budgets().spec(spent)->when_spent == tenancy::WhenSpent::kIdle;
    if (spent >= 0 && std::find(budget_blocked_.begin(), budget_blocked_.end(), spent) == budget_blocked_.end())
      budget_blocked_.push_back(spent);
    rec.start_over_budget = idle_only;
    if (spent >= 0 && !idle_only) {
      v = Verdict::Unschedulable("budget", ledger_.BudgetWhy(spent, now));
      rec.waited_for_budget = true;
    } else if (demand_[index].too_big) {
      v = Verdict::Unresolvable("capacity", "needs " + std::to_string(demand_[index].whole_gpus) +
                                                " GPUs; the cluster has " + std::to_string(cluster_.total_gpus()));
    } else if (fast && CapacityShort(index)) {
      if (!preempting || idle_only || NoPlanForAny(now) || NoPlanForJob(index, now)) {
        if (idle_only) {
          demand_[index].capacity_free = -1;
          rec.last_verdict = Verdict::Unschedulable(
              "budget", ledger_.BudgetWhy(spent, now) + ", and " + std::to_string(demand_[index].whole_gpus) +
                            " GPUs are not free (" + std::to_string(state_.free_full_gpus_total()) + " free)");
        }
        blocked(rec);
        if (hol) break;
        continue;
      }
      // The job keeps this verdict if no plan is found (TryPreempt amends it).
      demand_[index].capacity_free = -1;
      v = TryPreempt(index, std::move(rec.last_verdict), now);
    } else {
      v = TryPlace(rec);
      demand_[index].full_verdict = true;
      if (!v.ok() && preempting && !idle_only && v.code == framework::VerdictCode::kUnschedulable &&
          !NoPlanForAny(now) && !NoPlanForJob(index, now))
        v = TryPreempt(index, std::move(v), now);
      if (!v.ok() && idle_only) v.reason = ledger_.BudgetWhy(spent, now) + "; " + v.reason;
    }
    if (v.ok()) {
      bucket_count_valid_ = false;
      (void)job::CheckTransition(rec.state, JobState::kAdmitted);
      rec.state = JobState::kRunning;
      rec.start_time = now;
      if (rec.first_start_time < 0) rec.first_start_time = now;
      rec.last_verdict = v;
      ++running_;
      RunStarted(index, now);
      for (auto* a : admits) a->OnStart(rec.spec);
      log_.Placed(now, cluster_, rec.spec.id, rec.placements);
      started.push_back(rec.spec.id);
      done.push_back(index);
      done_at.push_back(pos);
      continue;
    }
    rec.last_verdict = std::move(v);
    if (options_.drop_unschedulable || rec.last_verdict.code == framework::VerdictCode::kUnresolvable) {
      rec.state = JobState::kFailed;
      rec.finish_time = now;
      ledger_.RemoveDemand(rec.queue, rec.demand);
      rec.demand = {};
      log_.Failed(now, rec.spec.id, rec.last_verdict);
      done.push_back(index);
      done_at.push_back(pos);
      continue;
    }
    blocked(rec);
    if (hol) break;
  }
  if (passed_over) hopeless_stop_pass_ = pass_;
  fresh_.clear();
  if (!done.empty()) {
    for (int32_t i : done) Dequeued(i);
    if (bucketed_) bucket_queue_.RemoveAll(done);
    // Close the gaps: the jobs between two removed ones move down in blocks.
    for (size_t k = 0; k < done_at.size(); ++k) assert(pending_[done_at[k]] == done[k]);
    auto out = pending_.begin() + static_cast<std::ptrdiff_t>(done_at.front());
    for (size_t k = 0; k < done_at.size(); ++k) {
      const auto from = pending_.begin() + static_cast<std::ptrdiff_t>(done_at[k] + 1);
      const auto to = k + 1 < done_at.size() ? pending_.begin() + static_cast<std::ptrdiff_t>(done_at[k + 1]) : pending_.end();
      out = std::move(from, to, out);
    }
    pending_.erase(out, pending_.end());
  }
  for (int32_t i : requeue_after_pass_) Enqueue(i);
  requeue_after_pass_.clear();
  GrowShrunk();
  return started;
}

Status Scheduler::Finish(JobId id, JobState final_state) {
  const int32_t* it = index_of_.Find(id);
  if (it == nullptr) return NotFound("no job " + std::to_string(id.value()));
  const int32_t index = *it;
  JobRecord& rec = jobs_[index];
  if (!job::IsTerminal(final_state)) return InvalidArgument("Finish needs a terminal state");
  if (rec.state == JobState::kPending && final_state != JobState::kSucceeded) {
    RemovePending(index);
  } else {
    BERTH_RETURN_IF_ERROR(job::CheckTransition(rec.state, final_state));
  }
  const TimeUs now = clock_.Now();
  if (rec.state == JobState::kRunning) {
    for (auto* a : framework_->admit()) a->OnFinish(rec.spec);
    RunEnded(index, now, final_state == JobState::kSucceeded);
    for (const auto& p : rec.placements) BERTH_RETURN_IF_ERROR(ApplyChecked(state::ReleaseTask{p.task}));
    rec.placements.clear();
    --running_;
  }
  rec.state = final_state;
  rec.finish_time = now;
  ledger_.RemoveDemand(rec.queue, rec.demand);
  rec.demand = {};
  log_.Finished(rec.finish_time, id, job::JobStateName(final_state));
  return Status::Ok();
}

Status Scheduler::Forget(JobId id) {
  const int32_t* it = index_of_.Find(id);
  if (it == nullptr) return NotFound("no job " + std::to_string(id.value()));
  const int32_t index = *it;
  if (!job::IsTerminal(jobs_[index].state))
    return FailedPrecondition("job " + std::to_string(id.value()) + " is " + job::JobStateName(jobs_[index].state) +
                              ": only a finished job can be forgotten");
  index_of_.Erase(id);
  std::erase(fresh_, index);
  if (resume_index_ == index) resume_index_ = -1;
  jobs_[index] = JobRecord{};  // frees its spec, placements and verdict
  free_slots_.push_back(index);
  return Status::Ok();
}

}  // namespace berth::scheduler
