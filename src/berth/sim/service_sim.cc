// The services-beside-batch simulation driver.
#include "berth/sim/service_sim.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <queue>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "berth/common/clock.h"
#include "berth/scheduler/scheduler.h"
#include "berth/sim/service_colocation.h"
#include "berth/workload/profile.h"
#include "berth/workload/service_controller.h"

namespace berth::sim {
namespace {

constexpr TimeUs kMinute = 60 * kUsPerSecond;
enum Kind : int { kArrive = 0, kComplete = 1, kTick = 2, kServiceArrive = 3, kServiceEnd = 4 };

struct Ev {
  TimeUs at;
  int64_t seq;
  int kind;
  int64_t subject;
  int64_t generation;
  bool operator>(const Ev& o) const { return std::tie(at, seq) > std::tie(o.at, o.seq); }
};

// One service during a run.
struct Live {
  const SimService* cfg = nullptr;
  JobId id;
  std::vector<int64_t> milli_rps;  // per minute of the run
  int64_t capacity = 0;            // milli-rps one replica serves at most
  int64_t target = 0;              // milli-rps per replica at the target
  int32_t last_desired = -1;
  ServiceFigures fig;
};

double P99(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t k = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(v.size()))) - 1;
  return v[std::min(k, v.size() - 1)];
}

}  // namespace

const char* ScalingModeName(ScalingMode m) {
  switch (m) {
    case ScalingMode::kStatic: return "static";
    case ScalingMode::kReactive: return "reactive";
    case ScalingMode::kPredictive: return "predictive";
  }
  return "reactive";
}

bool ParseScalingMode(const std::string& s, ScalingMode& out) {
  if (s == "static") out = ScalingMode::kStatic;
  else if (s == "reactive") out = ScalingMode::kReactive;
  else if (s == "predictive") out = ScalingMode::kPredictive;
  else return false;
  return true;
}

