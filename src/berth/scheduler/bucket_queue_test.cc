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
#include "berth/scheduler/scheduler.h"
#include "berth/tenancy/queue_tree.h"

namespace berth::scheduler {
namespace {

struct Registries {
  framework::PluginRegistry plugins;
  framework::PolicyRegistry policies;
  Registries() {
    EXPECT_TRUE(plugins::RegisterBuiltinPlugins(plugins).ok());
    EXPECT_TRUE(plugins::RegisterBuiltinPolicies(policies).ok());
  }
};

const char* const kTenants[] = {"t0", "t1", "t2", "t3", "t4", "t5"};

// A two-level tree: two parents of unequal weight, three leaves each.
std::shared_ptr<const tenancy::QueueTree> Tree(const cluster::Cluster& cluster, Rng& rng) {
  std::vector<tenancy::QueueSpec> specs;
  tenancy::QueueSpec p0, p1;
  p0.name = "p0";
  p0.weight = 1.0 + static_cast<double>(rng.Uniform(3));
  p1.name = "p1";
  specs.push_back(p0);
  specs.push_back(p1);
  for (int i = 0; i < 6; ++i) {
    tenancy::QueueSpec s;
    s.name = std::string("q") + std::to_string(i);
    s.parent = i < 3 ? "p0" : "p1";
    s.weight = 1.0 + static_cast<double>(rng.Uniform(4));
    s.tenants = {kTenants[i]};
    specs.push_back(s);
  }
  auto t = tenancy::QueueTree::Create(specs, cluster);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::make_shared<const tenancy::QueueTree>(std::move(t).value());
}

job::JobSpec RandomJob(Rng& rng, int64_t id) {
  job::JobSpec j;
  j.id = JobId(id);
  j.name = "j" + std::to_string(id);
  j.tenant = kTenants[rng.Uniform(6)];
  j.priority = static_cast<int32_t>(rng.Uniform(3));
  j.duration = SecondsToUs(static_cast<double>(1 + rng.Uniform(50)));
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
  if (with_tree) opts.queues = Tree(*cluster, rng);
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
  auto visited_ids = [](const Scheduler& s) { return s.visited_in_last_pass(); };
  for (int step = 0; step < steps; ++step) {
    clock.Advance(SecondsToUs(static_cast<double>(1 + rng.Uniform(5))));
    const uint64_t op = rng.Uniform(20);
    if (op < 9) {
      const job::JobSpec j = RandomJob(rng, next_id++);
      ASSERT_TRUE(fast.Submit(j).ok());
      ASSERT_TRUE(full.Submit(j).ok());
      pending.push_back(j.id);
    } else if (op < 15) {
      if (running.empty()) continue;
      const size_t k = rng.Uniform(running.size());
      ASSERT_TRUE(fast.Finish(running[k], job::JobState::kSucceeded).ok());
      ASSERT_TRUE(full.Finish(running[k], job::JobState::kSucceeded).ok());
      running[k] = running.back();
      running.pop_back();
    } else if (op < 17) {
      if (running.empty()) continue;
      const size_t k = rng.Uniform(running.size());
      ASSERT_TRUE(fast.Preempt(running[k]).ok());
      ASSERT_TRUE(full.Preempt(running[k]).ok());
      pending.push_back(running[k]);
      running[k] = running.back();
      running.pop_back();
    } else if (op < 18) {
      if (pending.empty()) continue;
      const size_t k = rng.Uniform(pending.size());
      const JobRecord* r = fast.Find(pending[k]);
      if (r != nullptr && r->state == job::JobState::kPending) {
        ASSERT_TRUE(fast.Finish(pending[k], job::JobState::kCancelled).ok());
        ASSERT_TRUE(full.Finish(pending[k], job::JobState::kCancelled).ok());
      }
      pending[k] = pending.back();
      pending.pop_back();
    }
    const std::vector<JobId> a = fast.Schedule();
    const std::vector<JobId> b = full.Schedule();
    ASSERT_EQ(a, b) << policy << " seed " << seed << " step " << step;
    ASSERT_EQ(visited_ids(fast), visited_ids(full)) << policy << " seed " << seed << " step " << step;
    for (JobId id : fast.visited_in_last_pass()) {
      ASSERT_EQ(fast.Find(id)->last_verdict.reason, full.Find(id)->last_verdict.reason) << policy << " step " << step;
    }
    ASSERT_EQ(fast.pending_count(), full.pending_count());
    ASSERT_EQ(fast.log().hash(), full.log().hash()) << policy << " seed " << seed << " step " << step;
    for (JobId id : a) running.push_back(id);
    for (JobId id : fast.preempted_in_last_pass()) {
      std::erase(running, id);
      pending.push_back(id);
    }
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
