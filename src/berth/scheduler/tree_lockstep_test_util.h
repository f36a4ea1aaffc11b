// Test support for lockstep runs of the tenancy policies over a queue tree:
// two schedulers (one on its incremental path, one with an oracle option
// such as SchedulerOptions::full_sort or full_preempt) fed the same random
// stream, a two-parent tree to charge, the stream's common steps (a running
// job ends, a pending job is cancelled) and the checks after every pass
// (same starts, same visits and verdicts, same evictions, same hash).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/common/rng.h"
#include "berth/scheduler/scheduler.h"
#include "berth/tenancy/queue_tree.h"

namespace berth::scheduler::tree_lockstep {

inline const char* const kTenants[] = {"t0", "t1", "t2", "t3", "t4", "t5"};

// How the tree is drawn: parent p0's weight 1 + Uniform(parent_weights) (0:
// not drawn, weight 1), each leaf's 1 + Uniform(leaf_weights), and with
// `guarantees` half the leaves hold a guarantee of 4..11 GPUs of all types.
struct TreeShape {
  uint64_t parent_weights = 0;
  uint64_t leaf_weights = 3;
  bool guarantees = false;
};

// Two parents, three leaves each (tenant t<i> in leaf q<i>).
inline std::shared_ptr<const tenancy::QueueTree> Tree(const cluster::Cluster& cluster, Rng& rng, TreeShape shape) {
  std::vector<tenancy::QueueSpec> specs;
  tenancy::QueueSpec p0, p1;
  p0.name = "p0";
  if (shape.parent_weights > 0) p0.weight = 1.0 + static_cast<double>(rng.Uniform(shape.parent_weights));
  p1.name = "p1";
  specs.push_back(p0);
  specs.push_back(p1);
  for (int i = 0; i < 6; ++i) {
    tenancy::QueueSpec s;
    s.name = std::string("q") + std::to_string(i);
    s.parent = i < 3 ? "p0" : "p1";
    s.weight = 1.0 + static_cast<double>(rng.Uniform(shape.leaf_weights));
    s.tenants = {kTenants[i]};
    if (shape.guarantees && rng.Uniform(2))
      s.quotas["*"].guarantee = static_cast<int64_t>(4 + rng.Uniform(8)) * kMilliPerGpu;
    specs.push_back(s);
  }
  auto t = tenancy::QueueTree::Create(specs, cluster);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::make_shared<const tenancy::QueueTree>(std::move(t).value());
}

// A job of a random tenant (t0..t5) and priority (0..2), 1..50 s long, with
// no task group yet.
inline job::JobSpec TenantJob(Rng& rng, int64_t id) {
  job::JobSpec j;
  j.id = JobId(id);
  j.name = "j" + std::to_string(id);
  j.tenant = kTenants[rng.Uniform(6)];
  j.priority = static_cast<int32_t>(rng.Uniform(3));
  j.duration = SecondsToUs(static_cast<double>(1 + rng.Uniform(50)));
  return j;
}

// The two schedulers of a lockstep run: the same profile built twice, one
// with `fast` options and one with the oracle's. Null on failure (reported).
struct Twins {
  std::unique_ptr<Scheduler> fast, oracle;
};
inline Twins MakeTwins(const cluster::Cluster& cluster, const framework::Profile& profile,
                       const framework::PluginRegistry& plugins, const framework::PluginContext& context,
                       const SchedulerOptions& fast, const SchedulerOptions& oracle, const Clock& clock) {
  auto fa = framework::Framework::Create(profile, plugins, context);
  auto fb = framework::Framework::Create(profile, plugins, context);
  EXPECT_TRUE(fa.ok() && fb.ok()) << fa.status().ToString();
  if (!fa.ok() || !fb.ok()) return {};
  return {std::make_unique<Scheduler>(cluster, std::move(fa).value(), fast, clock),
          std::make_unique<Scheduler>(cluster, std::move(fb).value(), oracle, clock)};
}

// A job submitted to both, and noted as pending.
inline void SubmitBoth(Scheduler& fast, Scheduler& full, const job::JobSpec& j, std::vector<JobId>& pending) {
  EXPECT_TRUE(fast.Submit(j).ok());
  EXPECT_TRUE(full.Submit(j).ok());
  pending.push_back(j.id);
}

// A random running job ends in both.
inline void FinishOne(Scheduler& fast, Scheduler& full, std::vector<JobId>& running, Rng& rng) {
  if (running.empty()) return;
  const size_t k = rng.Uniform(running.size());
  ASSERT_TRUE(fast.Finish(running[k], job::JobState::kSucceeded).ok());
  ASSERT_TRUE(full.Finish(running[k], job::JobState::kSucceeded).ok());
  running[k] = running.back();
  running.pop_back();
}

// A random job of `pending` is cancelled in both if it still waits.
inline void CancelOne(Scheduler& fast, Scheduler& full, std::vector<JobId>& pending, Rng& rng) {
  if (pending.empty()) return;
  const size_t k = rng.Uniform(pending.size());
  const JobRecord* r = fast.Find(pending[k]);
  if (r != nullptr && r->state == job::JobState::kPending) {
    ASSERT_TRUE(fast.Finish(pending[k], job::JobState::kCancelled).ok());
    ASSERT_TRUE(full.Finish(pending[k], job::JobState::kCancelled).ok());
  }
  pending[k] = pending.back();
  pending.pop_back();
}

// One pass in both, compared; the started jobs join `running`, the evicted
// ones move to `pending`. Returns how many were evicted.
inline int64_t PassAndCompare(Scheduler& fast, Scheduler& full, std::vector<JobId>& running,
                              std::vector<JobId>& pending, const std::string& what) {
  const std::vector<JobId> a = fast.Schedule();
  const std::vector<JobId> b = full.Schedule();
  EXPECT_EQ(a, b) << what;
  EXPECT_EQ(fast.visited_in_last_pass(), full.visited_in_last_pass()) << what;
  for (JobId id : fast.visited_in_last_pass())
    EXPECT_EQ(fast.Find(id)->last_verdict.reason, full.Find(id)->last_verdict.reason) << what;
  EXPECT_EQ(fast.preempted_in_last_pass(), full.preempted_in_last_pass()) << what;
  EXPECT_EQ(fast.pending_count(), full.pending_count()) << what;
  EXPECT_EQ(fast.log().hash(), full.log().hash()) << what;
  for (JobId id : a) running.push_back(id);
  for (JobId id : fast.preempted_in_last_pass()) {
    std::erase(running, id);
    pending.push_back(id);
  }
  return static_cast<int64_t>(fast.preempted_in_last_pass().size());
}

// As PassAndCompare, against an oracle whose passes may reach more jobs
// (SchedulerOptions::full_pass: the fast pass may stop early): the same
// starts, evictions, pending count and hash, and every job the fast pass
// reached was reached by the oracle's too and has the same verdict. Returns
// how many were evicted; `stopped` counts the passes that reached fewer jobs.
inline int64_t PassAndCompareReached(Scheduler& fast, Scheduler& full, std::vector<JobId>& running,
                                     std::vector<JobId>& pending, const std::string& what, int64_t* stopped) {
  const std::vector<JobId> a = fast.Schedule();
  const std::vector<JobId> b = full.Schedule();
  EXPECT_EQ(a, b) << what;
  std::vector<JobId> reached = fast.visited_in_last_pass();
  std::vector<JobId> oracle = full.visited_in_last_pass();
  std::sort(reached.begin(), reached.end());
  std::sort(oracle.begin(), oracle.end());
  EXPECT_TRUE(std::includes(oracle.begin(), oracle.end(), reached.begin(), reached.end())) << what;
  if (reached.size() < oracle.size()) ++*stopped;
  for (JobId id : reached)
    EXPECT_EQ(fast.Find(id)->last_verdict.reason, full.Find(id)->last_verdict.reason) << what << " job " << id.value();
  EXPECT_EQ(fast.preempted_in_last_pass(), full.preempted_in_last_pass()) << what;
  EXPECT_EQ(fast.pending_count(), full.pending_count()) << what;
  EXPECT_EQ(fast.log().hash(), full.log().hash()) << what;
  for (JobId id : a) running.push_back(id);
  for (JobId id : fast.preempted_in_last_pass()) {
    std::erase(running, id);
    pending.push_back(id);
  }
  return static_cast<int64_t>(fast.preempted_in_last_pass().size());
}

}  // namespace berth::scheduler::tree_lockstep