StatusOr<ServiceSimResult> RunServiceSim(const cluster::Cluster& cluster, const Trace& batch,
                                         const ServiceSimConfig& config, const framework::Profile& profile,
                                         const framework::PluginRegistry& registry, const ServiceSimOptions& opts) {
  if (config.repeat < 1) return InvalidArgument("services: repeat must be at least 1");

  // Loads and per-replica capacities.
  std::vector<Live> live(config.services.size());
  int64_t minutes = 0;
  for (size_t k = 0; k < live.size(); ++k) {
    Live& l = live[k];
    l.cfg = &config.services[k];
    BERTH_ASSIGN_OR_RETURN(RequestTrace t, ReadRequestTrace(l.cfg->load_trace));
    const int64_t peak = *std::max_element(t.per_minute.begin(), t.per_minute.end());
    const double scale = l.cfg->peak_rps > 0 ? l.cfg->peak_rps * 60.0 / static_cast<double>(peak) : 1.0;
    for (int32_t r = 0; r < config.repeat; ++r)
      for (int64_t c : t.per_minute) l.milli_rps.push_back(std::llround(static_cast<double>(c) * scale * 1000.0 / 60.0));
    minutes = std::max<int64_t>(minutes, static_cast<int64_t>(l.milli_rps.size()));
    l.capacity = l.cfg->serving.CapacityMilliRps(t.mean_context_tokens, t.mean_generated_tokens);
    job::ServiceSpec s = *l.cfg->spec.service;
    if (s.target_utilization_pct > 0) s.capacity_milli_rps = l.capacity;
    l.target = s.per_replica_target();
    if (l.target <= 0) return InvalidArgument("service '" + l.cfg->spec.name + "': no scaling target");
    l.fig.name = l.cfg->spec.name;
    l.fig.capacity_per_replica_rps = static_cast<double>(l.capacity) / 1000.0;
    l.fig.target_per_replica_rps = static_cast<double>(l.target) / 1000.0;
    const int64_t peak_load = *std::max_element(l.milli_rps.begin(), l.milli_rps.end());
    l.fig.peak_load_rps = static_cast<double>(peak_load) / 1000.0;
    l.fig.peak_replicas = static_cast<int32_t>(
        std::clamp<int64_t>((peak_load + l.target - 1) / l.target, std::max(1, s.min_replicas), s.max_replicas));
  }
  TimeUs end = minutes * kMinute;

  // The trace's jobs: openb pods by qos, then the window (rebased to its start).
  std::vector<job::JobSpec> source = batch.jobs;
  if (batch.format == "openb" && config.openb_qos) MapOpenbQos(source);
  const bool windowed = config.window_to >= 0 || config.window_from > 0;
  if (windowed) {
    source = WindowJobs(source, config.window_from, config.window_to);
    if (config.window_to >= 0) end = std::max(end, config.window_to - config.window_from);
  }
  bool any_trace_service = false;
  for (const auto& j : source) any_trace_service = any_trace_service || j.service.has_value();
  if (live.empty() && !any_trace_service)
    return InvalidArgument("services: no services with a load and no services in the trace to simulate");
  if (end <= 0) return InvalidArgument("services: no load trace and no trace window (window_s) to set the run's length");

  // The batch jobs that arrive within the run, rebased to its start.
  std::vector<job::JobSpec> jobs;
  TimeUs first = -1;
  for (const auto& j : source) first = first < 0 ? j.submit_time : std::min(first, j.submit_time);
  if (windowed) first = 0;
  std::vector<job::JobSpec> trace_services;  // kind: service lines of the trace (no load: their replicas stay)
  for (const auto& j : source) {
    job::JobSpec b = j;
    if (j.service) {
      b.submit_time -= first;
      if (b.submit_time < end) trace_services.push_back(std::move(b));
      continue;
    }
    b.submit_time -= first;
    if (b.submit_time >= end) continue;
    if (b.checkpoint_interval < 0 && !b.best_effort) b.checkpoint_interval = config.checkpoint_interval;
    jobs.push_back(std::move(b));
  }

  // The scheduler: the policy's profile with the service plugins.
  ManualClock clock(0);
  framework::PluginContext context;
  std::vector<job::JobSpec> workload = jobs;
  for (const Live& l : live)
    for (int32_t r = 0; r < l.fig.peak_replicas; ++r) workload.push_back(l.cfg->spec);
  if (opts.colocation != ColocationMode::kNone)
    for (const job::JobSpec& s : trace_services) workload.push_back(s);
  context.cluster = &cluster;
  context.workload = workload;
  scheduler::SchedulerOptions so;
  so.seed = opts.seed;
  so.check_indexes = opts.check_indexes;
  so.preemption_grace = opts.preemption_grace;
  framework::Profile run_profile = workload::WithServicePlugins(profile);
  BERTH_RETURN_IF_ERROR(ApplyColocation(config.colocation, opts.colocation, cluster, run_profile, so));
  BERTH_ASSIGN_OR_RETURN(std::unique_ptr<framework::Framework> fw,
                         framework::Framework::Create(run_profile, registry, context));
  scheduler::Scheduler sched(cluster, std::move(fw), so, clock);

  int64_t next_id = 0;
  std::unordered_map<JobId, int32_t> batch_index;  // looked up only
  for (size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].id = JobId(next_id++);
    batch_index[jobs[i].id] = static_cast<int32_t>(i);
  }
  workload::ControllerOptions co;
  co.autoscaler = config.autoscaler;
  co.autoscaler.forecast = opts.mode == ScalingMode::kPredictive
                               ? (config.autoscaler.forecast == workload::ForecastKind::kNone ? workload::ForecastKind::kHolt
                                                                                            : config.autoscaler.forecast)
                               : workload::ForecastKind::kNone;
  co.new_id = [&next_id] { return JobId(next_id++); };
  BERTH_RETURN_IF_ERROR(co.Validate());
  workload::ServiceController ctl(co);
  for (Live& l : live) {
    job::JobSpec s = l.cfg->spec;
    s.id = JobId(next_id++);
    if (s.service->target_utilization_pct > 0) s.service->capacity_milli_rps = l.capacity;
    if (opts.mode == ScalingMode::kStatic) {
      s.service->replicas = s.service->min_replicas = s.service->max_replicas = l.fig.peak_replicas;
    } else {
      s.service->replicas = std::clamp(static_cast<int32_t>((l.milli_rps[0] + l.target - 1) / l.target),
                                       s.service->min_replicas, s.service->max_replicas);
    }
    l.id = s.id;
    BERTH_RETURN_IF_ERROR(ctl.Add(s, 0));
  }

  std::priority_queue<Ev, std::vector<Ev>, std::greater<Ev>> q;
  int64_t seq = 0;
  auto push = [&](TimeUs at, int kind, int64_t subject, int64_t gen) { q.push({at, seq++, kind, subject, gen}); };
  for (size_t i = 0; i < jobs.size(); ++i) push(jobs[i].submit_time, kArrive, static_cast<int64_t>(i), 0);
  for (size_t i = 0; i < trace_services.size(); ++i) {
    trace_services[i].id = JobId(next_id++);
    push(trace_services[i].submit_time, kServiceArrive, static_cast<int64_t>(i), 0);
    if (trace_services[i].duration >= 0)
      push(trace_services[i].submit_time + trace_services[i].duration, kServiceEnd, static_cast<int64_t>(i), 0);
  }
  for (TimeUs t = 0; t <= end; t += co.autoscaler.period) push(t, kTick, 0, 0);
  for (TimeUs t = 0; t <= end; t += kMinute) push(t, kTick, 0, 0);
  std::vector<int64_t> generation(jobs.size(), 0);

  ServiceSimResult r;
  r.mode = ScalingModeName(opts.mode);
  r.policy = profile.name;
  r.duration_s = UsToSeconds(end);
  r.batch_jobs = static_cast<int64_t>(jobs.size());
  r.colocation = ColocationModeName(opts.colocation);
  r.trace_services = static_cast<int64_t>(trace_services.size());
  const bool colocating = opts.colocation != ColocationMode::kNone;
  if (colocating) r.reserved_gpus = ReservedGpus(config.colocation, cluster);
  if (opts.colocation == ColocationMode::kColocate)
    r.yield_bound_s = UsToSeconds(std::max({config.colocation.best_effort_deadline, config.colocation.training_grace,
                                            opts.preemption_grace}));
  std::vector<double> yields;
  std::map<JobId, bool> yield_seen;
  double alloc_integral = 0;
  TimeUs prev = 0;
  std::vector<int32_t> active_trace_services;  // indexes into trace_services, in arrival order
  std::map<JobId, bool> counted_wait;          // replicas whose wanted-to-working time is taken (colocation modes)

  auto serving_of = [&](const Live& l, TimeUs now, int32_t& placed) {
    int32_t serving = 0;
    placed = 0;
    const auto st = ctl.Find(l.id);
    if (!st) return 0;
    for (JobId id : st->replicas) {
      const scheduler::JobRecord* rec = sched.Find(id);
      if (rec == nullptr || rec->state != job::JobState::kRunning) continue;
      ++placed;
      if (now >= rec->start_time + rec->startup_delay) ++serving;
    }
    return serving;
  };
  auto integrate = [&](TimeUs from, TimeUs to) {
    if (to <= from) return;
    const double dt = UsToSeconds(to - from);
    alloc_integral += static_cast<double>(sched.state().allocated_milli()) * dt;
    for (Live& l : live) {
      int32_t placed = 0;
      const int32_t serving = serving_of(l, from, placed);
      const int64_t minute = std::min<int64_t>(from / kMinute, static_cast<int64_t>(l.milli_rps.size()) - 1);
      const int64_t load = l.milli_rps[minute];
      l.fig.replica_seconds += placed * dt;
      if (int64_t{serving} * l.capacity < load) l.fig.under_capacity_s += dt;
      if (int64_t{serving} * l.target < load) l.fig.under_target_s += dt;
      const auto st = ctl.Find(l.id);
      const int32_t desired = st ? st->desired : 0;
      if (desired > placed) {
        l.fig.service_shortfall_replica_s += (desired - placed) * dt;
        if (l.cfg->spec.service->latency_class == job::LatencyClass::kCritical)
          r.critical_shortfall_replica_s += (desired - placed) * dt;
      }
    }
    for (int32_t i : active_trace_services) {
      const auto st = ctl.Find(trace_services[i].id);
      if (!st) continue;
      r.trace_service_replica_seconds += st->running * dt;
      if (st->desired <= st->running) continue;
      r.trace_service_shortfall_replica_s += (st->desired - st->running) * dt;
      if (trace_services[i].service->latency_class == job::LatencyClass::kCritical)
        r.critical_shortfall_replica_s += (st->desired - st->running) * dt;
    }
  };
  auto settle = [&](TimeUs now) -> Status {
    for (int round = 0; round < 8; ++round) {
      workload::ControllerActions a = ctl.Tick(sched, now);
      for (JobId id : a.stop) BERTH_RETURN_IF_ERROR(sched.Finish(id, job::JobState::kCancelled));
      for (auto& spec : a.start) BERTH_RETURN_IF_ERROR(sched.Submit(std::move(spec)));
      const std::vector<JobId> started = sched.Schedule();
      for (JobId v : sched.preempted_in_last_pass()) {
        const scheduler::JobRecord* vr = sched.Find(v);
        const JobId by = vr->preempted_by;
        if (!by.valid() || !ctl.ServiceOf(by).valid() || yield_seen[by]) continue;
        yield_seen[by] = true;
        const scheduler::JobRecord* pr = sched.Find(by);
        yields.push_back(UsToSeconds(pr->start_time + pr->startup_delay - pr->enqueue_time));
      }
      for (JobId id : started) {
        const scheduler::JobRecord* rec = sched.Find(id);
        if (rec->startup_delay > 0) push(now + rec->startup_delay, kTick, 0, 0);
        // Co-location: every replica that did not work the moment it was wanted.
        if (colocating && ctl.ServiceOf(id).valid() && !counted_wait[id] &&
            rec->start_time + rec->startup_delay > rec->enqueue_time) {
          counted_wait[id] = true;
          if (!yield_seen[id]) yields.push_back(UsToSeconds(rec->start_time + rec->startup_delay - rec->enqueue_time));
          yield_seen[id] = true;
        }
        auto it = batch_index.find(id);
        if (it == batch_index.end()) continue;
        const int32_t i = it->second;
        if (jobs[i].duration < 0) continue;
        const TimeUs d = std::max<TimeUs>(0, jobs[i].duration - rec->work_done);
        push(now + rec->startup_delay + d, kComplete, i, ++generation[i]);
      }
      if (a.empty() && started.empty()) break;
    }
    return Status::Ok();
  };

  // The pending replicas of every service (live and from the trace), until `fn` returns true.
  auto each_pending_replica = [&](auto&& fn) {
    std::vector<JobId> services;
    for (const Live& l : live) services.push_back(l.id);
    for (int32_t i : active_trace_services) services.push_back(trace_services[i].id);
    for (JobId s : services) {
      const auto st = ctl.Find(s);
      if (!st) continue;
      for (JobId id : st->replicas) {
        const scheduler::JobRecord* rec = sched.Find(id);
        if (rec != nullptr && rec->state == job::JobState::kPending && fn(id, *rec)) return true;
      }
    }
    return false;
  };
  TimeUs woken_at = -1;  // the guard expiry a wake-up is queued for
  while (!q.empty() && q.top().at <= end) {
    const TimeUs t = q.top().at;
    integrate(prev, t);
    prev = t;
    clock.Set(t);
    while (!q.empty() && q.top().at == t) {
      const Ev e = q.top();
      q.pop();
      if (e.kind == kServiceArrive) {
        BERTH_RETURN_IF_ERROR(ctl.Add(trace_services[e.subject], t));
        active_trace_services.push_back(static_cast<int32_t>(e.subject));
      } else if (e.kind == kServiceEnd) {
        BERTH_RETURN_IF_ERROR(ctl.Remove(trace_services[e.subject].id));
        std::erase(active_trace_services, static_cast<int32_t>(e.subject));
      } else if (e.kind == kArrive) {
        BERTH_RETURN_IF_ERROR(sched.Submit(jobs[e.subject]));
      } else if (e.kind == kComplete) {
        if (e.generation != generation[e.subject]) continue;
        const scheduler::JobRecord* rec = sched.Find(jobs[e.subject].id);
        if (rec == nullptr || rec->state != job::JobState::kRunning) continue;
        BERTH_RETURN_IF_ERROR(sched.Finish(jobs[e.subject].id, job::JobState::kSucceeded));
      }
    }
    if (t % kMinute == 0 && t < end)
      for (const Live& l : live) BERTH_RETURN_IF_ERROR(ctl.ReportLoad(l.id, l.milli_rps[t / kMinute], t));
    BERTH_RETURN_IF_ERROR(settle(t));
    // A replica still waiting may wait only for the min-runtime guard of the
    // work it would evict: wake when the next guard expires, not at the
    // next event (up to an autoscaler period later).
    if (const TimeUs next = sched.NextGuardExpiry(t); next > 0 && next < end && next != woken_at) {
      push(next, kTick, 0, 0);
      woken_at = next;
    }
    for (Live& l : live) {
      const auto st = ctl.Find(l.id);
      if (!st) continue;
      if (st->desired != l.last_desired) {
        if (l.last_desired >= 0) ++l.fig.scale_events;
        l.last_desired = st->desired;
      }
      l.fig.max_placed = std::max(l.fig.max_placed, st->running);
    }
  }
  integrate(prev, end);
  if (colocating) {
    // Replicas still waiting at the end: wanted since their enqueue.
    each_pending_replica([&](JobId id, const scheduler::JobRecord& rec) {
      if (!yield_seen[id]) yields.push_back(UsToSeconds(end - rec.enqueue_time));
      return false;
    });
  }

  // Figures.
  double jct = 0, be_jct = 0;
  double held = 0, lost = 0;
  for (const job::JobSpec& j : jobs) {
    const scheduler::JobRecord* rec = sched.Find(j.id);
    if (rec == nullptr) continue;
    r.batch_preemptions += rec->preemptions;
    lost += rec->lost_gpu_seconds;
    double h = rec->attained_gpu_seconds;
    if (rec->state == job::JobState::kRunning)
      h += static_cast<double>(j.total_milli_gpu()) / kMilliPerGpu * UsToSeconds(end - rec->start_time);
    held += h;
    if (rec->state == job::JobState::kSucceeded) {
      ++r.batch_finished;
      jct += UsToSeconds(rec->finish_time - j.submit_time);
    }
    if (j.best_effort) {
      ++r.best_effort_jobs;
      r.best_effort_preemptions += rec->preemptions;
      if (rec->state == job::JobState::kSucceeded) {
        ++r.best_effort_finished;
        be_jct += UsToSeconds(rec->finish_time - j.submit_time);
      }
    }
  }
  r.best_effort_jct_mean_s = r.best_effort_finished > 0 ? be_jct / static_cast<double>(r.best_effort_finished) : 0;
  r.batch_jct_mean_s = r.batch_finished > 0 ? jct / static_cast<double>(r.batch_finished) : 0;
  r.batch_gpu_hours = held / 3600.0;
  r.batch_lost_gpu_hours = lost / 3600.0;
  r.batch_goodput = held > 0 ? std::max(0.0, held - lost) / held : 1.0;
  r.yields = static_cast<int64_t>(yields.size());
  r.yield_p99_s = P99(yields);
  for (double y : yields) r.yield_max_s = std::max(r.yield_max_s, y);
  r.gpu_allocation_ratio = end > 0 ? alloc_integral / (static_cast<double>(cluster.total_milli_gpu()) * UsToSeconds(end)) : 0;
  for (Live& l : live) {
    l.fig.static_peak_replica_seconds = static_cast<double>(l.fig.peak_replicas) * UsToSeconds(end);
    r.services.push_back(l.fig);
  }
  r.decision_log_hash = sched.log().HashHex();
  return r;
}

