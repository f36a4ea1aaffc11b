// The Gavel workload generator, the round-based driver, and the
// heterogeneity-aware score plugin on the scheduling core.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "berth/cluster/loaders.h"
#include "berth/hetero/speed_score.h"
#include "berth/plugins/builtin.h"
#include "berth/scheduler/scheduler.h"
#include "berth/sim/gavel/gavel_sim.h"
#include "berth/sim/gavel/round_driver.h"
#include "berth/sim/gavel/trace_jobs.h"
#include "berth/sim/gavel/workload.h"
#include "berth/testing/paths.h"

namespace berth::sim::gavel {
namespace {

struct Fixture {
  hetero::Catalog catalog;
  hetero::MeasuredTable table;
  std::unique_ptr<hetero::ThroughputModel> model;
  std::unique_ptr<hetero::Normalizer> norm;
};

const Fixture& F() {
  static const Fixture* f = [] {
    auto* x = new Fixture;
    auto c = hetero::LoadCatalog(berth::testing::SourceDir() + "/data/accelerators.yaml");
    EXPECT_TRUE(c.ok());
    x->catalog = std::move(*c);
    auto t = hetero::LoadGavelThroughputs(berth::testing::DataDir() + "/gavel/simulation_throughputs.json", x->catalog);
    EXPECT_TRUE(t.ok());
    x->table = std::move(*t);
    auto m = hetero::ThroughputModel::Fit(x->catalog, x->table);
    EXPECT_TRUE(m.ok());
    x->model = std::make_unique<hetero::ThroughputModel>(std::move(*m));
    auto n = hetero::Normalizer::Create(*x->model, "H100");
    EXPECT_TRUE(n.ok());
    x->norm = std::make_unique<hetero::Normalizer>(*n);
    return x;
  }();
  return *f;
}

TEST(GavelWorkloadTest, FollowsTheRecipe) {
  WorkloadOptions o;
  o.num_jobs = 4000;
  o.rate_per_hour = 4.0;
  o.multi_gpu = true;
  o.seed = 3;
  auto jobs = GenerateWorkload(o, F().table, F().catalog);
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  std::map<int, int> scales;
  int short_jobs = 0;
  for (const auto& j : *jobs) {
    ++scales[j.job_class.scale];
    short_jobs += j.duration_s <= 60.0 * 1000;
    EXPECT_GE(j.duration_s, 60.0 * std::pow(10.0, 1.5) - 1e-6);
    EXPECT_LE(j.duration_s, 60.0 * 1e4 + 1e-6);
    auto v100 = F().table.Get(j.job_class, "V100-16", true);
    ASSERT_TRUE(v100.has_value()) << j.job_class.ToString();  // multi-GPU jobs only from distributed models
    EXPECT_NEAR(j.total_steps, j.duration_s * *v100, 1e-6 * j.total_steps);
  }
  EXPECT_NEAR(scales[1] / 4000.0, 0.70, 0.03);
  EXPECT_NEAR(scales[2] / 4000.0, 0.10, 0.02);
  EXPECT_NEAR(scales[4] / 4000.0, 0.15, 0.02);
  EXPECT_NEAR(scales[8] / 4000.0, 0.05, 0.015);
  EXPECT_NEAR(short_jobs / 4000.0, 0.8, 0.03);
  // Poisson arrivals at 4 jobs/h.
  EXPECT_NEAR(jobs->back().arrival_s / 3600.0 / 4000.0, 1 / 4.0, 0.02);
  // Same seed, same jobs; static traces start together.
  auto again = GenerateWorkload(o, F().table, F().catalog);
  EXPECT_EQ((*again)[1234].total_steps, (*jobs)[1234].total_steps);
  o.static_trace = true;
  auto st = GenerateWorkload(o, F().table, F().catalog);
  EXPECT_EQ(st->back().arrival_s, 0.0);
}

TEST(GavelWorkloadTest, OpenArrivalsContinuePastTheJobCount) {
  WorkloadOptions o;
  o.num_jobs = 50;
  o.rate_per_hour = 2.0;
  o.seed = 9;
  auto closed = GenerateWorkload(o, F().table, F().catalog);
  ASSERT_TRUE(closed.ok());
  o.open = true;
  auto gen = WorkloadGenerator::Create(o, F().table, F().catalog);
  ASSERT_TRUE(gen.ok()) << gen.status().message();
  for (int64_t i = 0; i < 80; ++i) {
    auto j = (*gen)->Next();
    ASSERT_TRUE(j.has_value());
    EXPECT_EQ(j->id, i);
    if (i < 50) EXPECT_EQ(j->total_steps, (*closed)[i].total_steps);  // the same stream, only longer
  }
  o.static_trace = true;
  EXPECT_FALSE(WorkloadGenerator::Create(o, F().table, F().catalog).ok());
}

StatusOr<PolicyResult> RunSmall(const std::string& policy, int64_t n, double rate, bool multi, uint64_t seed = 1,
                                bool check = false) {
  BERTH_ASSIGN_OR_RETURN(cluster::Cluster c, cluster::LoadCluster("2x4:V100+2x4:P100+2x4:K80"));
  WorkloadOptions wo;
  wo.num_jobs = n;
  wo.rate_per_hour = rate;
  wo.multi_gpu = multi;
  wo.seed = seed;
  BERTH_ASSIGN_OR_RETURN(auto jobs, GenerateWorkload(wo, F().table, F().catalog));
  RoundOptions ro;
  ro.seed = seed;
  ro.check_indexes = check;
  return RunGavelRounds(c, jobs, *F().model, *F().norm, policy, ro);
}

TEST(GavelRoundsTest, EveryPolicyFinishesEveryJobDeterministically) {
  for (const char* p : {"las", "gavel-las", "fifo", "gavel-fifo", "gavel-maxmin", "gavel-tput", "gavel-makespan"}) {
    auto a = RunSmall(p, 60, 3.0, true, 1, /*check=*/std::string(p) == "las");
    ASSERT_TRUE(a.ok()) << p << ": " << a.status().message();
    EXPECT_EQ(a->jobs_unfinished, 0) << p;
    EXPECT_EQ(a->jct_s.count, 60) << p;
    EXPECT_GT(a->utilization, 0) << p;
    EXPECT_LE(a->utilization, 1.0 + 1e-9) << p;
    auto b = RunSmall(p, 60, 3.0, true);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(a->decision_log_hash, b->decision_log_hash) << p;
    EXPECT_DOUBLE_EQ(a->jct_s.mean, b->jct_s.mean) << p;
  }
}

TEST(GavelRoundsTest, BothMechanismsFinishEveryJob) {
  auto c = cluster::LoadCluster("2x4:V100+2x4:P100+2x4:K80");
  ASSERT_TRUE(c.ok());
  WorkloadOptions wo;
  wo.num_jobs = 80;
  wo.rate_per_hour = 4.0;
  wo.multi_gpu = true;
  wo.seed = 2;
  auto jobs = GenerateWorkload(wo, F().table, F().catalog);
  ASSERT_TRUE(jobs.ok());
  for (Mechanism m : {Mechanism::kGavel, Mechanism::kDeficit}) {
    RoundOptions ro;
    ro.mechanism = m;
    for (const char* p : {"las", "gavel-las", "fifo"}) {
      auto r = RunGavelRounds(*c, *jobs, *F().model, *F().norm, p, ro);
      ASSERT_TRUE(r.ok()) << p << ": " << r.status().message();
      EXPECT_EQ(r->jct_s.count, 80) << p;
      EXPECT_EQ(r->jobs_unfinished, 0) << p;
    }
  }
}

// Two short jobs on one V100: the first round ends when its job does, and an
// idle cluster jumps to the next arrival, so neither waits for a round edge.
TEST(GavelRoundsTest, RoundsEndWithTheirLastJob) {
  auto c = cluster::LoadCluster("1x1:V100");
  ASSERT_TRUE(c.ok());
  const hetero::JobClass cls{"ResNet-50 (batch size 64)", 1};
  const double tput = *F().table.Get(cls, "V100-16", true);
  std::vector<GavelJob> jobs(2);
  jobs[0] = {.id = 0, .job_class = cls, .arrival_s = 0, .duration_s = 100, .total_steps = 100 * tput};
  jobs[1] = {.id = 1, .job_class = cls, .arrival_s = 150, .duration_s = 100, .total_steps = 100 * tput};
  auto r = RunGavelRounds(*c, jobs, *F().model, *F().norm, "gavel-las", {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NEAR(r->jct_s.max, 100.0, 1e-6);
  EXPECT_NEAR(r->makespan_s, 250.0, 1e-6);
}

// An 8-GPU job on 4-GPU nodes: Gavel's simulator always gives it the
// consolidated speed; the placement model gives it the measured spread speed.
TEST(GavelRoundsTest, ConsolidationRule) {
  auto c = cluster::LoadCluster("2x4:V100");
  ASSERT_TRUE(c.ok());
  const hetero::JobClass cls{"ResNet-18 (batch size 16)", 8};
  const double fast = *F().table.Get(cls, "V100-16", true);
  const double slow = *F().table.Get(cls, "V100-16", false);
  ASSERT_GT(fast, 2 * slow);
  std::vector<GavelJob> jobs(1);
  jobs[0] = {.id = 0, .job_class = cls, .arrival_s = 0, .duration_s = 3600, .total_steps = 3600 * fast};
  RoundOptions ro;
  auto gavel = RunGavelRounds(*c, jobs, *F().model, *F().norm, "gavel-las", ro);
  ro.consolidation = Consolidation::kPlacement;
  auto placed = RunGavelRounds(*c, jobs, *F().model, *F().norm, "gavel-las", ro);
  ASSERT_TRUE(gavel.ok() && placed.ok());
  EXPECT_NEAR(gavel->jct_s.mean, 3600.0, 1e-6);
  EXPECT_NEAR(placed->jct_s.mean, 3600.0 * fast / slow, 1e-3);
}

// Blind LAS treats the types as equal even when the cluster is idle: the
// jobs spend about half their time on the K80s, so they take far longer than
// under the aware policy, which keeps them on the V100s.
TEST(GavelRoundsTest, BlindLasDoesNotPreferTheFastType) {
  auto c = cluster::LoadCluster("1x4:V100+1x4:K80");
  ASSERT_TRUE(c.ok());
  const hetero::JobClass cls{"ResNet-50 (batch size 64)", 1};
  const double v100 = *F().table.Get(cls, "V100-16", true);
  const double k80 = *F().table.Get(cls, "K80", true);
  std::vector<GavelJob> jobs(4);
  for (int i = 0; i < 4; ++i)
    jobs[i] = {.id = i, .job_class = cls, .arrival_s = 0, .duration_s = 36000, .total_steps = 36000 * v100};
  auto blind = RunGavelRounds(*c, jobs, *F().model, *F().norm, "las", {});
  auto aware = RunGavelRounds(*c, jobs, *F().model, *F().norm, "gavel-las", {});
  ASSERT_TRUE(blind.ok() && aware.ok());
  EXPECT_NEAR(aware->jct_s.mean, 36000.0, 1e-6);
  // Half the time at each speed: 2 / (1 + k80 / v100) times the V100 duration.
  EXPECT_NEAR(blind->jct_s.mean / 36000.0, 2.0 / (1.0 + k80 / v100), 0.25);
}

TEST(GavelRoundsTest, HeterogeneityAwareLasBeatsBlindLasUnderLoad) {
  // 24 GPUs, 200 jobs at 3 jobs/h: a loaded cluster, as in Gavel's Fig. 9.
  auto blind = RunSmall("las", 200, 3.0, false, 5);
  auto aware = RunSmall("gavel-las", 200, 3.0, false, 5);
  ASSERT_TRUE(blind.ok() && aware.ok());
  EXPECT_LT(aware->jct_s.mean, blind->jct_s.mean);
}

TEST(GavelRoundsTest, UnknownPolicyIsAnError) {
  auto r = RunSmall("bestfit", 5, 1.0, false);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unknown policy 'bestfit'"), std::string::npos);
}

TEST(GavelSimTest, OptionsAndWindow) {
  EXPECT_FALSE(ParseMeasureWindow("5000:4000").ok());
  EXPECT_FALSE(ParseMeasureWindow("abc").ok());
  auto w = ParseMeasureWindow("4000:5000");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->first, 4000);
  SimulateOptions o;
  o.cluster = "1x4:V100+1x4:K80";
  o.policies = {"las"};
  EXPECT_FALSE(o.Validate().ok());  // no trace, no workload
  o.workload = "gavel";
  EXPECT_TRUE(o.Validate().ok());
  o.workload = "philly";
  EXPECT_FALSE(o.Validate().ok());
}

// Philly jobs as Gavel jobs: classes drawn (seeded) among the models measured
// at the job's GPU count, steps from the duration at V100 speed, sizes other
// than 1/2/4/8 skipped.
TEST(GavelTraceTest, PhillyJobsGetClassesAndSteps) {
  Trace t;
  auto add = [&](TimeUs submit, int count, int gpus, double seconds) {
    job::JobSpec j;
    j.submit_time = submit;
    j.duration = static_cast<TimeUs>(seconds * 1e6);
    j.groups.push_back({.count = count, .gpus = gpus});
    t.jobs.push_back(j);
  };
  add(5'000'000, 1, 1, 600);
  add(2'000'000, 1, 8, 3600);
  add(9'000'000, 2, 8, 60);   // 16 GPUs: skipped
  add(7'000'000, 1, 4, 1200);
  TraceJobReport rep;
  auto jobs = JobsFromTrace(t, F().table, F().catalog, {.seed = 3}, &rep);
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 3u);
  EXPECT_EQ(rep.skipped_size, 1);
  EXPECT_EQ(rep.drawn, 3);
  // Submission order, arrivals from the first job.
  EXPECT_EQ((*jobs)[0].job_class.scale, 8);
  EXPECT_EQ((*jobs)[0].arrival_s, 0.0);
  EXPECT_EQ((*jobs)[1].arrival_s, 3.0);
  EXPECT_EQ((*jobs)[2].job_class.scale, 4);
  for (const auto& j : *jobs) {
    auto v100 = F().table.Get(j.job_class, "V100-16", true);
    ASSERT_TRUE(v100.has_value()) << j.job_class.ToString();
    EXPECT_NEAR(j.total_steps, j.duration_s * *v100, 1e-6 * j.total_steps);
  }
  auto again = JobsFromTrace(t, F().table, F().catalog, {.seed = 3});
  EXPECT_EQ((*again)[1].job_class.model, (*jobs)[1].job_class.model);
}

TEST(GavelTraceTest, SimulatePhillyOnAPaiShapedCluster) {
  SimulateOptions o;
  o.cluster = "2x8:MISC+4x2:P100+2x2:T4+1x8:V100+1x8:V100M32";
  o.workload = "gavel";
  o.trace = berth::testing::DataDir() + "/pollux-philly/philly.csv";
  o.trace_format = "philly";
  o.max_jobs = 150;
  o.catalog = berth::testing::SourceDir() + "/data/accelerators.yaml";
  o.throughputs = berth::testing::DataDir() + "/gavel/simulation_throughputs.json";
  o.policies = {"las", "gavel-las"};
  o.seed = 1;
  auto out = RunSimulation(o);
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(out->results.size(), 2u);
  for (const auto& r : out->results) {
    EXPECT_GT(r.jobs_total, 140) << r.policy;
    EXPECT_EQ(r.jobs_unfinished, 0) << r.policy;
    EXPECT_GT(r.jct_s.mean, 0) << r.policy;
  }
  EXPECT_NE(out->trace_summary.find("classes drawn"), std::string::npos) << out->trace_summary;
  o.static_trace = true;
  EXPECT_FALSE(RunSimulation(o).ok());
}

// hetero-speed sends a job where its class runs fastest; hetero-cost where
// its work is cheapest.
TEST(HeteroScoreTest, FastestAndCheapestTypes) {
  auto c = cluster::LoadCluster("1x4:V100+1x4:K80");
  ASSERT_TRUE(c.ok());
  framework::PluginRegistry reg;
  ASSERT_TRUE(plugins::RegisterBuiltinPlugins(reg).ok());
  auto shared = std::make_shared<const hetero::ThroughputModel>(*F().model);
  ASSERT_TRUE(hetero::RegisterHeteroPlugins(reg, shared).ok());
  auto place = [&](const std::string& score, const std::string& cls) {
    framework::Profile p;
    p.filter = {{"fit"}};
    p.score = {{score}};
    auto fw = framework::Framework::Create(p, reg);
    EXPECT_TRUE(fw.ok());
    ManualClock clock;
    scheduler::Scheduler s(*c, std::move(*fw), {}, clock);
    job::JobSpec j;
    j.job_class = cls;
    j.groups.push_back({.count = 1, .gpus = 1, .cpu_milli = 1000, .memory_mib = 1024});
    EXPECT_TRUE(s.Submit(j).ok());
    EXPECT_EQ(s.Schedule().size(), 1u);
    const auto& node = c->node(s.Find(JobId(0))->placements[0].alloc.node);
    return c->gpu_type(node.gpu_type).name;
  };
  EXPECT_EQ(place("hetero-speed", "ResNet-50 (batch size 64)"), "V100");       // 7x faster on V100
  EXPECT_EQ(place("hetero-speed", "Recommendation (batch size 2048)"), "K80");  // measured faster on K80
  // ResNet-50: V100 costs 2.48/h at 4.4 steps/s, K80 0.45/h at 0.62 -> V100 is cheaper per step.
  EXPECT_EQ(place("hetero-cost", "ResNet-50 (batch size 64)"), "V100");
  EXPECT_EQ(place("hetero-cost", "A3C"), "K80");  // 3.4 vs 7.2 steps/s at a fifth of the price
}

}  // namespace
}  // namespace berth::sim::gavel
