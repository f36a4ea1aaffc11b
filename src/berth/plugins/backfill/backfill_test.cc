// The backfill plugin in the scheduler: a misprediction and the delay it
// causes are counted; the node-level guard; several reservations; args; and,
// over random streams with exact limits, no reserved job ever starts late.
#include "berth/plugins/backfill/backfill.h"

#include <gtest/gtest.h>

#include <map>

#include "berth/cluster/loaders.h"
#include "berth/common/clock.h"
#include "berth/common/rng.h"
#include "berth/plugins/builtin.h"
#include "berth/scheduler/scheduler.h"
#include "berth/sim/replay.h"

namespace berth::plugins::backfill {
namespace {

constexpr TimeUs kMin = 60 * kUsPerSecond;
constexpr TimeUs kHour = 60 * kMin;

struct Registries {
  framework::PluginRegistry plugins;
  framework::PolicyRegistry policies;
  Registries() {
    EXPECT_TRUE(RegisterBuiltinPlugins(plugins).ok());
    EXPECT_TRUE(RegisterBuiltinPolicies(policies).ok());
  }
};

// A scheduler on a compact-spec cluster with a manual clock; jobs by name.
class Harness {
 public:
  Harness(const std::string& spec, framework::Profile profile) {
    auto c = cluster::ParseClusterSpec(spec);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    cluster_ = std::make_unique<cluster::Cluster>(std::move(c).value());
    auto fw = framework::Framework::Create(profile, reg_.plugins);
    EXPECT_TRUE(fw.ok()) << fw.status().ToString();
    scheduler::SchedulerOptions o;
    o.check_indexes = true;
    sched_ = std::make_unique<scheduler::Scheduler>(*cluster_, std::move(fw).value(), o, clock_);
  }
  explicit Harness(const std::string& spec, const std::string& policy = "backfill")
      : Harness(spec, Registries().policies.Find(policy).value()) {}

  // Submits a job of `count` tasks of `gpus` GPUs; limit < 0: none.
  void Submit(const std::string& name, int32_t gpus, int32_t count, TimeUs limit, const std::string& tenant = "t") {
    job::JobSpec j;
    j.id = JobId(next_id_++);
    j.name = name;
    j.tenant = tenant;
    j.submit_time = clock_.Now();
    j.runtime_limit = limit;
    job::TaskGroup g;
    g.gpus = gpus;
    g.count = count;
    j.groups.push_back(g);
    ids_[name] = j.id;
    ASSERT_TRUE(sched_->Submit(std::move(j)).ok());
  }
  std::vector<std::string> Schedule() {
    std::vector<std::string> names;
    for (JobId id : sched_->Schedule()) names.push_back(sched_->Find(id)->spec.name);
    return names;
  }
  void Finish(const std::string& name) { ASSERT_TRUE(sched_->Finish(ids_.at(name), job::JobState::kSucceeded).ok()); }
  void AdvanceTo(TimeUs t) { clock_.Set(t); }
  const scheduler::JobRecord& Job(const std::string& name) const { return *sched_->Find(ids_.at(name)); }
  std::map<std::string, double> Counters() const {
    framework::PluginCounters c;
    sched_->framework().Find("backfill")->Counters(c);
    return {c.begin(), c.end()};
  }

