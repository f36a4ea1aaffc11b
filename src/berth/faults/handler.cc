// The fault handler (see handler.h).
#include "berth/faults/handler.h"

#include <algorithm>
#include <bit>

#include "berth/common/bits.h"
#include "berth/faults/spares.h"

namespace berth::faults {

using scheduler::Scheduler;

std::optional<RepairMode> ParseRepairMode(std::string_view s) {
  if (s == "requeue") return RepairMode::kRequeue;
  if (s == "in-place") return RepairMode::kInPlace;
  return std::nullopt;
}
const char* RepairModeName(RepairMode m) { return m == RepairMode::kInPlace ? "in-place" : "requeue"; }
const char* SpareModeName(SpareMode m) {
  return m == SpareMode::kLeaf ? "leaf" : m == SpareMode::kSpine ? "spine" : "none";
}

StatusOr<SpareSetting> ParseSpareSetting(std::string_view s) {
  SpareSetting out;
  const size_t colon = s.find(':');
  const std::string_view mode = s.substr(0, colon);
  if (mode == "none") out.mode = SpareMode::kNone;
  else if (mode == "leaf") out.mode = SpareMode::kLeaf;
  else if (mode == "spine") out.mode = SpareMode::kSpine;
  else return InvalidArgument("--spares must be none, leaf, spine, leaf:N or spine:N, not '" + std::string(s) + "'");
  if (colon != std::string_view::npos) {
    const std::string n(s.substr(colon + 1));
    char* end = nullptr;
    const long v = std::strtol(n.c_str(), &end, 10);
    if (n.empty() || *end != '\0' || v < 0 || v > 1 << 20 || out.mode == SpareMode::kNone)
      return InvalidArgument("--spares: '" + std::string(s) + "': N must be a whole number >= 0 after leaf: or spine:");
    out.per_domain = static_cast<int32_t>(v);
  }
  return out;
}

Status FaultOptions::Validate() const {
  if (restart_cost < 0 || repair_cost < 0) return InvalidArgument("--restart-cost and --repair-cost must not be negative");
  if (quarantine_after < 1) return InvalidArgument("quarantine_after must be at least 1");
  if (quarantine_window < 0 || quarantine_base < 0) return InvalidArgument("quarantine times must not be negative");
  return Status::Ok();
}

FaultHandler::FaultHandler(const cluster::Cluster& cluster, FaultOptions options, std::vector<int32_t> part_of_node)
    : cluster_(cluster), options_(std::move(options)), part_of_node_(std::move(part_of_node)) {
  const auto n = static_cast<size_t>(cluster.num_nodes());
  holds_.assign(n, 0);
  gpu_holds_.assign(static_cast<size_t>(cluster.total_gpus()), 0);
  spare_.assign(n, 0);
  spare_count_.assign(cluster.domains().size(), 0);
  spare_target_.assign(cluster.domains().size(), 0);
  recent_faults_.resize(n);
  quarantine_count_.assign(n, 0);
  held_by_quarantine_.assign(n, 0);
}

int32_t FaultHandler::spare_target(DomainId d) const { return spare_target_[d.value()]; }

DomainId FaultHandler::SpareDomainOf(NodeId n) const {
  const cluster::Level l = options_.spares.mode == SpareMode::kSpine ? cluster::Level::kSpine : cluster::Level::kLeaf;
  return cluster_.node(n).domain[static_cast<int>(l)];
}

Status FaultHandler::Init(std::span<Scheduler* const> scheds) {
  learners_.assign(scheds.size(), {});
  for (size_t k = 0; k < scheds.size(); ++k)
    for (framework::PlanPlugin* p : scheds[k]->framework().plan())
      if (auto* l = dynamic_cast<plugins::FailureAware*>(p)) learners_[k].push_back(l);
  if (options_.spares.mode == SpareMode::kNone) return Status::Ok();
  const cluster::Level level =
      options_.spares.mode == SpareMode::kSpine ? cluster::Level::kSpine : cluster::Level::kLeaf;
  const NodeFaultRate rate = NodeLevelRate(options_.rates, std::max(1, cluster_.max_gpus_per_node()));
  for (DomainId d : cluster_.domains_at(level)) {
    const cluster::Domain& dom = cluster_.domain(d);
    const int32_t m = dom.end.value() - dom.begin.value();
    int32_t n = options_.spares.per_domain;
    if (n < 0) {
      const TimeUs restart =
          options_.largest_gang_restart_cost >= 0 ? options_.largest_gang_restart_cost : options_.restart_cost;
      n = DomainSpareCount(m, dom.gpus, rate, std::min<int64_t>(options_.largest_gang_gpus, cluster_.total_gpus()),
                           restart, options_.repair_cost);
    }
    n = std::min(n, m - 1);
    spare_target_[d.value()] = n;
    for (int32_t k = dom.end.value() - 1; k >= dom.begin.value() && spare_count_[d.value()] < n; --k) {
      const NodeId node(k);
      if (cluster_.node(node).gpu_count == 0) continue;
      if (!scheds[PartOf(node)]->state().tasks_on(node).empty()) continue;
      SetSpare(node, true);
      ++counters_.spare_nodes;
      BERTH_RETURN_IF_ERROR(Hold(node, scheds));
    }
  }
  return Status::Ok();
}

int32_t FaultHandler::Add(Fault f) {
  faults_.push_back(std::move(f));
  return static_cast<int32_t>(faults_.size()) - 1;
}

Status FaultHandler::Hold(NodeId n, std::span<Scheduler* const> scheds) {
  if (holds_[n.value()]++ == 0) return scheds[PartOf(n)]->SetNodeUp(n, false);
  return Status::Ok();
}

Status FaultHandler::Unhold(NodeId n, std::span<Scheduler* const> scheds, bool to_work) {
  if (--holds_[n.value()] > 0) return Status::Ok();
  BERTH_RETURN_IF_ERROR(scheds[PartOf(n)]->SetNodeUp(n, true));
  if (!to_work) MaybeMakeSpare(n, scheds);
  return Status::Ok();
}

void FaultHandler::MaybeMakeSpare(NodeId n, std::span<Scheduler* const> scheds) {
  if (options_.spares.mode == SpareMode::kNone || spare_[n.value()]) return;
  const DomainId d = SpareDomainOf(n);
  if (spare_count_[d.value()] >= spare_target_[d.value()]) return;
  const state::ClusterState& st = scheds[PartOf(n)]->state();
  if (!st.tasks_on(n).empty() || st.gpu_down_mask(n) != 0) return;
  SetSpare(n, true);
  (void)Hold(n, scheds);
}

void FaultHandler::SetSpare(NodeId n, bool on) {
  if (spare_[n.value()] == static_cast<uint8_t>(on)) return;
  spare_[n.value()] = on;
  spare_count_[SpareDomainOf(n).value()] += on ? 1 : -1;
  spare_gpus_ += on ? cluster_.node(n).gpu_count : -cluster_.node(n).gpu_count;
}

std::pair<int32_t, int32_t> FaultHandler::NodeRange(const Fault& f) const {
  if (f.node.valid()) return {f.node.value(), f.node.value() + 1};
  const cluster::Domain& d = cluster_.domain(f.domain);
  return {d.begin.value(), d.end.value()};
}

bool FaultHandler::Excluded(const Fault& f, NodeId n) const {
  if (f.kind == FaultKind::kGpu || f.kind == FaultKind::kTask) return false;
  const auto [b, e] = NodeRange(f);
  return n.value() >= b && n.value() < e;
}

std::optional<state::Allocation> FitTaskOn(const cluster::Cluster& cluster, const state::ClusterState& st,
                                           const state::Allocation& like, NodeId n, uint64_t forbidden) {
  const cluster::Node& node = cluster.node(n);
  if (node.gpu_type != cluster.node(like.node).gpu_type) return std::nullopt;
  if (st.free_cpu(n) < like.cpu_milli || st.free_memory(n) < like.memory_mib) return std::nullopt;
  const int need = like.gpu_count();
  state::Allocation a = like;
  a.node = n;
  a.gpu_mask = 0;
  if (need == 0) return a;
  int got = 0;
  if (like.milli_per_gpu >= kMilliPerGpu) {
    for (uint64_t m = st.full_free_mask(n) & ~forbidden; m && got < need; m &= m - 1, ++got)
      a.gpu_mask |= uint64_t{1} << std::countr_zero(m);
  } else {
    for (int g = 0; g < node.gpu_count && got < need; ++g) {
      if ((forbidden >> g) & 1 || !st.GpuHolds(n, g, like.milli_per_gpu, like.gpu_memory_mib)) continue;
      a.gpu_mask |= uint64_t{1} << g;
      ++got;
    }
  }
  if (got < need) return std::nullopt;
  return a;
}

std::optional<state::Allocation> FaultHandler::FitOn(const state::ClusterState& st, const state::Allocation& like,
                                                     NodeId n, uint64_t forbidden) const {
  return FitTaskOn(cluster_, st, like, n, forbidden);
}

std::optional<state::Allocation> FaultHandler::FindReplacement(const Scheduler& s, const scheduler::JobRecord& rec,
                                                               const framework::TaskPlacement& task, const Fault& f,
                                                               std::optional<cluster::Level> spanned,
                                                               std::span<Scheduler* const> scheds) {
  const state::ClusterState& st = s.state();
  const NodeId home = task.alloc.node;
  const int32_t part = PartOf(home);
  // The same node's other GPUs, when only a GPU failed.
  if (f.kind == FaultKind::kGpu && st.up(home)) {
    const uint64_t forbidden = task.alloc.gpu_mask | (uint64_t{1} << f.gpu);
    if (auto a = FitOn(st, task.alloc, home, forbidden)) return a;
  }
  const int widest = spanned ? static_cast<int>(*spanned) : cluster::kNumLevels - 1;
  const bool nvlink_bound = !cluster_.single_node_nvlink() &&
                            cluster_.domain(cluster_.node(home).domain[cluster::kNumLevels - 1]).end.value() -
                                    cluster_.domain(cluster_.node(home).domain[cluster::kNumLevels - 1]).begin.value() >
                                1;
  const int first = nvlink_bound ? cluster::kNumLevels - 1 : static_cast<int>(cluster::Level::kLeaf);
  const int last = nvlink_bound ? cluster::kNumLevels - 1 : widest;
  for (int l = first; l >= last && l >= 0; --l) {
    const cluster::Domain& dom = cluster_.domain(cluster_.node(home).domain[l]);
    // A free spare of this domain first (the lowest id), then the
    // best-fitting free node, then a lent spare (its borrowers leave at once).
    auto take_spare = [&](bool lent) -> std::optional<state::Allocation> {
      for (int32_t k = dom.begin.value(); k < dom.end.value(); ++k) {
        const NodeId n(k);
        if (!spare_[k] || holds_[k] != 1 || PartOf(n) != part || Excluded(f, n)) continue;
        if (st.tasks_on(n).empty() == lent) continue;
        if (lent && (!FitsEmpty(st, task.alloc, n) || !EvictBorrowers(n, scheds).ok())) continue;
        auto a = FitOn(st, task.alloc, n, 0);
        if (!a) continue;
        SetSpare(n, false);
        ++counters_.spares_used;
        if (!Unhold(n, scheds, /*to_work=*/true).ok()) return std::nullopt;
        return a;
      }
      return std::nullopt;
    };
    if (auto a = take_spare(false)) return a;
    std::optional<state::Allocation> best;
    int32_t best_left = INT32_MAX;
    for (int32_t k = dom.begin.value(); k < dom.end.value(); ++k) {
      const NodeId n(k);
      if (n == home || holds_[k] != 0 || !st.up(n) || PartOf(n) != part || Excluded(f, n)) continue;
      auto a = FitOn(st, task.alloc, n, 0);
      if (!a) continue;
      const int32_t left = st.full_free_gpus(n) - a->gpu_count();
      if (left < best_left) {
        best_left = left;
        best = a;
      }
    }
    if (best) return best;
    if (auto a = take_spare(true)) return a;
  }
  (void)rec;
  return std::nullopt;
}

void FaultHandler::RecordHistory(const Fault& f) {
  if (f.kind == FaultKind::kCluster || f.kind == FaultKind::kTask || f.planned()) return;
  const auto [b, e] = NodeRange(f);
  const double weight = 1.0 / std::max(1, e - b);
  for (int32_t k = b; k < e; ++k) {
    const NodeId n(k);
    const int32_t part = PartOf(n);
    if (part < static_cast<int32_t>(learners_.size()))
      for (plugins::FailureAware* l : learners_[part]) l->failure_history().Record(n, f.at, weight);
  }
}

bool FaultHandler::FitsEmpty(const state::ClusterState& st, const state::Allocation& like, NodeId n) const {
  const cluster::Node& node = cluster_.node(n);
  if (node.gpu_type != cluster_.node(like.node).gpu_type) return false;
  if (node.cpu_milli < like.cpu_milli || node.memory_mib < like.memory_mib) return false;
  return node.gpu_count - PopCount(st.gpu_down_mask(n)) >= like.gpu_count();
}

Status FaultHandler::EvictBorrowers(NodeId n, std::span<Scheduler* const> scheds) {
  Scheduler& s = *scheds[PartOf(n)];
  std::vector<JobId> jobs;
  for (TaskKey key : s.state().tasks_on(n)) jobs.push_back(key.job);
  std::sort(jobs.begin(), jobs.end());
  jobs.erase(std::unique(jobs.begin(), jobs.end()), jobs.end());
  SweepLoans(scheds, /*all=*/false, now_);
  for (JobId id : jobs) {
    for (auto l = loans_.begin(); l != loans_.end(); ++l) {
      if (l->job != id || l->part != PartOf(n)) continue;
      counters_.lent_gpu_seconds += l->gpus * UsToSeconds(std::max<TimeUs>(0, now_ - l->start));
      loans_.erase(l);
      break;
    }
    BERTH_RETURN_IF_ERROR(s.Preempt(id));
    ++counters_.spare_loan_evictions;
  }
  return Status::Ok();
}

void FaultHandler::SweepLoans(std::span<Scheduler* const> scheds, bool all, TimeUs end) {
  std::erase_if(loans_, [&](const Loan& l) {
    const scheduler::JobRecord* rec = scheds[l.part]->Find(l.job);
    const bool same_run = rec != nullptr && rec->start_time == l.start;
    if (!all && same_run && rec->state == job::JobState::kRunning) return false;
    TimeUs until = end;
    if (same_run && rec->state != job::JobState::kRunning && rec->state != job::JobState::kPending &&
        rec->finish_time >= l.start)
      until = rec->finish_time;
    counters_.lent_gpu_seconds += l.gpus * UsToSeconds(std::max<TimeUs>(0, until - l.start));
    return true;
  });
}

void FaultHandler::Advance(TimeUs now, std::span<Scheduler* const> scheds) {
  if (now_ >= 0 && now <= now_) return;
  if (now_ >= 0) {
    SweepLoans(scheds, /*all=*/false, now_);
    counters_.spare_gpu_seconds += static_cast<double>(spare_gpus_) * UsToSeconds(now - now_);
  }
  now_ = now;
}

void FaultHandler::Finish(TimeUs end, std::span<Scheduler* const> scheds) {
  Advance(end, scheds);
  SweepLoans(scheds, /*all=*/true, now_);
}

bool FaultHandler::lent(NodeId n) const {
  return std::any_of(loans_.begin(), loans_.end(), [&](const Loan& l) { return l.node == n; });
}

StatusOr<std::vector<std::pair<int32_t, JobId>>> FaultHandler::Lend(
    std::span<const std::pair<int32_t, JobId>> candidates, std::span<Scheduler* const> scheds) {
  std::vector<std::pair<int32_t, JobId>> started;
  if (!options_.lend_spares || options_.spares.mode == SpareMode::kNone || candidates.empty()) return started;
  std::vector<NodeId> free_spares;  // spares that only their spare hold keeps out
  for (int32_t k = 0; k < cluster_.num_nodes(); ++k)
    if (spare_[k] && holds_[k] == 1) free_spares.push_back(NodeId(k));
  if (free_spares.empty()) return started;
  for (const auto& [part, id] : candidates) {
    Scheduler& s = *scheds[part];
    const scheduler::JobRecord* rec = s.Find(id);
    if (rec == nullptr || rec->state != job::JobState::kPending || !rec->spec.best_effort) continue;
    if (rec->spec.groups.size() != 1 || rec->spec.groups[0].count != 1) continue;
    if (options_.lend_max_runtime >= 0 &&
        (rec->spec.runtime_limit < 0 || rec->spec.runtime_limit > options_.lend_max_runtime))
      continue;
    const job::TaskGroup& g = rec->spec.groups[0];
    const state::ClusterState& st = s.state();
    for (NodeId n : free_spares) {
      if (PartOf(n) != part) continue;
      const cluster::Node& node = cluster_.node(n);
      if (g.gpus > 0 && !g.gpu_types.Accepts(node.gpu_type)) continue;
      if (g.gpus > node.gpu_count) continue;
      state::Allocation like;
      like.node = n;
      like.gpu_mask = g.gpus > 0 ? (uint64_t{1} << g.gpus) - 1 : 0;
      like.milli_per_gpu = g.gpus > 0 ? g.milli_per_gpu : 0;
      like.cpu_milli = g.cpu_milli;
      like.memory_mib = g.memory_mib;
      like.gpu_memory_mib = g.gpu_memory_mib;
      std::optional<state::Allocation> a = FitOn(st, like, n, st.gpu_down_mask(n));
      if (!a) continue;
      // The spare stays cordoned for the scheduler: up only while the run is adopted.
      BERTH_RETURN_IF_ERROR(s.SetNodeUp(n, true));
      const framework::TaskPlacement p{TaskKey{id, 0}, *a};
      const Status adopted = s.Adopt(id, std::span<const framework::TaskPlacement>(&p, 1), now_);
      BERTH_RETURN_IF_ERROR(s.SetNodeUp(n, false));
      if (!adopted.ok()) continue;
      loans_.push_back({part, id, n, now_, a->gpu_count()});
      ++counters_.spare_loans;
      started.push_back({part, id});
      break;
    }
  }
  return started;
}

std::optional<cluster::Level> SpannedLevel(const cluster::Cluster& c, std::span<const framework::TaskPlacement> ps) {
  if (ps.empty()) return std::nullopt;
  const NodeId first = ps.front().alloc.node;
  bool one = true;
  int level = cluster::kNumLevels - 1;
  for (const auto& p : ps) {
    if (p.alloc.node == first) continue;
    one = false;
    while (level > 0 && c.node(first).domain[level] != c.node(p.alloc.node).domain[level]) --level;
  }
  if (one) return std::nullopt;
  return static_cast<cluster::Level>(level);
}

namespace {

bool SpansNodes(std::span<const framework::TaskPlacement> ps) {
  for (const auto& p : ps)
    if (p.alloc.node != ps.front().alloc.node) return true;
  return false;
}

}  // namespace

Status FaultHandler::StopJobs(const Fault& f, bool checkpoint_now, std::span<Scheduler* const> scheds,
                              StepOutcome& out) {
  // (partition, job) -> the task indexes the fault hits, in job id order.
  std::map<std::pair<int32_t, JobId>, std::vector<int32_t>> hit;
  const auto [b, e] = NodeRange(f);
  for (int32_t k = b; k < e; ++k) {
    const NodeId n(k);
    const int32_t part = PartOf(n);
    const Scheduler& s = *scheds[part];
    for (TaskKey key : s.state().tasks_on(n)) {
      const scheduler::JobRecord* rec = s.Find(key.job);
      if (rec == nullptr || rec->state != job::JobState::kRunning) continue;
      bool stops = true;
      switch (f.kind) {
        case FaultKind::kGpu:
        case FaultKind::kTask: stops = (s.state().Find(key)->gpu_mask >> f.gpu) & 1; break;
        case FaultKind::kLink:
        case FaultKind::kLeaf:
        case FaultKind::kSpine: stops = SpansNodes(rec->placements); break;
        default: break;
      }
      if (stops) hit[{part, key.job}].push_back(key.index);
    }
  }
  for (auto& [where, tasks] : hit) {
    std::sort(tasks.begin(), tasks.end());  // tasks_on is in no particular order
    const auto [part, id] = where;
    Scheduler& s = *scheds[part];
    const scheduler::JobRecord* rec = s.Find(id);
    ++counters_.interruptions[f.cause];
    if (f.planned()) ++counters_.drained_by_deadline;
    std::sort(tasks.begin(), tasks.end());
    bool repaired = options_.repair == RepairMode::kInPlace && rec->placements.size() >= 2 &&
                    f.kind != FaultKind::kCluster;
    if (repaired) {
      const std::optional<cluster::Level> spanned = SpannedLevel(cluster_, rec->placements);
      bool first = true;
      for (int32_t t : tasks) {
        auto p = std::find_if(rec->placements.begin(), rec->placements.end(),
                              [&](const framework::TaskPlacement& x) { return x.task.index == t; });
        std::optional<state::Allocation> a;
        if (f.kind == FaultKind::kTask) a = p->alloc;  // the process restarts where it was
        else a = FindReplacement(s, *rec, *p, f, spanned, scheds);
        if (!a || !s.RepairTask(id, t, *a, first ? options_.repair_cost : 0, checkpoint_now).ok()) {
          repaired = false;
          ++counters_.repair_fallbacks;
          break;
        }
        first = false;
      }
    }
    if (repaired) {
      ++counters_.repairs;
      out.repaired.push_back({part, id});
    } else {
      BERTH_RETURN_IF_ERROR(s.Interrupt(id, RestartCost(rec->spec), checkpoint_now));
      ++counters_.restarts;
    }
    out.touched.push_back(part);
  }
  return Status::Ok();
}

StatusOr<StepOutcome> FaultHandler::Step(int32_t index, int32_t phase, std::span<Scheduler* const> scheds) {
  if (index < 0 || index >= static_cast<int32_t>(faults_.size())) return InvalidArgument("no fault " + std::to_string(index));
  const Fault& f = faults_[index];
  StepOutcome out;
  const auto [b, e] = NodeRange(f);
  auto node_level = [&] { return f.kind == FaultKind::kGpu || f.kind == FaultKind::kNode || f.kind == FaultKind::kLink; };
  switch (phase) {
    case kBegin: {
      ++counters_.faults[f.cause];
      if (f.kind == FaultKind::kMaintenance) {
        for (int32_t k = b; k < e; ++k) BERTH_RETURN_IF_ERROR(Hold(NodeId(k), scheds));
        out.wakeups.push_back({f.at + f.deadline, index, kDeadline});
        break;
      }
      BERTH_RETURN_IF_ERROR(StopJobs(f, /*checkpoint_now=*/false, scheds, out));
      if (f.kind == FaultKind::kTask) break;
      RecordHistory(f);
      if (f.kind == FaultKind::kGpu) {
        const int32_t g = cluster_.node(f.node).first_gpu + f.gpu;
        if (gpu_holds_[g]++ == 0) BERTH_RETURN_IF_ERROR(scheds[PartOf(f.node)]->SetGpuUp(f.node, f.gpu, false));
      } else {
        for (int32_t k = b; k < e; ++k) BERTH_RETURN_IF_ERROR(Hold(NodeId(k), scheds));
      }
      if (node_level()) {
        auto& times = recent_faults_[f.node.value()];
        std::erase_if(times, [&](TimeUs t) { return t < f.at - options_.quarantine_window; });
        times.push_back(f.at);
      }
      out.wakeups.push_back({f.at + f.duration, index, kEnd});
      break;
    }
    case kDeadline: {
      BERTH_RETURN_IF_ERROR(StopJobs(f, /*checkpoint_now=*/true, scheds, out));
      out.wakeups.push_back({f.at + f.deadline + f.duration, index, kEnd});
      break;
    }
    case kEnd: {
      const TimeUs end = f.at + f.deadline + f.duration;
      if (node_level()) {
        auto& times = recent_faults_[f.node.value()];
        std::erase_if(times, [&](TimeUs t) { return t < end - options_.quarantine_window; });
        if (static_cast<int32_t>(times.size()) >= options_.quarantine_after && !held_by_quarantine_[f.node.value()]) {
          times.clear();
          const int32_t k = ++quarantine_count_[f.node.value()];
          ++counters_.quarantines;
          held_by_quarantine_[f.node.value()] = 1;
          BERTH_RETURN_IF_ERROR(Hold(f.node, scheds));
          const TimeUs hold = options_.quarantine_base << std::min(k - 1, 20);
          out.wakeups.push_back({end + hold, index, kQuarantineEnd});
        }
      }
      if (f.kind == FaultKind::kGpu) {
        const int32_t g = cluster_.node(f.node).first_gpu + f.gpu;
        if (--gpu_holds_[g] == 0) BERTH_RETURN_IF_ERROR(scheds[PartOf(f.node)]->SetGpuUp(f.node, f.gpu, true));
        if (holds_[f.node.value()] == 0) MaybeMakeSpare(f.node, scheds);
      } else {
        for (int32_t k = b; k < e; ++k) BERTH_RETURN_IF_ERROR(Unhold(NodeId(k), scheds));
      }
      for (int32_t k = b; k < e; ++k) out.touched.push_back(PartOf(NodeId(k)));
      break;
    }
    case kQuarantineEnd: {
      held_by_quarantine_[f.node.value()] = 0;
      BERTH_RETURN_IF_ERROR(Unhold(f.node, scheds));
      out.touched.push_back(PartOf(f.node));
      break;
    }
    default: return InvalidArgument("bad fault phase " + std::to_string(phase));
  }
  std::sort(out.touched.begin(), out.touched.end());
  out.touched.erase(std::unique(out.touched.begin(), out.touched.end()), out.touched.end());
  return out;
}

}  // namespace berth::faults
