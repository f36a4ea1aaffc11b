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
