// The preemption post-filters and the policies built on them:
//   preempt                  Berth's choice: the least-cost minimal victim set
//                            inside one topology domain (victim_search.h);
//   preempt-lowest-priority  kube-scheduler / Volcano's heuristic
//                            (lowest_priority.h), for comparison.
// Both take the same candidates (eligibility.h). Args (seconds):
//   min_runtime_s  a job runs at least this long in a run before it may be
//                  evicted (default 600).
// A service replica (a job with a service spec) whose search a reservation
// confines to some nodes (a filter's reservation rule, FilterPlugin::RulesOut:
// PreemptContext::confined) reclaims that capacity without the min-runtime
// guard: the work there borrowed it, and its yield deadline
// (SchedulerOptions::yield_best_effort, yield_training_grace) bounds it
// instead. The nodes a filter's limit rule leaves out (the replica's spread
// limits, spread.h) only narrow the search (PreemptContext::ruled_out); the
// guard stays. NextGuardExpiry: when the next running job passes
// min_runtime_s (best-effort work is never shielded).
#include <algorithm>
#include <cstdio>
#include <limits>
#include <memory>

#include "berth/common/csv.h"
#include "berth/plugins/builtin.h"
#include "berth/plugins/preempt/eligibility.h"
#include "berth/plugins/preempt/lowest_priority.h"
#include "berth/plugins/preempt/min_runtime.h"
#include "berth/plugins/preempt/preempt_cache.h"
#include "berth/plugins/preempt/room.h"
#include "berth/plugins/preempt/victim_search.h"

namespace berth::plugins {
namespace {

using framework::PreemptContext;
using framework::PreemptionPlan;

constexpr double kDefaultMinRuntimeS = 600;

struct PreemptOptions {
  TimeUs min_runtime = SecondsToUs(kDefaultMinRuntimeS);
  // The lowest priority in the workload known in advance (replay); a job at
  // or below it has no victim by priority. INT32_MIN when unknown.
  int32_t floor_priority = std::numeric_limits<int32_t>::min();
};

StatusOr<PreemptOptions> ParseOptions(std::string_view plugin, const framework::PluginArgs& args,
                                      const framework::PluginContext& context) {
  PreemptOptions o;
  for (const auto& [key, value] : args) {
    if (key == "min_runtime_s") {
      double s = 0;
      if (!ParseDouble(value, s).ok() || !(s >= 0) || s > 1e9)
        return InvalidArgument("plugin '" + std::string(plugin) + "': min_runtime_s must be a number of seconds >= 0, not '" +
                               value + "'");
      o.min_runtime = SecondsToUs(s);
    } else {
      return InvalidArgument("plugin '" + std::string(plugin) + "': unknown arg '" + key + "'");
    }
  }
  if (const std::shared_ptr<const framework::WorkloadFacts> facts = framework::FactsOf(context))
    o.floor_priority = facts->lowest_priority;
  return o;
}

// "a, b, c" (at most 6 names, then "+N more").
std::string VictimNames(const framework::SchedulerView& view, std::span<const int32_t> victims) {
  std::string s;
  for (size_t i = 0; i < victims.size(); ++i) {
    if (i == 6) return s + " +" + std::to_string(victims.size() - i) + " more";
    if (i) s += ", ";
    const auto* spec = view.running[victims[i]].spec;
    s += spec->name.empty() ? "#" + std::to_string(spec->id.value()) : spec->name;
  }
  return s;
}

std::string GpuHours(double gpu_seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", gpu_seconds / 3600.0);
  return buf;
}

// Shared front: the job's needs and candidates, or nothing to do.
class PreemptBase : public framework::PostFilterPlugin {
 public:
  explicit PreemptBase(PreemptOptions o) : options_(o) {}