std::string ServiceResultsToJson(const std::vector<ServiceSimResult>& results) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& r : results) {
    nlohmann::ordered_json o;
    o["mode"] = r.mode;
    o["policy"] = r.policy;
    if (r.colocation != "none") o["colocation"] = r.colocation;
    o["duration_s"] = r.duration_s;
    double shortfall = 0;
    nlohmann::ordered_json services = nlohmann::ordered_json::array();
    for (const auto& s : r.services) {
      nlohmann::ordered_json so;
      so["name"] = s.name;
      so["capacity_per_replica_rps"] = s.capacity_per_replica_rps;
      so["target_per_replica_rps"] = s.target_per_replica_rps;
      so["peak_load_rps"] = s.peak_load_rps;
      so["peak_replicas"] = s.peak_replicas;
      so["max_placed"] = s.max_placed;
      so["replica_seconds"] = s.replica_seconds;
      so["static_peak_replica_seconds"] = s.static_peak_replica_seconds;
      so["under_capacity_s"] = s.under_capacity_s;
      so["under_target_s"] = s.under_target_s;
      so["service_shortfall_replica_s"] = s.service_shortfall_replica_s;
      so["scale_events"] = s.scale_events;
      shortfall += s.service_shortfall_replica_s;
      services.push_back(std::move(so));
    }
    o["services"] = std::move(services);
    const bool coloc = r.colocation != "none";
    if (coloc || r.trace_services > 0) {
      o["trace_services"] = r.trace_services;
      o["trace_service_replica_seconds"] = r.trace_service_replica_seconds;
      o["trace_service_shortfall_replica_s"] = r.trace_service_shortfall_replica_s;
      shortfall += r.trace_service_shortfall_replica_s;
    }
    o["service_shortfall_replica_s"] = shortfall;
    if (coloc) {
      o["critical_shortfall_replica_s"] = r.critical_shortfall_replica_s;
      o["reserved_gpus"] = r.reserved_gpus;
      o["yield_bound_s"] = r.yield_bound_s;
      o["yield_max_s"] = r.yield_max_s;
    }
    o["yield_p99_s"] = r.yield_p99_s;
    o["yields"] = r.yields;
    o["batch_goodput"] = r.batch_goodput;
    o["batch_jobs"] = r.batch_jobs;
    o["batch_finished"] = r.batch_finished;
    o["batch_jct_mean_s"] = r.batch_jct_mean_s;
    o["batch_gpu_hours"] = r.batch_gpu_hours;
    o["batch_lost_gpu_hours"] = r.batch_lost_gpu_hours;
    o["batch_preemptions"] = r.batch_preemptions;
    if (coloc) {
      o["best_effort_jobs"] = r.best_effort_jobs;
      o["best_effort_finished"] = r.best_effort_finished;
      o["best_effort_jct_mean_s"] = r.best_effort_jct_mean_s;
      o["best_effort_preemptions"] = r.best_effort_preemptions;
    }
    o["gpu_allocation_ratio"] = r.gpu_allocation_ratio;
    o["decision_log_hash"] = r.decision_log_hash;
    out.push_back(std::move(o));
  }
  return out.dump(2);
}

