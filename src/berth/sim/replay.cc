// The time-based replay driver.
#include "berth/sim/replay.h"
#include "berth/sim/workflow_replay.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <numeric>
#include <unordered_map>

#include "berth/common/clock.h"
#include "berth/common/hash.h"
#include "berth/faults/generator.h"
#include "berth/scheduler/scheduler.h"
#include "berth/sim/elastic_progress.h"
#include "berth/sim/event_queue.h"
#include "berth/sim/tenant_figures.h"

namespace berth::sim {
namespace {

using job::JobState;

// One independent scheduler and the nodes it may use.
struct Partition {
  std::string name;
  std::unique_ptr<scheduler::Scheduler> sched;
  int64_t gpus = 0;      // whole GPUs in the partition
  bool touched = false;  // had an arrival or completion in the current batch
};

// Plot series on a regular time grid that coarsens itself to stay within a
// bound. Invariant: point i sits at tick i, time start + i * interval; the
// optional last point (Finish) is off the grid.
class Sampler {
 public:
  Sampler(TimeUs start, TimeUs interval, int32_t max_points)
      : start_(start), interval_(std::max<TimeUs>(interval, 1)), max_(std::max(2, max_points & ~1)) {}

  TimeUs NextTick() const { return start_ + static_cast<TimeUs>(alloc_.size()) * interval_; }

  // Records the values of the tick at NextTick(); coarsens first when full.
  void Tick(double alloc_pct, double pending) {
    if (static_cast<int32_t>(alloc_.size()) >= max_) Coarsen();
    const TimeUs t = NextTick();
    alloc_.push_back({Hours(t), alloc_pct});
    queue_.push_back({Hours(t), pending});
  }

  // Records the final values at `t` (at or after the last tick).
  void Finish(TimeUs t, double alloc_pct, double pending) {
    if (!alloc_.empty() && Hours(t) <= alloc_.back().x) return;
    if (static_cast<int32_t>(alloc_.size()) >= max_) Coarsen();
    alloc_.push_back({Hours(t), alloc_pct});
    queue_.push_back({Hours(t), pending});
  }

  std::vector<Point> TakeAllocation() { return std::move(alloc_); }
  std::vector<Point> TakeQueue() { return std::move(queue_); }

 private:
  double Hours(TimeUs t) const { return UsToSeconds(t - start_) / 3600.0; }
  // Keeps the even ticks; the grid interval doubles.
  void Coarsen() {
    size_t w = 0;
    for (size_t r = 0; r < alloc_.size(); r += 2, ++w) {
      alloc_[w] = alloc_[r];
      queue_[w] = queue_[r];
    }
    alloc_.resize(w);
    queue_.resize(w);
    interval_ *= 2;
  }

