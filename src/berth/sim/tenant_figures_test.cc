// Per-tenant figures of a replay, computed by hand on a one-node cluster:
// JCT, queueing delay, GPU share received and guaranteed, finish-time
// fairness, preemptions and GPU-hours lost; and how they reach the reports.
#include "berth/sim/tenant_figures.h"

#include <gtest/gtest.h>

#include <fstream>

#include "berth/cluster/loaders.h"
#include "berth/plugins/builtin.h"
#include "berth/sim/replay.h"
#include "berth/sim/report/html_report.h"
#include "berth/sim/report/json_report.h"
#include "berth/sim/report/text_report.h"
#include "berth/sim/simulate.h"
#include "berth/testing/paths.h"

namespace berth::sim {
namespace {

constexpr double kHourS = 3600;

job::JobSpec Job(int64_t id, const std::string& tenant, double submit_s, double dur_s, int32_t gpus,
                 TimeUs checkpoint = -1) {
  job::JobSpec j;
  j.id = JobId(id);
  j.name = "j" + std::to_string(id);
  j.tenant = tenant;
  j.submit_time = SecondsToUs(submit_s);
  j.duration = SecondsToUs(dur_s);
  j.checkpoint_interval = checkpoint;
  job::TaskGroup g;
  g.gpus = gpus;
  j.groups.push_back(g);
  return j;
}

class TenantFigures : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(plugins::RegisterBuiltinPlugins(plugins_).ok());
    ASSERT_TRUE(plugins::RegisterBuiltinPolicies(policies_).ok());
    auto c = cluster::ParseClusterSpec("1x8:H100");
    ASSERT_TRUE(c.ok());
    cluster_ = std::make_unique<cluster::Cluster>(std::move(c).value());
  }