 private:
  Registries reg_;
  std::unique_ptr<cluster::Cluster> cluster_;
  ManualClock clock_{0};
  std::unique_ptr<scheduler::Scheduler> sched_;
  std::map<std::string, JobId> ids_;
  int64_t next_id_ = 1;
};

// A job predicted from history at 30 min runs 3 h: it holds the node the
// reserved job needs at its shadow time, which starts an hour late.
TEST(Backfill, MispredictionAndTheDelayItCauses) {
  Harness h("4x8:H100");
  // History: three 8-GPU runs of tenant t, 30 min each.
  for (const char* n : {"h1", "h2", "h3"}) h.Submit(n, 8, 1, -1);
  EXPECT_EQ(h.Schedule().size(), 3u);
  h.AdvanceTo(30 * kMin);
  for (const char* n : {"h1", "h2", "h3"}) h.Finish(n);

  h.Submit("r", 8, 3, 2 * kHour);        // nodes 0-2 until 2h30
  h.Submit("big", 8, 4, kHour);          // all nodes: shadow time 2h30
  h.Submit("b", 8, 1, -1);               // predicted 30 min: ends by 1h, backfilled
  EXPECT_EQ(h.Schedule(), (std::vector<std::string>{"r", "b"}));
  EXPECT_EQ(h.Job("big").state, job::JobState::kPending);

  h.AdvanceTo(2 * kHour + 30 * kMin);
  h.Finish("r");
  EXPECT_TRUE(h.Schedule().empty());     // b still holds node 3
  h.AdvanceTo(3 * kHour + 30 * kMin);    // b took 3 h
  h.Finish("b");
  EXPECT_EQ(h.Schedule(), std::vector<std::string>{"big"});

  auto c = h.Counters();
  EXPECT_EQ(c["backfill.reserved_jobs"], 1);
  EXPECT_EQ(c["backfill.reserved_started"], 1);
  EXPECT_EQ(c["backfill.jobs_backfilled"], 1);
  EXPECT_EQ(c["backfill.backfilled_short"], 1);
  EXPECT_EQ(c["backfill.backfilled_spare"], 0);
  EXPECT_EQ(c["backfill.predictions_too_short"], 1);
  EXPECT_EQ(c["backfill.too_short_while_waiting"], 1);
  EXPECT_EQ(c["backfill.delayed_reserved_jobs"], 1);
  EXPECT_EQ(c["backfill.misprediction_delay_sum_s"], 3600);
  EXPECT_EQ(c["backfill.misprediction_delay_max_s"], 3600);
  EXPECT_EQ(c["backfill.reserved_late"], 1);
  EXPECT_EQ(c["backfill.reserved_late_sum_s"], 3600);
  // h1-h3 (predicted 24 h by default), r (its limit), b (30 min, ran 3 h).
  EXPECT_EQ(c["backfill.runs_predicted"], 5);
  EXPECT_EQ(c["backfill.runs_underpredicted"], 1);
}

// A short backfill that runs past its shadow time after the reserved job has
// started anyway (others ended early) is counted too short, but harmless.
TEST(Backfill, OverrunAfterTheReservedJobStartedIsNoDelay) {
  Harness h("3x8:H100");
  h.Submit("r", 8, 2, 2 * kHour);   // nodes 0-1 until 2h
  EXPECT_EQ(h.Schedule().size(), 1u);
  h.Submit("big", 8, 2, kHour);     // shadow 2h on nodes 0-1
  h.Submit("b", 8, 1, kHour);       // limit 1h: backfilled on node 2
  EXPECT_EQ(h.Schedule(), std::vector<std::string>{"b"});
  h.AdvanceTo(kHour);
  h.Finish("r");                    // early
  EXPECT_EQ(h.Schedule(), std::vector<std::string>{"big"});
  h.AdvanceTo(3 * kHour);
  h.Finish("b");                    // past its limit and the 2h shadow time
  auto c = h.Counters();
  EXPECT_EQ(c["backfill.jobs_backfilled"], 1);
  EXPECT_EQ(c["backfill.predictions_too_short"], 1);
  EXPECT_EQ(c["backfill.too_short_while_waiting"], 0);
  EXPECT_EQ(c["backfill.delayed_reserved_jobs"], 0);
  EXPECT_EQ(c["backfill.misprediction_delay_sum_s"], 0);
  EXPECT_EQ(c["backfill.reserved_late"], 0);
  EXPECT_EQ(c["backfill.runs_underpredicted"], 1);
}

framework::Profile AdmitOnly() {
  framework::Profile p = Registries().policies.Find("backfill").value();
  p.filter = {framework::PluginRef{"fit", {}}};
  return p;
}

// The node-level guard: jobs on spare GPUs stay off the reserved nodes.
// Without it (admit only: the classic EASY rule on GPU counts), best fit puts
// them where they split the nodes the reserved gang needs, and it starts late.
TEST(Backfill, SpareGpusStayOffTheReservedNodes) {
  for (bool guard : {true, false}) {
    SCOPED_TRACE(guard ? "with the filter" : "admit only");
    Harness h("4x8:H100", guard ? Registries().policies.Find("backfill").value() : AdmitOnly());
    h.Submit("r1", 8, 2, 2 * kHour);
    h.Submit("r2", 4, 1, kHour);
    EXPECT_EQ(h.Schedule().size(), 2u);
    h.Submit("big", 8, 3, kHour);  // fits at 2h on nodes 0-2; 8 spare GPUs
    h.Submit("long", 4, 1, 5 * kHour);
    h.Submit("long2", 4, 1, 5 * kHour);
    EXPECT_EQ(h.Schedule(), (std::vector<std::string>{"long", "long2"}));
    h.AdvanceTo(kHour);
    h.Finish("r2");
    EXPECT_TRUE(h.Schedule().empty());
    h.AdvanceTo(2 * kHour);
    h.Finish("r1");
    const auto started = h.Schedule();
    if (guard) {
      EXPECT_EQ(started, std::vector<std::string>{"big"});
    } else {
      EXPECT_TRUE(started.empty());  // nodes 2 and 3 each hold a 4-GPU job
    }
  }
}

// With two reservations, a job that would end after the second one's shadow
// time waits; with one, it starts and the second blocked job waits longer.
TEST(Backfill, SecondReservation) {
  for (int n : {1, 2}) {
    SCOPED_TRACE(n);
    framework::Profile p = Registries().policies.Find("backfill").value();
    p.admit.front().args["reservations"] = std::to_string(n);
    Harness h("4x8:H100", p);
    h.Submit("r1", 8, 2, 2 * kHour);  // nodes 0-1 until 2h
    h.Submit("r2", 8, 1, kHour);      // node 2 until 1h
    EXPECT_EQ(h.Schedule().size(), 2u);
    h.Submit("big1", 8, 3, kHour);    // shadow 2h (nodes 0-2)
    h.Submit("big2", 8, 2, kHour);    // beside big1: 1h..2h on nodes 2-3
    h.Submit("x", 8, 1, 90 * kMin);   // ends 1h30: fine for big1, not for big2
    const auto started = h.Schedule();
    h.AdvanceTo(kHour);
    h.Finish("r2");
    const auto at_1h = h.Schedule();
    if (n == 2) {
      EXPECT_TRUE(started.empty());
      EXPECT_EQ(h.Job("x").last_verdict.plugin, "backfill");
      EXPECT_NE(h.Job("x").last_verdict.reason.find("reservation of job big2 at t=3600s"), std::string::npos)
          << h.Job("x").last_verdict.reason;
      EXPECT_EQ(at_1h, std::vector<std::string>{"big2"});
    } else {
      EXPECT_EQ(started, std::vector<std::string>{"x"});
      EXPECT_TRUE(at_1h.empty());
    }
  }
}

TEST(Backfill, Args) {
  Registries reg;
  EXPECT_TRUE(reg.plugins.Create("backfill", {{"reservations", "3"}, {"quantile", "0.8"}}).ok());
  for (const framework::PluginArgs& bad : std::vector<framework::PluginArgs>{
           {{"reservations", "0"}}, {{"reservations", "33"}}, {{"reservations", "two"}}, {{"quantile", "1.5"}},
           {{"horizon", "1"}}}) {
    auto p = reg.plugins.Create("backfill", bad);
    EXPECT_FALSE(p.ok()) << bad.begin()->first;
    if (!p.ok()) EXPECT_NE(p.status().message().find("backfill"), std::string::npos);
  }
}

// Random streams of gangs and small jobs whose limits are their true
// runtimes: every prediction holds, so no reserved job starts after its
// first shadow time, while many jobs are backfilled.
TEST(Backfill, ExactLimitsNeverDelayAReservedJob) {
  Registries reg;
  auto cluster = cluster::ParseClusterSpec("8x8:H100/leaf=4");
  ASSERT_TRUE(cluster.ok());
  for (uint64_t seed : {1, 2, 3, 4}) {
    SCOPED_TRACE(seed);
    Rng rng(seed);
    sim::Trace trace;
    TimeUs t = 0;
    for (int i = 0; i < 400; ++i) {
      job::JobSpec j;
      j.id = JobId(i);
      j.name = "j" + std::to_string(i);
      j.tenant = "t" + std::to_string(rng.Uniform(3));
      t += static_cast<TimeUs>(rng.Uniform(20)) * kMin;
      j.submit_time = t;
      j.duration = static_cast<TimeUs>(5 + rng.Uniform(300)) * kMin;
      j.runtime_limit = j.duration;
      job::TaskGroup g;
      static const int kGpus[] = {1, 2, 4, 8, 8};
      g.gpus = kGpus[rng.Uniform(5)];
      g.count = g.gpus == 8 ? 1 + static_cast<int32_t>(rng.Uniform(6)) : 1;
      j.groups.push_back(g);
      trace.jobs.push_back(std::move(j));
    }
    sim::ReplayOptions o;
    o.check_indexes = true;
    auto r = sim::RunReplay(*cluster, trace, reg.policies.Find("backfill").value(), reg.plugins, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->jobs_unfinished, 0);
    std::map<std::string, double> c(r->plugin_counters.begin(), r->plugin_counters.end());
    EXPECT_GT(c["backfill.reserved_jobs"], 10);
    EXPECT_GT(c["backfill.jobs_backfilled"], 10);
    EXPECT_EQ(c["backfill.reserved_started"], c["backfill.reserved_jobs"]);
    EXPECT_EQ(c["backfill.reserved_late"], 0);
    EXPECT_EQ(c["backfill.predictions_too_short"], 0);
    EXPECT_EQ(c["backfill.delayed_reserved_jobs"], 0);
    EXPECT_EQ(c["backfill.runs_underpredicted"], 0);
  }
}

}  // namespace
}  // namespace berth::plugins::backfill