  TimeUs start_;
  TimeUs interval_;
  int32_t max_;
  std::vector<Point> alloc_;
  std::vector<Point> queue_;
};

// Every plugin of a framework once (a plugin may serve several extension
// points), in a fixed order, appends its counters.
void CollectCounters(const framework::Framework& fw, framework::PluginCounters& out) {
  std::vector<const framework::Plugin*> seen;
  auto add = [&](const framework::Plugin* p) {
    if (std::find(seen.begin(), seen.end(), p) != seen.end()) return;
    seen.push_back(p);
    p->Counters(out);
  };
  auto add_all = [&](const auto& plugins) {
    for (const auto* p : plugins) add(p);
  };
  add(&fw.queue_sort());
  add_all(fw.admit());
  add_all(fw.plan());
  add_all(fw.filter());
  add_all(fw.candidates());
  for (const auto& [p, weight] : fw.score()) add(p);
  add_all(fw.reserve());
  add_all(fw.permit());
  add_all(fw.post_filter());
  add_all(fw.bind());
}

// Goodput, effective training time and the fault counters (result.h).
void FillFailureFigures(const Trace& trace, const std::vector<JobId>& ids, const std::vector<int32_t>& route,
                        const std::vector<scheduler::Scheduler*>& scheds, const faults::FaultHandler& handler,
                        TimeUs end, double alloc_integral, PolicyResult& r) {
  r.failures_on = true;
  const faults::FaultOptions& fo = handler.options();
  r.repair_mode = faults::RepairModeName(fo.repair);
  r.spare_mode = faults::SpareModeName(fo.spares.mode);
  double useful = 0, ett_large = 0;
  int64_t large = 0;
  for (size_t i = 0; i < trace.jobs.size(); ++i) {
    if (route[i] < 0) continue;  // never fit, or a workflow stage attempt never released
    const scheduler::JobRecord* rec = scheds[route[i]]->Find(ids[i]);
    if (rec == nullptr) continue;
    r.restarts += rec->restarts;
    r.gpu_hours_lost_failures += rec->failure_lost_gpu_seconds / 3600.0;
    r.gpu_hours_lost_recovery += rec->recovery_gpu_seconds / 3600.0;
    const job::JobState st = rec->state;
    const bool never_fit = st == JobState::kFailed && rec->last_verdict.code == framework::VerdictCode::kUnresolvable;
    if (!(st == JobState::kSucceeded || st == JobState::kRunning || st == JobState::kPending || never_fit))
      ++r.jobs_lost;
    // Time making progress that was kept: saved work plus the last run's.
    TimeUs progress = rec->work_done;
    const TimeUs run_start = rec->start_time + rec->startup_delay;
    if (st == JobState::kSucceeded) progress += std::max<TimeUs>(0, rec->finish_time - run_start);
    if (st == JobState::kRunning) progress += std::max<TimeUs>(0, end - run_start);
    const double gpus = static_cast<double>(trace.jobs[i].total_milli_gpu()) / kMilliPerGpu;
    useful += gpus * UsToSeconds(progress) / 3600.0;
    if (rec->first_start_time < 0) continue;
    const int64_t whole = trace.jobs[i].total_gpus();
    if (trace.jobs[i].num_tasks() < 2 && whole < 1024) continue;
    const TimeUs wall = (st == JobState::kSucceeded ? rec->finish_time : end) - rec->first_start_time;
    const double ett = wall > 0 ? std::min(1.0, static_cast<double>(progress) / static_cast<double>(wall)) : 1.0;
    r.effective_training_time.push_back({trace.jobs[i].name, whole, ett, rec->restarts, rec->repairs});
    if (whole >= 1024) {
      ett_large += ett;
      ++large;
    }
  }
  if (large > 0) r.effective_training_time_large = ett_large / static_cast<double>(large);
  r.useful_gpu_hours = useful;
  r.allocated_gpu_hours = alloc_integral / kMilliPerGpu / 3.6e9;
  r.goodput = r.allocated_gpu_hours > 0 ? useful / r.allocated_gpu_hours : 0;
  const faults::FaultCounters& c = handler.counters();
  r.failures.assign(c.faults.begin(), c.faults.end());
  r.interruptions.assign(c.interruptions.begin(), c.interruptions.end());
  r.repairs = c.repairs;
  r.repair_fallbacks = c.repair_fallbacks;
  r.spare_nodes = c.spare_nodes;
  r.spares_used = c.spares_used;
  r.lend_spares = fo.lend_spares;
  r.spare_loans = c.spare_loans;
  r.spare_loan_evictions = c.spare_loan_evictions;
  r.spare_gpu_hours = c.spare_gpu_seconds / 3600.0;
  r.spare_lent_gpu_hours = c.lent_gpu_seconds / 3600.0;
  r.spare_utilization = c.spare_gpu_seconds > 0 ? c.lent_gpu_seconds / c.spare_gpu_seconds : 0;
  r.quarantines = c.quarantines;
  r.drained_by_deadline = c.drained_by_deadline;
}

}  // namespace

Status ReplayOptions::Validate() const {
  if (max_samples < 2) return InvalidArgument("max_samples must be at least 2");
  if (progress_every < 1) return InvalidArgument("progress_every must be positive");
  if (preemption_grace < 0 || restore_cost < 0)
    return InvalidArgument("preemption_grace and restore_cost must not be negative");
  if (until < -1) return InvalidArgument("--until must not be negative");
  BERTH_RETURN_IF_ERROR(fault_options.Validate());
  return runtime.Validate();
}

namespace {

// The replay of a trace held in memory (`input_or_null`) or streamed from its
// file (`stream`, with `input_or_null` null): the same loop, which reads the
// jobs' facts from a JobTable and takes each spec as the job arrives.
StatusOr<PolicyResult> Replay(const cluster::Cluster& cluster, const Trace* input_or_null,
                              const StreamedTrace* stream, const framework::Profile& profile,
                              const framework::PluginRegistry& registry, const ReplayOptions& opts) {
  const auto wall_start = std::chrono::steady_clock::now();
  double pass_ms_sum = 0;
  BERTH_RETURN_IF_ERROR(opts.Validate());
  const Trace no_jobs;  // a streamed trace keeps its jobs in the file
  const Trace& input = input_or_null ? *input_or_null : no_jobs;
  std::unique_ptr<JobFeed> feed;
  if (stream) {
    BERTH_RETURN_IF_ERROR(stream->Streamable());
    if (opts.failures) return InvalidArgument("replay: failures need the trace in memory, not streamed");
    BERTH_ASSIGN_OR_RETURN(feed, JobFeed::Open(*stream));
  }
  // Workflows: their stage attempts become held jobs (workflow_replay.h).
  const bool has_workflows = !input.workflows.empty();
  WorkflowReplay wf;
  if (has_workflows) wf = ExpandWorkflows(input);
  const Trace& trace = has_workflows ? wf.trace : input;
  JobTable own_table;
  if (!stream) own_table = JobTable::Of(trace.jobs);
  const JobTable& table = stream ? stream->table : own_table;
  const std::vector<JobFacts>& facts = table.jobs;
  const size_t n = facts.size();
  if (n == 0) return InvalidArgument("replay: the trace has no jobs");
  if (n > static_cast<size_t>(INT32_MAX)) return InvalidArgument("replay: too many jobs");
  for (const auto& j : trace.jobs)
    if (j.service)
      return InvalidArgument("replay: job '" + j.name +
                             "' is a service (kind: service): run it with --services FILE (docs/services.md)");

  // Job ids (the trace's, or the trace index when unset) and their lookup
  // (no table when every id is its job's index, as the readers number them).
  std::vector<JobId> ids(n);
  std::unordered_map<JobId, int32_t> index_of;  // looked up, never iterated
  bool ids_are_indexes = true;
  for (size_t i = 0; i < n; ++i) {
    ids[i] = !stream && trace.jobs[i].id.valid() ? trace.jobs[i].id : JobId(static_cast<int64_t>(i));
    ids_are_indexes = ids_are_indexes && ids[i] == JobId(static_cast<int64_t>(i));
  }
  if (!ids_are_indexes) {
    index_of.reserve(n);
    for (size_t i = 0; i < n; ++i)
      if (!index_of.emplace(ids[i], static_cast<int32_t>(i)).second)
        return InvalidArgument("replay: job id " + std::to_string(ids[i].value()) + " appears twice in the trace");
  }
  auto index_for = [&](JobId id) -> int32_t {
    return ids_are_indexes ? static_cast<int32_t>(id.value()) : index_of.find(id)->second;
  };

  // Partitions and the route of each job (-1: never fits, not submitted).
  ManualClock clock(0);
  std::vector<Partition> parts;
  framework::PluginContext context;  // plugins that learn from the workload (fgd) see the trace as read
  context.cluster = &cluster;
  context.workload = trace.jobs;                // empty when streamed:
  if (stream) context.facts = stream->facts;   // the first read's facts instead
  context.goodput = trace.goodput.get();
  auto make_scheduler = [&]() -> StatusOr<std::unique_ptr<scheduler::Scheduler>> {
    BERTH_ASSIGN_OR_RETURN(std::unique_ptr<framework::Framework> fw,
                           framework::Framework::Create(profile, registry, context));
    scheduler::SchedulerOptions so;
    so.seed = opts.seed;
    so.check_indexes = opts.check_indexes;
    so.full_scan = opts.full_scan;
    so.full_sort = opts.full_sort;
    so.full_preempt = opts.full_preempt;
    so.queues = opts.queues;
    so.usage_half_life = opts.usage_half_life;
    so.speeds = opts.speeds;
    so.preemption_grace = opts.preemption_grace;
    so.restore_cost = opts.restore_cost;
    so.elastic_resize = true;
    return std::make_unique<scheduler::Scheduler>(cluster, std::move(fw), std::move(so), clock);
  };
  std::vector<int32_t> route(n, 0);
  if (!opts.partition_level) {
    Partition p;
    p.name = "all";
    BERTH_ASSIGN_OR_RETURN(p.sched, make_scheduler());
    p.gpus = cluster.total_gpus();
    parts.push_back(std::move(p));
  } else {
    std::unordered_map<std::string, int32_t> by_name;  // looked up, never iterated
    for (DomainId d : cluster.domains_at(*opts.partition_level)) {
      const cluster::Domain& dom = cluster.domain(d);
      Partition p;
      p.name = dom.name;
      BERTH_ASSIGN_OR_RETURN(p.sched, make_scheduler());
      for (int32_t k = 0; k < cluster.num_nodes(); ++k) {
        const NodeId node(k);
        if (node >= dom.begin && node < dom.end) {
          p.gpus += cluster.node(node).gpu_count;
        } else {
          BERTH_RETURN_IF_ERROR(p.sched->SetNodeUp(node, false));
        }
      }
      if (!by_name.emplace(dom.name, static_cast<int32_t>(parts.size())).second)
        return InvalidArgument(std::string("replay: two ") + cluster::LevelName(*opts.partition_level) +
                               " domains are named '" + dom.name + "'");
      parts.push_back(std::move(p));
    }
    for (size_t i = 0; i < n; ++i) {
      auto it = by_name.find(opts.partition_prefix + table.tenant(i));
      route[i] = it == by_name.end() || facts[i].min_gpus > parts[it->second].gpus ? -1 : it->second;
    }
  }

  PolicyResult r;
  r.policy = profile.name;
  r.mode = "replay";
  r.seed = opts.seed;
  r.jobs_total = static_cast<int64_t>(n);
  r.capacity_milli_gpu = cluster.total_milli_gpu();
  const double cap = static_cast<double>(r.capacity_milli_gpu);

  // Arrivals in submit order (ties: trace order).
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return facts[a].submit_time < facts[b].submit_time; });
  // The trace's arrivals are read from `order` as their times come, not
  // queued: at a time t they come before every queued event of t (as they
  // would, pushed first), so the queue holds only the events of jobs alive.
  EventQueue q;
  q.Reserve(1024);
  std::vector<int32_t> generation(n, 0);
  int64_t real_events = 0, expected_events = 0;
  for (int32_t i : order) {
    if (route[i] < 0 || (has_workflows && wf.held[i])) continue;
    ++real_events;
    expected_events += facts[i].duration >= 0 ? 2 : 1;
  }
  const TimeUs start = facts[order.front()].submit_time;
  const TimeUs last_submit = facts[order.back()].submit_time;
  std::erase_if(order, [&](int32_t i) { return route[i] < 0 || (has_workflows && wf.held[i]); });
  order.shrink_to_fit();
  size_t next_arrival = 0;  // in `order`
  auto has_next = [&] { return next_arrival < order.size() || !q.empty(); };
  auto next_time = [&] {
    if (next_arrival >= order.size()) return q.Top().time;
    const TimeUs a = facts[order[next_arrival]].submit_time;
    return q.empty() ? a : std::min(a, q.Top().time);
  };
  Sampler sampler(start, std::max<TimeUs>(kUsPerSecond, (last_submit - start) / opts.max_samples),
                  opts.max_samples);
  if (real_events > 0) q.Push(sampler.NextTick(), EventKind::kSample, 0);
  if (opts.until >= 0) {
    q.Push(start + opts.until, EventKind::kEnd, 0);
    ++real_events;
  }

