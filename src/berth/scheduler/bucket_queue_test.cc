// The bucketed pending queue (bucket_queue.h) orders every pass exactly as a
// full sort with the queue-sort plugin's Less: schedulers with and without
// SchedulerOptions::full_sort run the same random stream (submissions with
// tenants, priorities and gangs; departures; evictions; cancellations; a
// short age boost) and must visit the pending jobs in the same order, make the
// same decisions and give the same verdicts.
#include "berth/scheduler/bucket_queue.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/cluster/loaders.h"
#include "berth/common/clock.h"
#include "berth/common/rng.h"
#include "berth/framework/registry.h"
#include "berth/plugins/builtin.h"
#include "berth/scheduler/lockstep_test_util.h"
#include "berth/scheduler/scheduler.h"
#include "berth/scheduler/tree_lockstep_test_util.h"

namespace berth::scheduler {
namespace {

using lockstep::Registries;

job::JobSpec RandomJob(Rng& rng, int64_t id) {
  job::JobSpec j = tree_lockstep::TenantJob(rng, id);
  j.checkpoint_interval = rng.Uniform(2) ? SecondsToUs(5) : 0;
  job::TaskGroup g;
  g.name = "w";
  const int32_t sizes[] = {0, 1, 1, 2, 4, 8};
  g.gpus = sizes[rng.Uniform(6)];
  g.count = rng.Uniform(4) == 0 ? 2 + static_cast<int32_t>(rng.Uniform(3)) : 1;
  g.cpu_milli = 1000;
  g.memory_mib = 1024;
  j.groups.push_back(g);
  return j;
}

void RunLockstep(const std::string& policy, uint64_t seed, bool with_tree, int steps) {
  Registries reg;
  Rng rng(seed);
  auto cluster = cluster::ParseClusterSpec("6x8:H100/leaf=2");
  ASSERT_TRUE(cluster.ok());
  SchedulerOptions opts;
  opts.seed = seed;
  if (with_tree) opts.queues = tree_lockstep::Tree(*cluster, rng, {.parent_weights = 3, .leaf_weights = 4});
  opts.usage_half_life = rng.Uniform(2) ? SecondsToUs(30) : 0;
  SchedulerOptions sort_opts = opts;
  sort_opts.full_sort = true;
  // A short age boost so that jobs get promoted during the run.
  framework::Profile profile = *reg.policies.Find(policy);
  profile.queue_sort_args = {{"age_boost_after_s", std::to_string(20 + rng.Uniform(60))}};
  ManualClock clock(0);
  const framework::PluginContext context{&*cluster, {}};
  auto fa = framework::Framework::Create(profile, reg.plugins, context);
  auto fb = framework::Framework::Create(profile, reg.plugins, context);
  ASSERT_TRUE(fa.ok() && fb.ok()) << fa.status().ToString();
  Scheduler fast(*cluster, std::move(fa).value(), opts, clock);
  Scheduler full(*cluster, std::move(fb).value(), sort_opts, clock);
  std::vector<JobId> running, pending;
  int64_t next_id = 0;
  for (int step = 0; step < steps; ++step) {
    clock.Advance(SecondsToUs(static_cast<double>(1 + rng.Uniform(5))));
    const uint64_t op = rng.Uniform(20);
    if (op < 9) {
      const job::JobSpec j = RandomJob(rng, next_id++);
      ASSERT_TRUE(fast.Submit(j).ok());
      ASSERT_TRUE(full.Submit(j).ok());
      pending.push_back(j.id);
    } else if (op < 15) {
      tree_lockstep::FinishOne(fast, full, running, rng);
    } else if (op < 17) {
      if (running.empty()) continue;
      const size_t k = rng.Uniform(running.size());
      ASSERT_TRUE(fast.Preempt(running[k]).ok());
      ASSERT_TRUE(full.Preempt(running[k]).ok());
      pending.push_back(running[k]);
      running[k] = running.back();
      running.pop_back();
    } else if (op < 18) {
      tree_lockstep::CancelOne(fast, full, pending, rng);
    }
    if (::testing::Test::HasFatalFailure()) return;
    tree_lockstep::PassAndCompare(fast, full, running, pending,
                                  policy + " seed " + std::to_string(seed) + " step " + std::to_string(step));
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(fast.log().entries(), 0);
}

TEST(BucketQueueLockstep, FairshareSameOrderAsFullSort) {
  for (uint64_t seed = 1; seed <= 12; ++seed) RunLockstep("fairshare", seed, seed % 2 == 0, 600);
}

TEST(BucketQueueLockstep, FairshareBackfillSameOrderAsFullSort) {
  for (uint64_t seed = 1; seed <= 8; ++seed) RunLockstep("fairshare-backfill", seed, seed % 2 == 1, 600);
}

// The structure alone: promotion, removal and re-adding keep each list sorted.
TEST(BucketQueue, PromotesInOrderAndForgetsRemoved) {
  // Jobs are their own keys: within a bucket, lower index first.
  const BucketQueue::Less less = [](int32_t a, int32_t b) { return a < b; };
  class ByBucket final : public framework::BucketedOrder {
   public:
    int32_t Bucket(const framework::QueuedJob& j) const override { return j.queue; }
    bool WithinLess(const framework::QueuedJob& a, const framework::QueuedJob& b) const override {
      return a.seq < b.seq;
    }
    TimeUs PromoteAfter() const override { return 10; }
    bool OrderBuckets(std::vector<int32_t>& buckets) const override {
      std::sort(buckets.rbegin(), buckets.rend());  // highest bucket first
      return true;
    }
  } plugin;
  BucketQueue q;
  q.Add(5, 0, 0, true, less);
  q.Add(3, 1, 1, true, less);
  q.Add(4, 0, 2, true, less);
  q.Add(1, 1, 20, true, less);
  std::vector<int32_t> out;
  ASSERT_TRUE(q.Order(plugin, 5, less, out));
  EXPECT_EQ(out, (std::vector<int32_t>{1, 3, 4, 5}));
  ASSERT_TRUE(q.Order(plugin, 11, less, out));  // 5 and 3 waited 10
  EXPECT_EQ(out, (std::vector<int32_t>{3, 5, 1, 4}));
  q.Remove(5);
  q.RemoveAll(std::vector<int32_t>{4, 9});
  q.Add(5, 0, 21, true, less);  // queued again: not promoted
  ASSERT_TRUE(q.Order(plugin, 25, less, out));
  EXPECT_EQ(out, (std::vector<int32_t>{3, 1, 5}));
  EXPECT_EQ(q.size(), 3u);
  ASSERT_TRUE(q.Order(plugin, 31, less, out));  // 5 and 1 promoted now
  EXPECT_EQ(out, (std::vector<int32_t>{1, 3, 5}));
  EXPECT_TRUE(q.Usable());
  q.Add(7, 0, 40, true, less);
  q.Add(8, 0, 35, true, less);  // time went back: the promotion FIFO would be out of order
  EXPECT_FALSE(q.Usable());
}

}  // namespace
}  // namespace berth::scheduler
