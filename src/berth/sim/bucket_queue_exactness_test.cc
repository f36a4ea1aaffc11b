// The bucketed queue order (scheduler/bucket_queue.h, ADR 0021) makes the full
// sort's decisions on real workloads: fairshare and fairshare-backfill give
// the same decision-log hash as with --full-sort (SchedulerOptions::
// full_sort) on a Philly day replayed on 32 GPUs (339 jobs, so they queue):
// with each tenant its own leaf, and with queues from the tenants' shares, a
// half-life and a short age boost (so jobs get promoted).
#include <gtest/gtest.h>

#include <memory>

#include "berth/cluster/loaders.h"
#include "berth/plugins/builtin.h"
#include "berth/sim/readers/readers.h"
#include "berth/sim/replay.h"
#include "berth/tenancy/queue_tree.h"
#include "berth/testing/paths.h"

namespace berth::sim {
namespace {

class BucketQueueExactness : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(plugins::RegisterBuiltinPlugins(plugins_).ok());
    ASSERT_TRUE(plugins::RegisterBuiltinPolicies(policies_).ok());
  }
  void ExpectSame(const cluster::Cluster& c, const Trace& t, ReplayOptions fast, const char* boost) {
    for (const char* policy : {"fairshare", "fairshare-backfill"}) {
      auto profile = policies_.Find(policy);
      ASSERT_TRUE(profile.ok()) << policy;
      if (boost != nullptr) profile->queue_sort_args["age_boost_after_s"] = boost;
      ReplayOptions sorted = fast;
      sorted.full_sort = true;
      auto a = RunReplay(c, t, *profile, plugins_, fast);
      auto b = RunReplay(c, t, *profile, plugins_, sorted);
      ASSERT_TRUE(a.ok()) << policy << ": " << a.status().ToString();
      ASSERT_TRUE(b.ok()) << policy << ": " << b.status().ToString();
      EXPECT_EQ(a->decision_log_hash, b->decision_log_hash) << policy;
      EXPECT_EQ(a->jobs_placed, b->jobs_placed) << policy;
      EXPECT_GT(a->queue_delay_s.mean, 0) << policy;
    }
  }
  framework::PluginRegistry plugins_;
  framework::PolicyRegistry policies_;
};

StatusOr<Trace> Philly(const char* from, const char* to) {
  ReadOptions ro;
  ro.window_from = from;
  ro.window_to = to;
  return ReadTrace(testing::DataDir() + "/pollux-philly/philly.csv", "philly", ro);
}

TEST_F(BucketQueueExactness, PhillyDayAutoLeaves) {
  auto c = cluster::ParseClusterSpec("4x8:V100/leaf=2");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto t = Philly("2017-10-03", "2017-10-03");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ExpectSame(*c, *t, ReplayOptions{}, nullptr);
}

TEST_F(BucketQueueExactness, PhillyDayTenantSharesHalfLifeAgeBoost) {
  auto c = cluster::ParseClusterSpec("4x8:V100/leaf=2");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto t = Philly("2017-10-03", "2017-10-03");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ReplayOptions o;
  o.queues = std::make_shared<const tenancy::QueueTree>(tenancy::QueueTree::FromTenantShares(t->jobs, *c));
  o.usage_half_life = SecondsToUs(3600);
  ExpectSame(*c, *t, o, "1800");
}

}  // namespace
}  // namespace berth::sim