 protected:
  // The min-runtime guard against job J: none for a service replica whose
  // search is confined to some nodes (a reservation), else min_runtime_s.
  TimeUs GuardFor(const PreemptContext& ctx) const {
    return ctx.job.service && ctx.confined ? 0 : options_.min_runtime;
  }
  TimeUs NextGuardExpiry(const framework::SchedulerView& view) const override {
    TimeUs next = -1;
    for (const framework::RunningJob& v : view.running) {
      if (v.best_effort) continue;
      const TimeUs at = v.start_time + options_.min_runtime;
      if (at > view.now && (next < 0 || at < next)) next = at;
    }
    return next;
  }
  // False when no plan can come out of this job (shares, no candidates, or
  // the same search failed already in this epoch). Sets elig_.
  bool Prepare(const PreemptContext& ctx, TimeUs guard) {
    elig_ = &own_elig_;
    cached_ = false;
    if (ctx.verdict.code == framework::VerdictCode::kUnresolvable) return false;
    // Without candidates by priority, only reclaim could help: check it
    // before looking at the job's shapes or the running jobs (most pending
    // jobs stop here).
    const bool reclaim = MayReclaim(ctx);
    if (ctx.job.priority <= options_.floor_priority && !reclaim) return false;
    need_ = preempt::GangNeed::From(ctx.job);
    if (!need_) return false;
    if (!cache_.Sync(ctx.view, options_.min_runtime)) return own_elig_.Build(ctx, guard);
    // The same eligibility and searches while the scheduler does not change (preempt_cache.h).
    cached_ = true;
    const tenancy::Ledger& l = ctx.view.ledger;
    // The guard summary is the one of min_runtime_s.
    if (!reclaim && !l.has_budgets() && guard == options_.min_runtime && cache_.NoneBelow(ctx.view, ctx.job.priority))
      return false;
    if (ctx.view.running.empty()) return false;
    const preempt::PreemptorClass cls{ctx.queue, ctx.job.priority, preempt::JobDimension(ctx.job, ctx.queue, l),
                                      reclaim, ctx.preempted_by.valid() ? ctx.preempted_by.value() : -1, guard};
    bool found = false;
    preempt::Eligibility* e = cache_.Find(cls, found);
    if (e == nullptr) {
      e = &cache_.Slot(cls);
      found = e->Build(ctx, guard);
      cache_.SetFound(found);
    }
    if (!found) return false;
    elig_ = e;
    const int32_t level = ctx.job.required_level ? static_cast<int32_t>(*ctx.job.required_level) : -1;
    return !cache_.KnownNoPlan(cls, *need_, level, ctx.ruled_out);
  }
  // Prepare is false for every pending job J (so PostFilter gives nothing,
  // and WhyNoPlan "" since J has no reclaim right) when, for all of them:
  //   - J is no service replica: its guard is min_runtime_s and no spread
  //     rule narrows its search (replicas are left to the per-job path);
  //   - J has no reclaim right: MayReclaim needs a quota in J's dimension d
  //     and usage(qJ, d) + amount <= guarantee(qJ, d), with amount >= 0; no
  //     queue holding pending jobs has, in any dimension, a quota with
  //     usage <= guarantee;
  //   - and either every pending priority is at or below the workload's
  //     floor (Prepare's first stop), or, without budgets, no running job
  //     past its guard (best effort: any) ranks below the highest pending
  //     priority (the guard summary's stop; computed here when the view has
  //     no epoch, the same value).
  bool NoPlanForAny(const framework::SchedulerView& view, const framework::PendingSummary& pending) override {
    if (pending.replicas > 0) return false;
    const tenancy::Ledger& l = view.ledger;
    const tenancy::QueueTree& tree = l.tree();
    const int32_t queues = std::min<int32_t>(tree.size(), static_cast<int32_t>(pending.per_queue.size()));
    for (int32_t q = 0; q < queues; ++q) {
      if (pending.per_queue[q] <= 0) continue;
      const tenancy::QueueNode& node = tree.node(q);
      for (int32_t d = 0; d < l.num_dims(); ++d)
        if (node.has_quota[d] && l.usage(q, d) <= l.guarantee(q, d)) return false;
    }
    if (pending.max_priority <= options_.floor_priority) return true;
    if (l.has_budgets()) return false;
    if (cache_.Sync(view, options_.min_runtime)) return cache_.NoneBelow(view, pending.max_priority);
    return pending.max_priority <= preempt::PreemptCache::MinEvictablePriority(view, options_.min_runtime);
  }
  // After a search of a prepared job found no plan.
  void NoPlan() {
    if (cached_) cache_.AddNoPlan();
  }
  static bool MayReclaim(const PreemptContext& ctx) {
    const tenancy::Ledger& l = ctx.view.ledger;
    if (ctx.queue < 0 || ctx.queue >= l.tree().size()) return false;
    const int32_t dim = preempt::JobDimension(ctx.job, ctx.queue, l);
    return l.tree().node(ctx.queue).has_quota[dim] &&
           l.usage(ctx.queue, dim) + preempt::JobAmount(ctx.job, dim, l) <= l.guarantee(ctx.queue, dim);
  }
  // A job with the reclaim right that found no victims: the queue, who
  // borrows in its dimension (and how much) and when the first borrowing
  // job's min-runtime guard expires.
  std::string_view WhyNoPlan(const PreemptContext& ctx) const override {
    if (!MayReclaim(ctx)) return {};
    if (!cache_.Sync(ctx.view, options_.min_runtime)) {
      why_ = Why(ctx);
      return why_;
    }
    const int32_t dim = preempt::JobDimension(ctx.job, ctx.queue, ctx.view.ledger);
    if (const std::string* why = cache_.Why(ctx.queue, dim)) return *why;
    cache_.SetWhy(ctx.queue, dim, Why(ctx));
    return *cache_.Why(ctx.queue, dim);
  }
  std::string Why(const PreemptContext& ctx) const {
    const tenancy::Ledger& l = ctx.view.ledger;
    const tenancy::QueueTree& tree = l.tree();
    const int32_t dim = preempt::JobDimension(ctx.job, ctx.queue, l);
    std::vector<uint8_t> mine(tree.size(), 0);  // qJ and its ancestors
    for (int32_t a = ctx.queue; a >= 0; a = tree.node(a).parent) mine[a] = 1;
    auto units = [&](int64_t milli) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", static_cast<double>(milli) / kMilliPerGpu);
      return std::string(buf) + " " + l.unit_word();
    };
    std::string borrowers;
    int64_t borrowed = 0;
    std::vector<uint8_t> named(tree.size(), 0);
    for (int32_t q = 0; q < tree.size(); ++q) {
      if (mine[q] || !tree.node(q).is_leaf()) continue;
      // A leaf borrows where the first queue with a quota on its path does (named once).
      int32_t at = q;
      while (at >= 0 && !tree.node(at).has_quota[dim]) at = tree.node(at).parent;
      if (at < 0 || mine[at] || named[at] || l.borrowed(at, dim) <= 0) continue;
      named[at] = 1;
      borrowed += l.borrowed(at, dim);
      if (borrowers.size() < 200)
        borrowers += (borrowers.empty() ? "" : ", ") + tree.node(at).name + " (" + units(l.borrowed(at, dim)) + ")";
    }
    const int32_t qj = ctx.queue;
    std::string s = "reclaim for queue '" + tree.node(qj).name + "' (" + l.DimName(dim) + "): it uses " +
                    units(l.usage(qj, dim)) + " of its guarantee of " + units(l.guarantee(qj, dim));
    if (borrowed <= 0) return s + "; no other queue borrows there, so nothing can be reclaimed";
    s += "; borrowed by " + borrowers;
    // The min-runtime guard: the first borrowing job that becomes evictable.
    TimeUs first = -1;
    for (const auto& v : ctx.view.running) {
      if (v.queue < 0 || v.queue >= tree.size() || mine[v.queue]) continue;
      const TimeUs at = v.start_time + options_.min_runtime;
      if (at > ctx.view.now && (first < 0 || at < first)) first = at;
    }
    if (first >= 0) {
      s += "; their jobs may be evicted after " + std::to_string(options_.min_runtime / kUsPerSecond) +
           "s of runtime (--min-runtime): the next guard expires at " + tenancy::FormatUtc(first) + ", in " +
           std::to_string((first - ctx.view.now + kUsPerSecond - 1) / kUsPerSecond) + "s";
    } else {
      s += "; no eviction of theirs frees room for the job in one domain yet";
    }
    return s;
  }
  PreemptionPlan MakePlan(const PreemptContext& ctx, std::span<const int32_t> victims, const std::string& where) {
    PreemptionPlan plan;
    plan.shrink_elastic = true;
    for (int32_t r : victims) {
      plan.victims.push_back(ctx.view.running[r].spec->id);
      plan.lost_gpu_seconds += ctx.view.running[r].LostGpuSeconds(ctx.view.now);
    }
    plan.reason = elig_->Describe(ctx) + ": " + std::to_string(victims.size()) + " job" +
                  (victims.size() == 1 ? "" : "s") + " (" + VictimNames(ctx.view, victims) + ")" + where + ", " +
                  GpuHours(plan.lost_gpu_seconds) + " GPU-h lost";
    return plan;
  }