  // The failure model: a handler over the partition schedulers, the timed
  // faults, and the generator's first fault.
  std::vector<scheduler::Scheduler*> scheds;
  for (Partition& p : parts) scheds.push_back(p.sched.get());
  std::optional<faults::FaultHandler> handler;
  std::optional<faults::FaultGenerator> generator;
  int32_t generated = -1;  // the generator's latest fault (its begin draws the next)
  if (opts.failures) {
    std::vector<int32_t> part_of_node;
    if (opts.partition_level) {
      part_of_node.assign(cluster.num_nodes(), 0);
      int32_t k = 0;
      for (DomainId d : cluster.domains_at(*opts.partition_level)) {
        for (int32_t node = cluster.domain(d).begin.value(); node < cluster.domain(d).end.value(); ++node)
          part_of_node[node] = k;
        ++k;
      }
    }
    faults::FaultOptions fo = opts.fault_options;
    fo.rates = opts.failures->rates;
    if (fo.largest_gang_gpus == 0)
      for (const auto& j : trace.jobs)
        if (j.num_tasks() > 1 && j.total_gpus() > fo.largest_gang_gpus) {
          fo.largest_gang_gpus = j.total_gpus();
          fo.largest_gang_restart_cost = j.restart_cost;
        }
    handler.emplace(cluster, std::move(fo), std::move(part_of_node));
    BERTH_RETURN_IF_ERROR(handler->Init(scheds));
    for (faults::Fault f : opts.failures->events) {
      f.at += start;
      const TimeUs at = f.at;
      q.Push(at, EventKind::kFault, handler->Add(std::move(f)), faults::kBegin);
    }
    if (!opts.failures->rates.empty()) {
      generator.emplace(cluster, opts.failures->rates, opts.seed, start);
      if (auto f = generator->Next()) {
        const TimeUs at = f->at;
        generated = handler->Add(std::move(*f));
        q.Push(at, EventKind::kFault, generated, faults::kBegin);
      }
    }
  }
  // Best-effort jobs submitted and not yet ended, for lending spares.
  const bool lending = handler && opts.fault_options.lend_spares;
  std::vector<int32_t> lend_waiting;
  // A job repaired in place works on: its completion moves.
  auto push_completion = [&](int32_t i, const scheduler::Scheduler& s, TimeUs run_start) {
    const scheduler::JobRecord* rec = s.Find(ids[i]);
    TimeUs d = facts[i].duration;
    if (d < 0) return;
    d = std::max<TimeUs>(0, d - rec->work_done);
    const double stretch = opts.runtime.Stretch(s.cluster(), rec->placements);
    if (stretch > 1.0) d = static_cast<TimeUs>(static_cast<double>(d) * stretch + 0.5);
    q.Push(run_start + d, EventKind::kCompletion, i, ++generation[i]);
    ++real_events;
  };

