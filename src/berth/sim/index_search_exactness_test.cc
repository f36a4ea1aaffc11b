// The index search makes the full scan's decisions on real workloads: every
// policy whose placement searches the state's indexes gives the same
// decision-log hash as with --full-scan (SchedulerOptions::full_scan), on the
// openb FGD protocol (seeds 42-44, shared GPUs and heterogeneous nodes), on
// the openb trace replayed at its own pace, and on a Philly replay on a
// cluster small enough that jobs queue (gangs, preemption, backfill).
#include <gtest/gtest.h>

#include "berth/cluster/loaders.h"
#include "berth/plugins/builtin.h"
#include "berth/sim/fgd_protocol.h"
#include "berth/sim/readers/readers.h"
#include "berth/sim/replay.h"
#include "berth/testing/openb.h"
#include "berth/testing/paths.h"

namespace berth::sim {
namespace {

class IndexSearchExactness : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(plugins::RegisterBuiltinPlugins(plugins_).ok());
    ASSERT_TRUE(plugins::RegisterBuiltinPolicies(policies_).ok());
  }
  framework::PluginRegistry plugins_;
  framework::PolicyRegistry policies_;
};

TEST_F(IndexSearchExactness, OpenbFgdProtocolSeeds42To44) {
  auto in = testing::OpenbDefault();
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  for (uint64_t seed : {42, 43, 44}) {
    FgdOptions o;
    o.seed = seed;
    auto input = BuildFgdInput((*in)->cluster, (*in)->trace, o);
    ASSERT_TRUE(input.ok()) << input.status().ToString();
    for (const char* policy : {"bestfit", "firstfit", "worstfit", "dotprod", "gpupacking", "fifo", "sjf", "priority", "topology"}) {
      auto profile = policies_.Find(policy);
      ASSERT_TRUE(profile.ok()) << policy;
      FgdOptions scan = o;
      scan.full_scan = true;
      auto fast_r = RunFgd((*in)->cluster, *input, *profile, plugins_, o);
      auto scan_r = RunFgd((*in)->cluster, *input, *profile, plugins_, scan);
      ASSERT_TRUE(fast_r.ok() && scan_r.ok()) << policy;
      EXPECT_EQ(fast_r->decision_log_hash, scan_r->decision_log_hash) << policy << " seed " << seed;
      EXPECT_EQ(fast_r->allocated_milli_gpu, scan_r->allocated_milli_gpu) << policy << " seed " << seed;
    }
  }
}

void ExpectSameReplay(const cluster::Cluster& c, const Trace& t, const framework::PolicyRegistry& policies,
                      const framework::PluginRegistry& plugins, const std::vector<const char*>& names,
                      bool queues = false) {
  for (const char* policy : names) {
    auto profile = policies.Find(policy);
    ASSERT_TRUE(profile.ok()) << policy;
    ReplayOptions fast;
    ReplayOptions scan;
    scan.full_scan = true;
    auto a = RunReplay(c, t, *profile, plugins, fast);
    auto b = RunReplay(c, t, *profile, plugins, scan);
    ASSERT_TRUE(a.ok()) << policy << ": " << a.status().ToString();
    ASSERT_TRUE(b.ok()) << policy << ": " << b.status().ToString();
    EXPECT_EQ(a->decision_log_hash, b->decision_log_hash) << policy;
    EXPECT_EQ(a->jobs_placed, b->jobs_placed) << policy;
    if (queues) EXPECT_GT(a->queue_delay_s.mean, 0) << policy;
  }
}

TEST_F(IndexSearchExactness, OpenbReplay) {
  auto in = testing::OpenbDefault();
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  ExpectSameReplay((*in)->cluster, (*in)->trace, policies_, plugins_, {"bestfit", "worstfit", "dotprod", "gpupacking", "sjf"});
}

// A day of Philly (339 jobs, gangs of up to 128 GPUs) on 32 GPUs:
// jobs queue, so orders, preemption and backfill all act.
TEST_F(IndexSearchExactness, PhillyReplayWithQueueing) {
  auto c = cluster::ParseClusterSpec("4x8:V100/leaf=2");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ReadOptions ro;
  ro.window_from = "2017-10-03";
  ro.window_to = "2017-10-03";
  auto t = ReadTrace(testing::DataDir() + "/pollux-philly/philly.csv", "philly", ro);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 339u);
  ExpectSameReplay(*c, *t, policies_, plugins_,
                   {"fifo", "sjf", "priority", "srtf", "tiresias", "fairshare", "fairshare-backfill", "backfill",
                    "topology", "priority-preempt", "bestfit", "firstfit", "worstfit", "dotprod"},
                   /*queues=*/true);
}

}  // namespace
}  // namespace berth::sim