std::string ServiceResultsText(const std::vector<ServiceSimResult>& results) {
  std::ostringstream s;
  char buf[512];
  for (const auto& r : results) {
    std::snprintf(buf, sizeof buf,
                  "%s (%s): %.0f s; batch %lld/%lld finished, mean JCT %.0f s, %.1f GPU-h held, goodput %.4f, "
                  "%lld preemptions; yield p99 %.1f s (%lld); GPU allocation %.3f\n",
                  r.mode.c_str(), r.policy.c_str(), r.duration_s, static_cast<long long>(r.batch_finished),
                  static_cast<long long>(r.batch_jobs), r.batch_jct_mean_s, r.batch_gpu_hours, r.batch_goodput,
                  static_cast<long long>(r.batch_preemptions), r.yield_p99_s, static_cast<long long>(r.yields),
                  r.gpu_allocation_ratio);
    s << buf;
    if (r.colocation != "none") {
      std::snprintf(buf, sizeof buf,
                    "  colocation %s: %lld reserved GPUs; %lld trace services, shortfall %.0f replica-s (critical %.0f); "
                    "yield p99 %.1f s, max %.1f s (bound %.0f s); best effort %lld/%lld finished, mean JCT %.0f s, "
                    "%lld preemptions\n",
                    r.colocation.c_str(), static_cast<long long>(r.reserved_gpus),
                    static_cast<long long>(r.trace_services), r.trace_service_shortfall_replica_s,
                    r.critical_shortfall_replica_s, r.yield_p99_s, r.yield_max_s, r.yield_bound_s,
                    static_cast<long long>(r.best_effort_finished), static_cast<long long>(r.best_effort_jobs),
                    r.best_effort_jct_mean_s, static_cast<long long>(r.best_effort_preemptions));
      s << buf;
    }
    for (const auto& f : r.services) {
      std::snprintf(buf, sizeof buf,
                    "  %s: %.0f replica-s (static peak %.0f = %d x run), under capacity %.0f s, under target %.0f s, "
                    "shortfall %.0f replica-s, %lld scale events; capacity %.2f rps/replica, target %.2f, peak %.1f rps\n",
                    f.name.c_str(), f.replica_seconds, f.static_peak_replica_seconds, f.peak_replicas,
                    f.under_capacity_s, f.under_target_s, f.service_shortfall_replica_s,
                    static_cast<long long>(f.scale_events), f.capacity_per_replica_rps, f.target_per_replica_rps,
                    f.peak_load_rps);
      s << buf;
    }
  }
  return s.str();
}

}  // namespace berth::sim