  // Jobs whose runtime follows their allocation (elastic_progress.h), and
  // the resize rounds of a policy that has them (framework ResizePlugin).
  ProgressTracker tracker(trace, ids);
  auto find_record = [&](int32_t i) -> const scheduler::JobRecord* {
    return route[i] < 0 ? nullptr : parts[route[i]].sched->Find(ids[i]);
  };
  auto push_tracked = [&](int32_t i, TimeUs at) {
    q.Push(at, EventKind::kCompletion, i, ++generation[i]);
    ++real_events;
  };
  TimeUs round_interval = 0;
  for (const Partition& p : parts)
    for (const auto* rp : p.sched->framework().resize()) round_interval = std::max(round_interval, rp->RoundInterval());
  int32_t gpus_per_node = 0;
  for (const auto& nd : cluster.nodes()) gpus_per_node = std::max(gpus_per_node, nd.gpu_count);
  auto run_rounds = [&](TimeUs t) -> Status {
    for (size_t k = 0; k < parts.size(); ++k) {
      scheduler::Scheduler& s = *parts[k].sched;
      if (s.framework().resize().empty()) continue;
      tracker.Sync(t, find_record, push_tracked);
      const std::vector<framework::ElasticJob> jobs = tracker.ElasticJobs(t, find_record, route, static_cast<int32_t>(k));
      const framework::SchedulerView view{s.state(), s.ledger(), s.running_jobs(), t, {}};
      framework::ResizeContext ctx{view, jobs, parts[k].gpus, gpus_per_node};
      for (auto* rp : s.framework().resize()) {
        std::vector<framework::SizeTarget> targets = rp->Round(ctx);
        // Shrinks and stops first, so that growths and starts find the room.
        auto current = [&](JobId id) {
          const scheduler::JobRecord* rec = s.Find(id);
          return rec && rec->state == JobState::kRunning ? static_cast<int32_t>(rec->placements.size()) : 0;
        };
        for (const auto& tg : targets) {
          const int32_t now_w = current(tg.job);
          if (now_w == 0 || tg.workers >= now_w) continue;
          if (tg.workers == 0) {
            BERTH_RETURN_IF_ERROR(s.Preempt(tg.job));
          } else {
            BERTH_RETURN_IF_ERROR(s.Resize(tg.job, tg.workers, rp->Name()));
          }
        }
        for (const auto& tg : targets) {
          const scheduler::JobRecord* rec = s.Find(tg.job);
          if (rec == nullptr) continue;
          const int32_t i = index_for(tg.job);
          if (rec->state == JobState::kPending && tg.workers > 0) {
            BERTH_RETURN_IF_ERROR(s.SetPendingSize(tg.job, tg.workers));
          } else if (rec->state == JobState::kRunning && tg.workers > current(tg.job)) {
            (void)s.Resize(tg.job, tg.workers, rp->Name());  // no room now: it keeps its size
          }
          if (tg.batch > 0) {
            tracker.Sync(t, find_record, push_tracked);
            tracker.SetBatch(i, tg.batch, t, find_record, push_tracked);
          }
        }
      }
      parts[k].touched = true;
    }
    return Status::Ok();
  };
  if (round_interval > 0 && real_events > 0) q.Push(start + round_interval, EventKind::kScheduleRound, 0);

