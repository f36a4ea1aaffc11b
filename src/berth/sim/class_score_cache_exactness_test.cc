// The class score cache makes the full scan's decisions on real workloads:
// fgd, berth-frag and gpuclustering (node-local scores kept per task class,
// scheduler/class_score_cache.h) give the same decision-log hash and
// allocation as with --full-scan (SchedulerOptions::full_scan) on the openb
// FGD protocol (seeds 42-44 on the default trace; seed 42 on one trace of each
// variant family: GPU sharing, multi-GPU, GPU specs, CPU-only pods), on the
// original simulator's reference order and ranking, on the openb trace
// replayed at its own pace, and on a Philly replay where jobs queue.
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

constexpr const char* kPolicies[] = {"fgd", "berth-frag", "gpuclustering"};

class ClassScoreCacheExactness : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(plugins::RegisterBuiltinPlugins(plugins_).ok());
    ASSERT_TRUE(plugins::RegisterBuiltinPolicies(policies_).ok());
  }

  void ExpectSameFgd(const cluster::Cluster& c, const Trace& t, const FgdOptions& o, const std::string& what) {
    auto input = BuildFgdInput(c, t, o);
    ASSERT_TRUE(input.ok()) << input.status().ToString();
    for (const char* policy : kPolicies) {
      auto profile = policies_.Find(policy);
      ASSERT_TRUE(profile.ok()) << policy;
      FgdOptions scan = o;
      scan.full_scan = true;
      auto fast_r = RunFgd(c, *input, *profile, plugins_, o);
      auto scan_r = RunFgd(c, *input, *profile, plugins_, scan);
      ASSERT_TRUE(fast_r.ok()) << policy << ": " << fast_r.status().ToString();
      ASSERT_TRUE(scan_r.ok()) << policy << ": " << scan_r.status().ToString();
      EXPECT_EQ(fast_r->decision_log_hash, scan_r->decision_log_hash) << policy << " " << what;
      EXPECT_EQ(fast_r->allocated_milli_gpu, scan_r->allocated_milli_gpu) << policy << " " << what;
      EXPECT_GT(fast_r->allocated_milli_gpu, 0) << policy << " " << what;
    }
  }

  void ExpectSameReplay(const cluster::Cluster& c, const Trace& t, bool queues) {
    for (const char* policy : kPolicies) {
      auto profile = policies_.Find(policy);
      ASSERT_TRUE(profile.ok()) << policy;
      ReplayOptions fast;
      ReplayOptions scan;
      scan.full_scan = true;
      auto a = RunReplay(c, t, *profile, plugins_, fast);
      auto b = RunReplay(c, t, *profile, plugins_, scan);
      ASSERT_TRUE(a.ok()) << policy << ": " << a.status().ToString();
      ASSERT_TRUE(b.ok()) << policy << ": " << b.status().ToString();
      EXPECT_EQ(a->decision_log_hash, b->decision_log_hash) << policy;
      EXPECT_EQ(a->jobs_placed, b->jobs_placed) << policy;
      if (queues) EXPECT_GT(a->queue_delay_s.mean, 0) << policy;
    }
  }

  framework::PluginRegistry plugins_;
  framework::PolicyRegistry policies_;
};

TEST_F(ClassScoreCacheExactness, OpenbFgdProtocolSeeds42To44) {
  auto in = testing::OpenbDefault();
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  for (uint64_t seed : {42, 43, 44}) {
    FgdOptions o;
    o.seed = seed;
    ExpectSameFgd((*in)->cluster, (*in)->trace, o, "seed " + std::to_string(seed));
  }
}

TEST_F(ClassScoreCacheExactness, OpenbVariants) {
  auto in = testing::OpenbDefault();
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  const std::string d = testing::DataDir() + "/alibaba-gpu-v2023/";
  for (const char* variant : {"gpushare40", "multigpu30", "gpuspec20", "cpu050"}) {
    auto t = ReadTrace(d + "openb_pod_list_" + variant + ".csv", "openb", {});
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    FgdOptions o;
    o.seed = 42;
    ExpectSameFgd((*in)->cluster, *t, o, variant);
  }
}

TEST_F(ClassScoreCacheExactness, ReferenceOrderAndRanking) {
  auto in = testing::OpenbDefault();
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  const std::string d = testing::DataDir() + "/fgd-reference-run/";
  FgdOptions o;
  o.seed = 42;
  o.arrival_order_file = d + "pod_order_seed42.csv";
  o.node_rank_file = d + "node_rank_seed42.csv";
  ExpectSameFgd((*in)->cluster, (*in)->trace, o, "reference run");
}

TEST_F(ClassScoreCacheExactness, OpenbReplay) {
  auto in = testing::OpenbDefault();
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  ExpectSameReplay((*in)->cluster, (*in)->trace, /*queues=*/false);
}

// A day of Philly (339 jobs, gangs of up to 128 GPUs) on 32 GPUs: jobs queue
// and many attempts fit nowhere (their verdicts come from the cache).
TEST_F(ClassScoreCacheExactness, PhillyReplayWithQueueing) {
  auto c = cluster::ParseClusterSpec("4x8:V100/leaf=2");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ReadOptions ro;
  ro.window_from = "2017-10-03";
  ro.window_to = "2017-10-03";
  auto t = ReadTrace(testing::DataDir() + "/pollux-philly/philly.csv", "philly", ro);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 339u);
  ExpectSameReplay(*c, *t, /*queues=*/true);
}

}  // namespace
}  // namespace berth::sim