  PreemptOptions options_;
  std::optional<preempt::GangNeed> need_;
  preempt::Eligibility* elig_ = &own_elig_;  // own_elig_, or the cache's for the job's class
  preempt::Eligibility own_elig_;            // without an epoch (SchedulerView::epoch 0)
  mutable preempt::PreemptCache cache_;  // WhyNoPlan keeps its texts there too
  mutable std::string why_;              // WhyNoPlan's text without an epoch
  bool cached_ = false;
};

class Preempt final : public PreemptBase {
 public:
  static constexpr std::string_view kName = "preempt";
  using PreemptBase::PreemptBase;
  std::string_view Name() const override { return kName; }
  std::optional<PreemptionPlan> PostFilter(const PreemptContext& ctx) override {
    if (!Prepare(ctx, GuardFor(ctx))) return std::nullopt;
    std::optional<preempt::VictimSet> set = search_.Find(ctx, *need_, *elig_);
    if (!set) {
      NoPlan();
      return std::nullopt;
    }
    const cluster::Cluster& c = ctx.view.state.cluster();
    return MakePlan(ctx, set->victims,
                    std::string(" in ") + cluster::LevelName(set->level) + " " + c.domain(set->domain).name);
  }

 private:
  preempt::VictimSearch search_;
};

class PreemptLowestPriority final : public PreemptBase {
 public:
  static constexpr std::string_view kName = "preempt-lowest-priority";
  using PreemptBase::PreemptBase;
  std::string_view Name() const override { return kName; }
  std::optional<PreemptionPlan> PostFilter(const PreemptContext& ctx) override {
    if (!Prepare(ctx, GuardFor(ctx))) return std::nullopt;
    std::optional<std::vector<int32_t>> victims = search_.Find(ctx, *need_, *elig_);
    if (!victims) {
      NoPlan();
      return std::nullopt;
    }
    return MakePlan(ctx, *victims, ", lowest priority first");
  }

