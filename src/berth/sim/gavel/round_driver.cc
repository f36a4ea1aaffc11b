// The round-based Gavel driver (see round_driver.h).
#include "berth/sim/gavel/round_driver.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>

#include "berth/common/rng.h"
#include "berth/hetero/allocation_policy.h"
#include "berth/plugins/builtin.h"
#include "berth/scheduler/scheduler.h"
#include "berth/sim/gavel/mechanism.h"
#include "berth/sim/gavel/round_gate.h"

namespace berth::sim::gavel {
namespace {

constexpr TimeUs ToUs(double s) { return static_cast<TimeUs>(std::llround(s * 1e6)); }

enum class Phase : int8_t { kFuture, kActive, kDone, kFailed };

struct JobState {
  Phase phase = Phase::kFuture;
  int16_t running_type = -1;
  bool consolidated = true;
  double done_steps = 0;
  double first_start = -1;
  double finish = -1;
};

}  // namespace

StatusOr<PolicyResult> RunGavelRounds(const cluster::Cluster& cluster, JobSource& source,
                                      const hetero::ThroughputModel& model, const hetero::Normalizer& normalizer,
                                      const std::string& policy_name, const RoundOptions& o) {
  const auto wall_start = std::chrono::steady_clock::now();
  if (o.round_s <= 0) return InvalidArgument("round length must be positive");

  // Types: the cluster's, named in the catalog.
  const int nt = static_cast<int>(cluster.gpu_types().size());
  std::vector<std::string> type_names(nt);
  std::vector<double> capacity(nt, 0.0);
  for (int t = 0; t < nt; ++t) {
    const auto* spec = model.catalog().Find(cluster.gpu_types()[t].name);
    if (!spec) return InvalidArgument("GPU type '" + cluster.gpu_types()[t].name + "' is not in the accelerator catalog");
    type_names[t] = spec->name;
  }
  for (const auto& n : cluster.nodes())
    if (n.gpu_type.valid()) capacity[n.gpu_type.value()] += n.gpu_count;
  const double total_gpus = std::accumulate(capacity.begin(), capacity.end(), 0.0);

  // Aware policies visit the types fastest first: by the mean reference
  // factor over the model's measured single-GPU classes.
  std::vector<int> type_order(nt);
  std::iota(type_order.begin(), type_order.end(), 0);
  {
    std::vector<double> mean(nt, 0.0);
    for (const auto& c : model.table().Classes())
      if (c.scale == 1)
        for (int t = 0; t < nt; ++t) mean[t] += normalizer.Factor(c, type_names[t]);
    std::stable_sort(type_order.begin(), type_order.end(), [&](int a, int b) { return mean[a] > mean[b]; });
  }

  // The policy and the scheduling core.
  hetero::AllocationPolicyRegistry policies;
  BERTH_RETURN_IF_ERROR(hetero::RegisterAllocationPolicies(policies));
  hetero::PolicyOptions po;
  po.seed = o.seed;
  po.aggregate_lp = o.aggregate_lp;
  BERTH_ASSIGN_OR_RETURN(std::unique_ptr<hetero::AllocationPolicy> policy, policies.Create(policy_name, po));
  const bool time_sliced = policy_name != "fifo" && policy_name != "gavel-fifo";
  // Blind policies see every type as equal: the mechanism visits the types in
  // a fresh random order each round (as Gavel's does for them).
  const bool shuffle_types = !policy->HeterogeneityAware();
  Rng type_rng(o.seed + 5);

  framework::PluginRegistry plugins;
  BERTH_RETURN_IF_ERROR(plugins::RegisterBuiltinPlugins(plugins));
  BERTH_RETURN_IF_ERROR(RegisterRoundGate(plugins));
  framework::Profile profile;
  profile.name = "gavel-round";
  profile.queue_sort = "fifo";
  profile.admit = {{std::string(RoundGate::kName)}};
  profile.filter = {{std::string(RoundGate::kName)}, {"fit"}};
  profile.candidates = {{std::string(RoundGate::kName)}};
  profile.score = {{"bestfit"}};
  profile.permit = {{"gang"}};
  framework::PluginContext context{&cluster, {}};
  BERTH_ASSIGN_OR_RETURN(std::unique_ptr<framework::Framework> fw,
                         framework::Framework::Create(profile, plugins, context));
  auto* gate = dynamic_cast<RoundGate*>(fw->Find(RoundGate::kName));
  if (!gate) return Internal("gavel driver: round gate plugin missing");
  ManualClock clock(0);
  scheduler::SchedulerOptions so;
  so.seed = o.seed;
  so.check_indexes = o.check_indexes;
  scheduler::Scheduler sched(cluster, std::move(fw), so, clock);

  // Per-job data (dense by id: job * nt + type), grown as jobs are pulled.
  std::vector<GavelJob> jobs;
  std::vector<double> cons, spread, ref;
  std::vector<int32_t> scales;
  std::vector<JobState> st;
  std::vector<double> x;
  std::vector<int16_t> chosen;
  MechanismInput mi;
  mi.types = nt;
  mi.steps_per_s = &cons;
  mi.scale = &scales;
  mi.capacity = capacity;
  mi.round_s = o.round_s;
  mi.reset_interval_s = o.reset_interval_s;
  mi.time_sliced = time_sliced;
  RoundMechanism mechanism(o.mechanism, std::move(mi));
  bool source_done = false;
  // Makes jobs[next] available if the source has it.
  auto pull = [&](size_t next) -> Status {
    if (next < jobs.size() || source_done) return Status::Ok();
    std::optional<GavelJob> g = source.Next();
    if (!g) {
      source_done = true;
      return Status::Ok();
    }
    if (g->id != static_cast<int64_t>(jobs.size())) return InvalidArgument("gavel jobs must have ids 0..n-1 in order");
    if (!jobs.empty() && g->arrival_s < jobs.back().arrival_s)
      return InvalidArgument("gavel job " + std::to_string(g->id) + " arrives before the job ahead of it");
    const hetero::JobClass& c = g->job_class;
    for (int t = 0; t < nt; ++t) {
      const double fast = model.Throughput(c, type_names[t], true).steps_per_s;
      double slow = c.scale > 1 && o.consolidation == Consolidation::kPlacement
                        ? model.Throughput(c, type_names[t], false).steps_per_s
                        : fast;
      if (slow <= 0) slow = fast;
      cons.push_back(fast);
      spread.push_back(slow);
      ref.push_back(normalizer.Factor(c, type_names[t]));
      x.push_back(0.0);
    }
    scales.push_back(c.scale);
    jobs.push_back(std::move(*g));
    st.emplace_back();
    chosen.push_back(-1);
    gate->Resize(jobs.size());
    mechanism.Grow(jobs.size());
    return Status::Ok();
  };

  // The measured window [mb, me): the run ends once its jobs have finished
  // (or, without a window, once every job has).
  const bool windowed = o.measure_begin >= 0 && o.measure_end > o.measure_begin;
  const int64_t mb = windowed ? o.measure_begin : 0;
  const int64_t me = windowed ? o.measure_end : std::numeric_limits<int64_t>::max();
  int64_t window_closed = 0;  // window jobs finished or failed
  auto in_window = [&](int64_t j) { return j >= mb && j < me; };

  std::vector<int64_t> active;  // arrival order
  std::vector<hetero::PolicyJob> pjobs;
  std::vector<std::pair<double, int64_t>> finishing;
  size_t next = 0;
  double t = 0, busy_gpu_s = 0, end_time = 0;
  bool changed = true;
  int64_t started_ever = 0, failed = 0, rounds = 0;
  PolicyResult r;
  r.policy = policy_name;
  r.mode = "gavel";
  r.seed = o.seed;
  const int64_t sample_every = 10;

  while (t <= o.max_time_s) {
    BERTH_RETURN_IF_ERROR(pull(next));
    if (windowed && window_closed == me - mb) break;
    if (active.empty()) {
      if (next >= jobs.size()) break;  // the source has ended and every job is done
      t = std::max(t, jobs[next].arrival_s);  // nothing to run: jump to the next arrival
    }
    clock.Set(ToUs(t));
    // 1. Arrivals.
    while (next < jobs.size() && jobs[next].arrival_s <= t) {
      const GavelJob& g = jobs[next];
      bool runnable = false;
      for (int t2 = 0; t2 < nt; ++t2) runnable |= cons[next * nt + t2] > 0 && capacity[t2] >= g.job_class.scale;
      job::JobSpec spec;
      spec.id = JobId(g.id);
      spec.name = "gavel-" + std::to_string(g.id);
      spec.job_class = g.job_class.model;
      spec.submit_time = ToUs(g.arrival_s);
      spec.priority = static_cast<int32_t>(g.weight);
      spec.groups.push_back({.name = "worker", .count = g.job_class.scale, .gpus = 1, .cpu_milli = 1000,
                             .memory_mib = 1024});
      BERTH_RETURN_IF_ERROR(sched.Submit(std::move(spec)));
      if (!runnable) {
        BERTH_RETURN_IF_ERROR(sched.Finish(JobId(g.id), job::JobState::kFailed));
        st[next].phase = Phase::kFailed;
        ++failed;
        window_closed += in_window(g.id);
      } else {
        st[next].phase = Phase::kActive;
        active.push_back(g.id);
        mechanism.Arrive(g.id);
        changed = true;
      }
      ++next;
      BERTH_RETURN_IF_ERROR(pull(next));
    }
    if (active.empty()) continue;
    // 2. Allocation.
    if (mechanism.WantsAllocation(changed || policy->NeedsProgress(), t)) {
      mechanism.Reset(active, x, t);
      pjobs.resize(active.size());
      for (size_t i = 0; i < active.size(); ++i) {
        const int64_t j = active[i];
        hetero::PolicyJob& p = pjobs[i];
        p.id = JobId(j);
        p.scale = jobs[j].job_class.scale;
        p.weight = jobs[j].weight;
        p.steps_per_s.assign(cons.begin() + j * nt, cons.begin() + (j + 1) * nt);
        p.ref_factor.assign(ref.begin() + j * nt, ref.begin() + (j + 1) * nt);
        p.remaining_steps = std::max(0.0, jobs[j].total_steps - st[j].done_steps);
      }
      BERTH_ASSIGN_OR_RETURN(hetero::Allocation a, policy->Allocate({pjobs, capacity}));
      for (size_t i = 0; i < active.size(); ++i)
        for (int t2 = 0; t2 < nt; ++t2) x[active[i] * nt + t2] = a.x[i][t2];
      changed = false;
    }
    // 3. Mechanism: the round's jobs, type by type.
    if (shuffle_types) type_rng.Shuffle(type_order);
    mechanism.Choose(active, x, type_order, chosen);
    // 4. Placement through the scheduler core.
    for (int64_t j : active) {
      if (st[j].running_type >= 0 && st[j].running_type != chosen[j]) {
        BERTH_RETURN_IF_ERROR(sched.Preempt(JobId(j)));
        st[j].running_type = -1;
      }
    }
    bool any_new = false;
    for (int64_t j : active)
      if (chosen[j] >= 0 && st[j].running_type < 0) gate->Choose(j, chosen[j]), any_new = true;
    if (any_new) {
      for (JobId id : sched.Schedule()) {
        const int64_t j = id.value();
        st[j].running_type = chosen[j];
        const auto* rec = sched.Find(id);
        bool one_node = true;
        for (const auto& p : rec->placements) one_node &= p.alloc.node == rec->placements.front().alloc.node;
        st[j].consolidated = one_node;
        if (st[j].first_start < 0) st[j].first_start = t, ++started_ever;
      }
    }
    for (int64_t j : active) {
      gate->Clear(j);
      chosen[j] = -1;
    }
    // 5. Progress. The round ends when its last job does: the full round,
    // or earlier when every job that ran completed (Gavel's simulator).
    finishing.clear();
    int64_t running_now = 0;
    double round_len = 0;
    for (int64_t j : active) {
      const int ty = st[j].running_type;
      if (ty < 0) continue;
      ++running_now;
      const double rate = st[j].consolidated ? cons[j * nt + ty] : spread[j * nt + ty];
      const int32_t s = jobs[j].job_class.scale;
      const double left = jobs[j].total_steps - st[j].done_steps;
      double dt = o.round_s;
      if (rate > 0 && left <= rate * o.round_s) {
        dt = left / rate;
        st[j].done_steps = jobs[j].total_steps;
        finishing.push_back({t + dt, j});
      } else {
        st[j].done_steps += rate * o.round_s;
      }
      mechanism.Ran(j, ty, dt);
      busy_gpu_s += s * dt;
      round_len = std::max(round_len, dt);
    }
    if (running_now == 0) round_len = o.round_s;
    if (rounds % sample_every == 0) {
      r.queue_length_over_time.push_back({t / 3600.0, static_cast<double>(active.size() - running_now)});
      double used = 0;
      for (int64_t j : active)
        if (st[j].running_type >= 0) used += jobs[j].job_class.scale;
      r.allocation_over_time.push_back({t / 3600.0, 100.0 * used / total_gpus});
    }
    std::sort(finishing.begin(), finishing.end());
    for (const auto& [ft, j] : finishing) {
      clock.Set(ToUs(ft));
      BERTH_RETURN_IF_ERROR(sched.Finish(JobId(j), job::JobState::kSucceeded));
      st[j].phase = Phase::kDone;
      st[j].running_type = -1;
      st[j].finish = ft;
      end_time = std::max(end_time, ft);
      window_closed += in_window(j);
    }
    if (!finishing.empty()) {
      std::erase_if(active, [&](int64_t j) { return st[j].phase == Phase::kDone; });
      changed = true;
    }
    t += round_len;
    ++rounds;
  }

  // Figures.
  const int64_t arrived = static_cast<int64_t>(next);
  r.jobs_total = arrived;
  r.capacity_milli_gpu = static_cast<int64_t>(total_gpus) * kMilliPerGpu;
  std::vector<double> jct, delay;
  for (int64_t j = mb; j < std::min(me, arrived); ++j) {
    if (st[j].phase != Phase::kDone) continue;
    jct.push_back(st[j].finish - jobs[j].arrival_s);
    delay.push_back(st[j].first_start - jobs[j].arrival_s);
  }
  int64_t unfinished = 0;
  for (int64_t j = 0; j < arrived; ++j) unfinished += st[j].phase == Phase::kActive;
  r.jcts_s = jct;
  r.jct_s = Summarize(std::move(jct));
  r.queue_delay_s = Summarize(std::move(delay));
  r.jobs_placed = started_ever;
  r.jobs_failed = failed;
  r.jobs_never_fit = failed;
  r.jobs_unfinished = unfinished;
  r.makespan_s = end_time;
  const double horizon = std::max(end_time, 1e-9);
  r.utilization = busy_gpu_s / (total_gpus * horizon);
  r.gpu_allocation_ratio = std::min(1.0, r.utilization);
  r.allocated_milli_gpu = 0;
  r.decision_log_hash = sched.log().HashHex();
  r.decisions = sched.log().entries();
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return r;
}

}  // namespace berth::sim::gavel