  // A job that ends leaves its figures here (EndedJob) and the scheduler drops
  // its record, unless something reads records after jobs end (workflows,
  // failures, resize rounds, jobs timed by their allocation).
  const bool forget_ended =
      !opts.keep_records && !has_workflows && !handler && round_interval == 0 && !tracker.active();
  std::vector<EndedJob> ended_jobs(forget_ended ? n : 0);

  int64_t events_done = 0, next_progress = opts.progress_every;
  int64_t alloc_milli = 0;  // allocated now, all partitions
  double alloc_integral = 0;  // milli-GPU x us
  double used_gpu_time = 0;   // milli-GPU x us of completed runs
  TimeUs now = start, end = start;
  auto pending_now = [&] {
    int64_t s = 0;
    for (const auto& p : parts) s += static_cast<int64_t>(p.sched->pending_count());
    return s;
  };

  // Recoveries scheduled while jobs still had events keep the run going up to
  // their time when jobs wait (capacity is coming back); faults alone never
  // keep it alive, so a run with the generator still ends.
  TimeUs alive_until = -1;
  // Rounds keep a run alive while jobs wait for them, up to a bound of idle
  // rounds (nothing running) so that a job no round ever starts cannot stall it.
  int32_t idle_rounds = 0;
  auto rounds_pending = [&] { return round_interval > 0 && pending_now() > 0 && idle_rounds < 1000; };
  // A pass when a spent budget renews keeps the run going while jobs wait for
  // it, up to a bound of renewals in a row that start nothing.
  TimeUs budget_wake = -1;
  int32_t idle_renewals = 0;
  auto budget_pending = [&] { return budget_wake >= 0 && pending_now() > 0 && idle_renewals < 10000; };
  // A pass when a running job passes the min-runtime guard while a service
  // replica waits (Scheduler::NextGuardExpiry): it may evict the job then.
  TimeUs guard_wake = -1;
  auto guard_pending = [&] { return guard_wake >= 0 && pending_now() > 0; };
  while (real_events > 0 || (has_next() && next_time() <= alive_until && pending_now() > 0) || rounds_pending() ||
         budget_pending() || guard_pending()) {
    const TimeUs t = next_time();
    alloc_integral += static_cast<double>(alloc_milli) * static_cast<double>(t - now);
    now = t;
    clock.Set(t);
    if (handler) handler->Advance(t, scheds);
    bool sample_due = false, real = false, faulted = false, ended = false, round_due = false;
    auto arrive = [&](size_t i) -> Status {
      --real_events;
      ++events_done;
      real = true;
      job::JobSpec spec;
      if (feed) {
        BERTH_ASSIGN_OR_RETURN(spec, feed->Take(i));
      } else {
        spec = trace.jobs[i];
      }
      spec.id = ids[i];
      Partition& p = parts[route[i]];
      std::string name = feed ? spec.name : std::string();  // for an error: the spec moves into the scheduler
      Status s = p.sched->Submit(std::move(spec));
      if (!s.ok())
        return InvalidArgument("replay: job '" + (feed ? name : trace.jobs[i].name) + "': " + s.message());
      p.touched = true;
      if (lending && trace.jobs[i].best_effort) lend_waiting.push_back(static_cast<int32_t>(i));
      return Status::Ok();
    };
    for (; next_arrival < order.size() && facts[order[next_arrival]].submit_time == t; ++next_arrival)
      BERTH_RETURN_IF_ERROR(arrive(static_cast<size_t>(order[next_arrival])));
    while (!q.empty() && q.Top().time == t) {
      const SimEvent e = q.Pop();
      const auto i = static_cast<size_t>(e.subject);
      switch (e.kind) {
        case EventKind::kArrival:  // a workflow stage released
          BERTH_RETURN_IF_ERROR(arrive(i));
          break;
        case EventKind::kCompletion: {
          --real_events;
          ++events_done;
          real = true;
          if (e.generation != generation[i]) break;  // stale: preempted and restarted since
          Partition& p = parts[route[i]];
          const scheduler::JobRecord* rec = p.sched->Find(ids[i]);
          if (rec == nullptr || rec->state != JobState::kRunning) break;
          used_gpu_time += static_cast<double>(rec->spec.total_milli_gpu()) *
                           static_cast<double>(t - rec->start_time);
          const bool ok = !(has_workflows && wf.Fails(static_cast<int32_t>(i)));
          BERTH_RETURN_IF_ERROR(p.sched->Finish(ids[i], ok ? JobState::kSucceeded : JobState::kFailed));
          p.touched = true;
          if (forget_ended) {
            ended_jobs[i] = EndedJob::Of(*rec);
            BERTH_RETURN_IF_ERROR(p.sched->Forget(ids[i]));
          }
          if (has_workflows)
            for (int32_t k : wf.JobEnded(static_cast<int32_t>(i), ok, t)) {
              if (route[k] < 0) continue;  // counted as never fit; its workflow does not end
              q.Push(t, EventKind::kArrival, k);
              ++real_events;
              expected_events += facts[k].duration >= 0 ? 2 : 1;
            }
          break;
        }
        case EventKind::kSample:
          sample_due = true;
          break;
        case EventKind::kFault: {
          faulted = true;
          const auto f = static_cast<int32_t>(e.subject);
          StatusOr<faults::StepOutcome> o = handler->Step(f, e.generation, scheds);
          if (!o.ok()) return Internal("replay: fault: " + o.status().message());
          for (const faults::Wakeup& w : o->wakeups) {
            q.Push(w.at, EventKind::kFault, w.fault, w.phase);
            if (real_events > 0) alive_until = std::max(alive_until, w.at);
          }
          for (int32_t k : o->touched) parts[k].touched = true;
          for (const auto& [k, id] : o->repaired) {
            const scheduler::JobRecord* rec = parts[k].sched->Find(id);
            push_completion(index_for(id), *parts[k].sched, rec->start_time + rec->startup_delay);
          }
          if (f == generated && e.generation == faults::kBegin) {
            if (auto next = generator->Next()) {
              const TimeUs at = next->at;
              generated = handler->Add(std::move(*next));
              q.Push(at, EventKind::kFault, generated, faults::kBegin);
            }
          }
          break;
        }
        case EventKind::kEnd:
          --real_events;
          real = true;
          ended = true;
          break;
        case EventKind::kScheduleRound:
          round_due = true;
          break;
        case EventKind::kBudgetRenewal:
          if (e.time == budget_wake) budget_wake = -1;
          for (Partition& p : parts) p.touched = true;
          ++idle_renewals;
          break;
        case EventKind::kGuardExpiry:
          if (e.time == guard_wake) guard_wake = -1;
          for (Partition& p : parts) p.touched = true;
          break;
        case EventKind::kNodeUp:
          return Internal(std::string("replay: unexpected ") + EventKindName(e.kind) + " event");
      }
    }
    if (round_due) {
      BERTH_RETURN_IF_ERROR(run_rounds(t));
      if (real_events > 0 || pending_now() > 0) q.Push(t + round_interval, EventKind::kScheduleRound, 0);
    }
    bool passed = false;
    for (Partition& p : parts) {
      if (!p.touched) continue;
      p.touched = false;
      passed = true;
      r.pending_max = std::max<int64_t>(r.pending_max, static_cast<int64_t>(p.sched->pending_count()));
      const auto pass_start = std::chrono::steady_clock::now();
      std::vector<JobId> started = p.sched->Schedule();
      const double pass_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - pass_start).count();
      ++r.passes;
      pass_ms_sum += pass_ms;
      r.pass_max_ms = std::max(r.pass_max_ms, pass_ms);
      for (JobId id : started) {
        idle_renewals = 0;
        const int32_t i = index_for(id);
        if (has_workflows)  // a service stage is deployed: the stages after it arrive
          for (int32_t k : wf.JobStarted(i, t)) {
            if (route[k] < 0) continue;
            q.Push(t, EventKind::kArrival, k);
            ++real_events;
            expected_events += facts[k].duration >= 0 ? 2 : 1;
          }
        if (tracker.Tracks(i)) continue;  // timed by the tracker below
        TimeUs d = facts[i].duration;
        if (d < 0) continue;  // never completes
        const scheduler::JobRecord* rec = p.sched->Find(id);
        d = std::max<TimeUs>(0, d - rec->work_done);  // resumes from its last checkpoint
        const double stretch = opts.runtime.Stretch(p.sched->cluster(), rec->placements);
        if (stretch > 1.0) {
          d = static_cast<TimeUs>(static_cast<double>(d) * stretch + 0.5);
          ++r.jobs_stretched;
        }
        q.Push(t + rec->startup_delay + d, EventKind::kCompletion, i, ++generation[i]);
        ++real_events;
      }
    }
    // Spares lent to the best-effort jobs the passes left waiting.
    if (lending && passed && !lend_waiting.empty()) {
      std::erase_if(lend_waiting, [&](int32_t i) {
        const job::JobState st = find_record(i)->state;
        return st != JobState::kPending && st != JobState::kRunning;
      });
      std::vector<std::pair<int32_t, JobId>> candidates;
      for (int32_t i : lend_waiting)
        if (find_record(i)->state == JobState::kPending) candidates.push_back({route[i], ids[i]});
      BERTH_ASSIGN_OR_RETURN(auto lent, handler->Lend(candidates, scheds));
      for (const auto& [k, id] : lent) {
        const scheduler::JobRecord* rec = parts[k].sched->Find(id);
        push_completion(index_for(id), *parts[k].sched, rec->start_time + rec->startup_delay);
      }
    }
    for (const Partition& p : parts) {
      const TimeUs w = p.sched->NextBudgetRenewal(t);
      if (w > t && (budget_wake < 0 || w < budget_wake)) {
        budget_wake = w;
        q.Push(w, EventKind::kBudgetRenewal, 0);
      }
      const TimeUs g = p.sched->NextGuardExpiry(t);
      if (g > t && (guard_wake < 0 || g < guard_wake)) {
        guard_wake = g;
        q.Push(g, EventKind::kGuardExpiry, 0);
      }
    }
    if (tracker.active()) tracker.Sync(t, find_record, push_tracked);
    if (round_due) {
      size_t running = 0;
      for (const auto& p : parts) running += p.sched->running_count();
      idle_rounds = running == 0 ? idle_rounds + 1 : 0;
    }
    if (real || faulted || round_due) {
      if (real) end = t;
      alloc_milli = 0;
      for (const auto& p : parts) alloc_milli += p.sched->state().allocated_milli();
    }
    if (sample_due) {
      sampler.Tick(100.0 * static_cast<double>(alloc_milli) / cap, static_cast<double>(pending_now()));
      if (real_events > 0) q.Push(sampler.NextTick(), EventKind::kSample, 0);
    }
    if (ended) break;
    if (opts.progress && events_done >= next_progress) {
      opts.progress(events_done, expected_events);
      next_progress = events_done + opts.progress_every;
    }
  }
  sampler.Finish(end, 100.0 * static_cast<double>(alloc_milli) / cap, static_cast<double>(pending_now()));
  // A workflow stage's submit time is its release (set in wf.trace as it came).
  if (has_workflows)
    for (size_t i = 0; i < n; ++i) own_table.jobs[i].submit_time = trace.jobs[i].submit_time;
  if (opts.progress) opts.progress(expected_events, expected_events);

  // Per-job figures, from the schedulers' records or the figures kept of the ended jobs.
  scheduler::JobRecord rebuilt;
  auto record_of = [&](size_t i) -> const scheduler::JobRecord* {
    if (route[i] < 0) return nullptr;
    if (!ended_jobs.empty() && ended_jobs[i].kept) {
      ended_jobs[i].Into(rebuilt);
      return &rebuilt;
    }
    return parts[route[i]].sched->Find(ids[i]);
  };
  std::vector<double> jct, delay, pending;
  jct.reserve(n);
  delay.reserve(n);
  if (has_workflows) {
    for (size_t i = 0; i < n; ++i)
      if (wf.held[i]) {
        route[i] = -2;  // never released: not a job of the run
        --r.jobs_total;
      }
    r.workflows = wf.Figures();
  }
  for (size_t i = 0; i < n; ++i) {
    if (route[i] < -1) continue;
    if (route[i] < 0) {
      ++r.jobs_failed;
      ++r.jobs_never_fit;
      continue;
    }
    const scheduler::JobRecord* rec = record_of(i);
    if (rec == nullptr) {
      // Arrives after --until: counted as unfinished.
      if (opts.until >= 0) {
        ++r.jobs_unfinished;
        continue;
      }
      return Internal("replay: job " + std::to_string(ids[i].value()) + " was never submitted");
    }
    const TimeUs submit = facts[i].submit_time;
    r.preemptions += rec->preemptions;
    r.gpu_hours_lost += rec->lost_gpu_seconds / 3600.0;
    if (rec->first_start_time >= 0) {
      ++r.jobs_placed;
      delay.push_back(UsToSeconds(rec->first_start_time - submit));
    }
    if (rec->state == JobState::kSucceeded) {
      jct.push_back(UsToSeconds(rec->finish_time - submit));
      const double gpus = std::max(1e-3, static_cast<double>(facts[i].milli_gpu) / kMilliPerGpu);
      pending.push_back(std::max(0.0, jct.back() - rec->attained_gpu_seconds / gpus));
    } else if (rec->state == JobState::kFailed) {
      ++r.jobs_failed;
      if (rec->last_verdict.code == framework::VerdictCode::kUnresolvable) ++r.jobs_never_fit;
    } else {
      ++r.jobs_unfinished;
    }
  }
  if (handler) handler->Finish(std::max(end, now), scheds);
  if (handler) FillFailureFigures(trace, ids, route, scheds, *handler, end, alloc_integral, r);
  // The JCT CDF: at most max_samples evenly spaced order statistics (read
  // before the summary takes the list, which it sorts the same way).
  std::sort(jct.begin(), jct.end());
  const size_t keep = std::min(jct.size(), static_cast<size_t>(opts.max_samples));
  for (size_t k = 0; k < keep; ++k) r.jcts_s.push_back(jct[keep < 2 ? 0 : k * (jct.size() - 1) / (keep - 1)]);
  r.jct_s = Summarize(std::move(jct));
  r.queue_delay_s = Summarize(std::move(delay));
  r.pending_s = Summarize(std::move(pending));

  {
    std::vector<const scheduler::Scheduler*> scheds;
    for (const Partition& p : parts) scheds.push_back(p.sched.get());
    const ReplayRecords records{cluster, table, ids, route, scheds, start, end, opts.speeds.get(), record_of};
    FillTenantFigures(records, r);
    FillBudgetFigures(records, r);
  }
  r.makespan_s = UsToSeconds(end - start);
  r.allocated_milli_gpu = alloc_milli;
  const double span = static_cast<double>(end - start);
  r.gpu_allocation_ratio = span > 0 ? alloc_integral / (cap * span) : static_cast<double>(alloc_milli) / cap;
  r.utilization = span > 0 ? used_gpu_time / (cap * span) : 0;
  r.allocation_over_time = sampler.TakeAllocation();
  r.queue_length_over_time = sampler.TakeQueue();

  if (parts.size() == 1) {
    r.decision_log_hash = parts[0].sched->log().HashHex();
    r.decisions = parts[0].sched->log().entries();
  } else {
    StableHash h;
    for (size_t k = 0; k < parts.size(); ++k) {
      h.Add(parts[k].name);
      h.AddInt(static_cast<int64_t>(parts[k].sched->log().hash()));
      r.decisions += parts[k].sched->log().entries();
    }
    r.decision_log_hash = h.Hex();
  }
  {
    // Plugin counters over the partitions: sums, or the largest for "_max" figures.
    std::map<std::string, double> merged;
    for (const auto& p : parts) {
      framework::PluginCounters counters;
      CollectCounters(p.sched->framework(), counters);
      for (const auto& [name, value] : counters) {
        auto [it, fresh] = merged.emplace(name, value);
        if (fresh) continue;
        it->second = name.find("_max") != std::string::npos ? std::max(it->second, value) : it->second + value;
      }
    }
    r.plugin_counters.assign(merged.begin(), merged.end());
  }
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  r.pass_mean_ms = r.passes > 0 ? pass_ms_sum / static_cast<double>(r.passes) : 0.0;
  return r;
}

}  // namespace

StatusOr<PolicyResult> RunReplay(const cluster::Cluster& cluster, const Trace& trace,
                                 const framework::Profile& profile, const framework::PluginRegistry& registry,
                                 const ReplayOptions& options) {
  return Replay(cluster, &trace, nullptr, profile, registry, options);
}

StatusOr<PolicyResult> RunReplay(const cluster::Cluster& cluster, const StreamedTrace& trace,
                                 const framework::Profile& profile, const framework::PluginRegistry& registry,
                                 const ReplayOptions& options) {
  return Replay(cluster, nullptr, &trace, profile, registry, options);
}

}  // namespace berth::sim
