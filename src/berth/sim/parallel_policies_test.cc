// `berth simulate --policy a,b,c --threads N`: the policies run side by side
// and report exactly what they report one after another (every JSON figure
// but the timings, the decision-log hashes), in replay, fgd and gavel mode;
// an unknown policy is named as without threads.
#include <gtest/gtest.h>

#include <atomic>

#include "berth/sim/report_test_util.h"
#include "berth/testing/paths.h"

namespace berth::sim {
namespace {

StatusOr<std::string> Report(SimulateOptions o, int threads) {
  o.threads = threads;
  return testing::ReportWithoutTimings(o);
}

void ExpectSameForAnyThreads(const SimulateOptions& o) {
  auto one = Report(o, 1);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  for (int threads : {2, 3, 0}) {
    auto many = Report(o, threads);
    ASSERT_TRUE(many.ok()) << many.status().ToString();
    EXPECT_EQ(*one, *many) << "threads " << threads;
  }
}

TEST(ParallelPolicies, ReplayReportsTheSameForAnyThreadCount) {
  SimulateOptions o;
  o.cluster = "8x8:V100/leaf=4";
  o.trace = berth::testing::DataDir() + "/pollux-philly/philly.csv";
  o.trace_format = "philly";
  o.mode = "replay";
  o.max_jobs = 1500;
  o.policies = {"fifo", "fairshare", "topology", "berth-frag", "backfill"};
  std::atomic<int64_t> last_total{0}, calls{0};
  o.progress = [&](int64_t, int64_t total) {
    last_total.store(total);
    calls.fetch_add(1);
  };
  ExpectSameForAnyThreads(o);
  EXPECT_GT(calls.load(), 0);
  EXPECT_GT(last_total.load(), 0);
}

TEST(ParallelPolicies, FgdReportsTheSameForAnyThreadCount) {
  SimulateOptions o;
  o.cluster = berth::testing::DataDir() + "/alibaba-gpu-v2023/openb_node_list_gpu_node.csv";
  o.trace = berth::testing::DataDir() + "/alibaba-gpu-v2023/openb_pod_list_default.csv";
  o.mode = "fgd";
  o.load = 0.5;
  o.policies = {"bestfit", "fgd", "berth-frag"};
  ExpectSameForAnyThreads(o);
}

TEST(ParallelPolicies, GavelReportsTheSameForAnyThreadCount) {
  SimulateOptions o;
  o.cluster = "2x8:MISC+4x2:P100+2x2:T4+1x8:V100+1x8:V100M32";
  o.workload = "gavel";
  o.trace = berth::testing::DataDir() + "/pollux-philly/philly.csv";
  o.trace_format = "philly";
  o.max_jobs = 120;
  o.catalog = berth::testing::SourceDir() + "/data/accelerators.yaml";
  o.throughputs = berth::testing::DataDir() + "/gavel/simulation_throughputs.json";
  o.policies = {"las", "gavel-las", "fifo"};
  o.seed = 1;
  ExpectSameForAnyThreads(o);
}

TEST(ParallelPolicies, AnUnknownPolicyIsNamedWithAnyThreadCount) {
  SimulateOptions o;
  o.cluster = "4x8:V100";
  o.trace = berth::testing::DataDir() + "/pollux-philly/philly.csv";
  o.trace_format = "philly";
  o.max_jobs = 50;
  o.policies = {"fifo", "no-such-policy", "also-missing"};
  for (int threads : {1, 3}) {
    auto r = Report(o, threads);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("no-such-policy"), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace berth::sim