  PolicyResult Run(const std::string& policy, std::vector<job::JobSpec> jobs) {
    Trace t;
    t.jobs = std::move(jobs);
    ReplayOptions o;
    o.queues = std::make_shared<const tenancy::QueueTree>(tenancy::QueueTree::FromTenantShares(t.jobs, *cluster_));
    auto p = policies_.Find(policy);
    EXPECT_TRUE(p.ok());
    auto r = RunReplay(*cluster_, t, *p, plugins_, o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : PolicyResult{};
  }

  framework::PluginRegistry plugins_;
  framework::PolicyRegistry policies_;
  std::unique_ptr<cluster::Cluster> cluster_;
};

TEST_F(TenantFigures, FifoByHand) {
  // a1 (alice, 8 GPUs, 2 h) runs first; b1 (bob, 8 GPUs, 1 h) waits 2 h.
  const PolicyResult r = Run("fifo", {Job(0, "alice", 0, 2 * kHourS, 8), Job(1, "bob", 0, kHourS, 8)});
  ASSERT_EQ(r.tenants.size(), 2u);
  const TenantResult& a = r.tenants[0];
  const TenantResult& b = r.tenants[1];
  EXPECT_EQ(a.tenant, "alice");
  EXPECT_EQ(a.queue, "alice");
  EXPECT_EQ(b.tenant, "bob");
  EXPECT_EQ(a.jobs, 1);
  EXPECT_EQ(b.jobs_finished, 1);
  EXPECT_DOUBLE_EQ(a.jct_s.mean, 2 * kHourS);
  EXPECT_DOUBLE_EQ(b.jct_s.mean, 3 * kHourS);
  EXPECT_DOUBLE_EQ(b.queue_delay_s.mean, 2 * kHourS);
  EXPECT_DOUBLE_EQ(b.queue_delay_s.p99, 2 * kHourS);
  // Makespan 3 h on 8 GPUs: alice held 16 of 24 GPU-hours, bob 8.
  EXPECT_NEAR(a.gpu_share, 2.0 / 3, 1e-9);
  EXPECT_NEAR(b.gpu_share, 1.0 / 3, 1e-9);
  // Guarantees from the demand shares (16 and 8 GPU-hours of 24).
  EXPECT_NEAR(a.guarantee_share, 2.0 / 3, 1e-3);
  EXPECT_NEAR(b.guarantee_share, 1.0 / 3, 1e-3);
  EXPECT_NEAR(a.fair_gpus, 16.0 / 3, 1e-3);
  // rho: alice alone on 5.33 GPUs runs her 8-GPU job 1.5 x longer: 3 h; she
  // took 2 h. bob alone on 2.67 GPUs: 3 h, as he took.
  EXPECT_NEAR(a.rho.mean, 2.0 / 3, 1e-3);
  EXPECT_NEAR(b.rho.mean, 1.0, 1e-3);
  EXPECT_EQ(a.preemptions + b.preemptions, 0);
  EXPECT_EQ(r.preemptions, 0);
  EXPECT_DOUBLE_EQ(r.pending_s.max, 2 * kHourS);
}

TEST_F(TenantFigures, PreemptionsAndLostWork) {
  // srtf: bob's 1 h job arrives at 30 min and evicts alice's 2 h job (1.5 h
  // left), which checkpointed at 20 min: 10 min on 8 GPUs are lost, and it
  // resumes at 1.5 h with 100 min to go.
  const PolicyResult r =
      Run("srtf", {Job(0, "alice", 0, 2 * kHourS, 8, SecondsToUs(20 * 60)), Job(1, "bob", 1800, kHourS, 8)});
  ASSERT_EQ(r.tenants.size(), 2u);
  const TenantResult& a = r.tenants[0];
  const TenantResult& b = r.tenants[1];
  EXPECT_EQ(a.preemptions, 1);
  EXPECT_NEAR(a.gpu_hours_lost, 8.0 * 10 / 60, 1e-9);
  EXPECT_EQ(b.preemptions, 0);
  EXPECT_EQ(r.preemptions, 1);
  EXPECT_NEAR(r.gpu_hours_lost, a.gpu_hours_lost, 1e-12);
  EXPECT_DOUBLE_EQ(b.jct_s.mean, kHourS);
  EXPECT_DOUBLE_EQ(a.jct_s.mean, 1.5 * kHourS + 100 * 60);
  EXPECT_DOUBLE_EQ(a.queue_delay_s.mean, 0);  // first start only
  // Pending in all: alice waited the hour bob ran.
  EXPECT_DOUBLE_EQ(r.pending_s.max, kHourS);
}

TEST_F(TenantFigures, ReportsCarryTenants) {
  SimulateOutput out;
  out.results.push_back(Run("fifo", {Job(0, "alice", 0, 2 * kHourS, 8), Job(1, "bob", 0, kHourS, 8)}));
  const std::string json = ResultsToJson(out);
  for (const char* key : {"\"tenants\"", "\"guarantee_share\"", "\"rho_mean\"", "\"gpu_hours_lost\"",
                          "\"jct_p99_s\"", "\"queue_delay_p99_s\"", "\"pending_mean_s\""})
    EXPECT_NE(json.find(key), std::string::npos) << key;
  const std::string text = FormatTextSummary(out);
  EXPECT_NE(text.find("per tenant"), std::string::npos) << text;
  EXPECT_NE(text.find("guarantee%"), std::string::npos);
  const std::string html = RenderHtmlReport(out);
  EXPECT_NE(html.find("Per tenant"), std::string::npos);
  EXPECT_NE(html.find("alice"), std::string::npos);
}

// --tenants-from on real traces: Philly's VCs become tenants (each guaranteed
// its share of the demand), "none" merges them, and a trace without users says so.
TEST(TenantsFrom, PhillyVcsNoneAndMissingUsers) {
  SimulateOptions o;
  o.cluster = "16x8:P100";
  o.trace = berth::testing::DataDir() + "/pollux-philly/philly.csv";
  o.mode = "replay";
  o.max_jobs = 300;
  o.policies = {"fifo"};
  o.tenants_from = "vc";
  auto vc = RunSimulation(o);
  ASSERT_TRUE(vc.ok()) << vc.status().ToString();
  const auto& tenants = vc->results[0].tenants;
  ASSERT_GE(tenants.size(), 2u);
  double guaranteed = 0;
  int64_t jobs = 0;
  for (const auto& t : tenants) {
    EXPECT_EQ(t.queue, t.tenant);
    guaranteed += t.guarantee_share;
    jobs += t.jobs;
  }
  EXPECT_NEAR(guaranteed, 1.0, 1e-3);
  EXPECT_EQ(jobs, 300);

  o.tenants_from = "none";
  auto none = RunSimulation(o);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  ASSERT_EQ(none->results[0].tenants.size(), 1u);
  EXPECT_EQ(none->results[0].tenants[0].queue, "default");
  EXPECT_EQ(none->results[0].jct_s.mean, vc->results[0].jct_s.mean);  // fifo does not read the queues

  o.tenants_from = "user";
  auto user = RunSimulation(o);
  ASSERT_FALSE(user.ok());
  EXPECT_NE(user.status().message().find("no user field"), std::string::npos) << user.status().message();

  o.tenants_from = "team";
  EXPECT_FALSE(RunSimulation(o).ok());
  o.tenants_from = "none";
  o.partition = "leaf:vc-";
  auto both = RunSimulation(o);
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("--partition"), std::string::npos);
}