 private:
  preempt::LowestPriorityFirst search_;
};

template <typename T>
framework::PluginRegistry::ContextFactory Factory() {
  return [](const framework::PluginArgs& args,
            const framework::PluginContext& context) -> StatusOr<std::unique_ptr<framework::Plugin>> {
    BERTH_ASSIGN_OR_RETURN(PreemptOptions o, ParseOptions(T::kName, args, context));
    return std::unique_ptr<framework::Plugin>(std::make_unique<T>(o));
  };
}

}  // namespace

Status RegisterPreemptionPlugins(framework::PluginRegistry& registry) {
  BERTH_RETURN_IF_ERROR(registry.Register(std::string(Preempt::kName), Factory<Preempt>()));
  BERTH_RETURN_IF_ERROR(registry.Register(std::string(PreemptLowestPriority::kName), Factory<PreemptLowestPriority>()));
  return Status::Ok();
}

Status SetMinRuntime(framework::Profile& profile, TimeUs min_runtime) {
  if (min_runtime < 0) return InvalidArgument("--min-runtime: must be >= 0");
  if (profile.post_filter.empty())
    return InvalidArgument("--min-runtime: policy '" + profile.name +
                           "' does not preempt (no post-filter plugin); choose one that does, e.g. fairshare, "
                           "priority-preempt, srtf, tiresias");
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.6f", UsToSeconds(min_runtime));
  for (auto& ref : profile.post_filter) {
    ref.args["min_runtime_s"] = seconds;
    // A plugin used twice is built once, with the queue sort's args.
    if (ref.name == profile.queue_sort) profile.queue_sort_args["min_runtime_s"] = seconds;
  }
  return Status::Ok();
}

Status RegisterPreemptionPolicies(framework::PolicyRegistry& registry) {
  struct Entry {
    const char* name;
    const char* post_filter;
    const char* description;
  };
  static const Entry kEntries[] = {
      {"priority-preempt", "preempt",
       "priority order; preempts the least-cost minimal set of lower-priority or borrowing jobs inside one "
       "topology domain (checkpoint-aware)"},
      {"priority-preempt-lpf", "preempt-lowest-priority",
       "priority order; preempts lowest priority first, node by node (kube-scheduler / Volcano baseline)"},
  };
  for (const auto& e : kEntries) {
    framework::Profile p;
    p.queue_sort = "priority";
    p.filter = {framework::PluginRef{"fit"}};
    p.score = {framework::PluginRef{"bestfit"}};
    p.plan = {framework::PluginRef{"topology"}};
    p.permit = {framework::PluginRef{"gang"}};
    p.post_filter = {framework::PluginRef{e.post_filter}};
    BERTH_RETURN_IF_ERROR(registry.Register(e.name, std::move(p), e.description));
  }
  return Status::Ok();
}

TimeUs MinRuntimeOf(const framework::Profile& profile) {
  for (const auto& ref : profile.post_filter) {
    if (ref.name != Preempt::kName && ref.name != PreemptLowestPriority::kName) continue;
    // A plugin used twice is built once, with the queue sort's args.
    const framework::PluginArgs& args = ref.name == profile.queue_sort ? profile.queue_sort_args : ref.args;
    // The plugin's own parse (bad args fail its creation, so the default here only stands in for those).
    StatusOr<PreemptOptions> o = ParseOptions(ref.name, args, {});
    return o.ok() ? o->min_runtime : PreemptOptions{}.min_runtime;
  }
  return -1;
}

}  // namespace berth::plugins