// --rate-scale: submission gaps divided by R (durations kept), so the same
// jobs arrive sooner and the run ends sooner; only trace replays take it.
TEST(RateScale, ReplayCompressesArrivals) {
  SimulateOptions o;
  o.cluster = "64x8:P100";
  o.trace = berth::testing::DataDir() + "/pollux-philly/philly.csv";
  o.mode = "replay";
  o.max_jobs = 300;
  o.policies = {"fifo"};
  auto base = RunSimulation(o);
  ASSERT_TRUE(base.ok()) << base.status().ToString();
  o.rate_scale = 4;
  auto fast = RunSimulation(o);
  ASSERT_TRUE(fast.ok()) << fast.status().ToString();
  const PolicyResult& a = base->results[0];
  const PolicyResult& b = fast->results[0];
  EXPECT_EQ(a.jobs_total, b.jobs_total);
  EXPECT_LT(b.makespan_s, a.makespan_s);
  EXPECT_GE(b.queue_delay_s.mean, a.queue_delay_s.mean);  // the same work in less time
  for (double bad : {0.0, -1.0, 2e6}) {
    o.rate_scale = bad;
    auto r = RunSimulation(o);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--rate-scale"), std::string::npos) << r.status().message();
  }
  o.rate_scale = 2;
  o.mode = "fgd";
  auto fgd = RunSimulation(o);
  ASSERT_FALSE(fgd.ok());
  EXPECT_NE(fgd.status().message().find("--rate-scale needs"), std::string::npos) << fgd.status().message();
}

// --queues: a YAML tree names the leaves and guarantees; unknown tenants go to
// its "default" leaf.
TEST(TenantsFrom, QueueFileGivesTheGuarantees) {
  const std::string path = ::testing::TempDir() + "/tenancy_queues.yaml";
  {
    std::ofstream f(path);
    f << "half_life: 6h\nqueues:\n  - name: big\n    tenants: [\"6214e9\"]\n    quotas:\n      \"*\": {guarantee: 64}\n"
         "  - name: default\n    quotas:\n      \"*\": {guarantee: 64}\n";
  }
  SimulateOptions o;
  o.cluster = "16x8:P100";
  o.trace = berth::testing::DataDir() + "/pollux-philly/philly.csv";
  o.mode = "replay";
  o.max_jobs = 300;
  o.policies = {"fifo"};
  o.queues = path;
  auto r = RunSimulation(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  bool saw_big = false;
  for (const auto& t : r->results[0].tenants) {
    EXPECT_NEAR(t.guarantee_share, 0.5, 1e-9) << t.tenant;
    EXPECT_EQ(t.queue, t.tenant == "6214e9" ? "big" : "default");
    saw_big = saw_big || t.tenant == "6214e9";
  }
  EXPECT_TRUE(saw_big);
  o.queues = path + ".missing";
  EXPECT_FALSE(RunSimulation(o).ok());
}

}  // namespace
}  // namespace berth::sim

namespace berth::sim {
namespace {

// unit: normalized: guarantees in H100-equivalents, shares of the cluster's
// reference-GPU capacity; with unit: gpus and a reference, the same
// normalized figures beside GPU guarantees. A bad unit names the line.
TEST(TenantsFrom, NormalizedQueueFile) {
  const std::string path = ::testing::TempDir() + "/tenancy_norm_queues.yaml";
  auto write = [&](const std::string& head, const std::string& g) {
    std::ofstream f(path);
    f << head << "queues:\n  - name: big\n    tenants: [\"6214e9\"]\n    quotas:\n      \"*\": {guarantee: " << g
      << "}\n  - name: default\n    quotas:\n      \"*\": {guarantee: " << g << "}\n";
  };
  SimulateOptions o;
  o.cluster = "4x8:V100+4x8:K80";
  o.trace = berth::testing::DataDir() + "/pollux-philly/philly.csv";
  o.mode = "replay";
  o.max_jobs = 200;
  o.policies = {"fairshare"};
  o.queues = path;
  o.catalog = berth::testing::SourceDir() + "/data/accelerators.yaml";
  o.throughputs = berth::testing::DataDir() + "/gavel/simulation_throughputs.json";
  write("unit: normalized\nreference: H100\n", "1");
  auto r = RunSimulation(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  double share = 0;
  for (const auto& t : r->results[0].tenants) {
    EXPECT_GT(t.guarantee_share, 0.0) << t.tenant;
    EXPECT_LT(t.guarantee_share, 0.5) << t.tenant;  // 1 H100-equivalent of a cluster worth more than 2
    EXPECT_GE(t.normalized_share, 0.0) << t.tenant;
    share += t.normalized_share;
  }
  EXPECT_GT(share, 0.0);
  write("reference: H100\n", "32");
  auto g = RunSimulation(o);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  for (const auto& t : g->results[0].tenants) {
    EXPECT_NEAR(t.guarantee_share, 0.5, 1e-9) << t.tenant;
    EXPECT_GE(t.normalized_share, 0.0) << t.tenant;
  }
  write("unit: h100\n", "1");
  auto bad = RunSimulation(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(":1: unit: expected gpus or normalized"), std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace berth::sim
