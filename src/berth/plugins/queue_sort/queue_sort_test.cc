// The srtf, tiresias and fairshare queue sorts: their orders, their args, and
// the victims of the order-based preemption of srtf and tiresias.
#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <vector>

#include "berth/cluster/loaders.h"
#include "berth/framework/registry.h"
#include "berth/plugins/builtin.h"
#include "berth/plugins/queue_sort/sort_util.h"
#include "berth/state/cluster_state.h"
#include "berth/tenancy/ledger.h"

namespace berth::plugins {
namespace {

using framework::PluginArgs;
using framework::QueuedJob;

constexpr TimeUs kHour = 3600 * kUsPerSecond;

class QueueSortTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinPlugins(registry_).ok());
    auto c = cluster::ParseClusterSpec("2x8:H100");
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    cluster_ = std::make_unique<cluster::Cluster>(std::move(c).value());
    state_ = std::make_unique<state::ClusterState>(*cluster_);
  }

  std::unique_ptr<framework::Plugin> Make(const std::string& name, const PluginArgs& args = {}) {
    auto p = registry_.Create(name, args);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? std::move(p).value() : nullptr;
  }
  static framework::QueueSortPlugin& Sort(std::unique_ptr<framework::Plugin>& p) {
    return dynamic_cast<framework::QueueSortPlugin&>(*p);
  }

  // A job of `gpus` whole GPUs in one task (8 per task above 8), checkpointing
  // every 10 minutes unless told otherwise.
  job::JobSpec& Job(int32_t gpus, TimeUs duration = -1, TimeUs limit = -1, TimeUs checkpoint = 600 * kUsPerSecond) {
    job::JobSpec& j = specs_.emplace_back();
    j.id = JobId(static_cast<int64_t>(specs_.size()) - 1);
    j.name = "j" + std::to_string(j.id.value());
    j.duration = duration;
    j.runtime_limit = limit;
    j.checkpoint_interval = checkpoint;
    job::TaskGroup g;
    g.gpus = std::min(gpus, 8);
    g.count = std::max(1, gpus / 8);
    j.groups.push_back(g);
    return j;
  }
  static QueuedJob Q(const job::JobSpec& j, int64_t seq, double attained = 0, TimeUs enqueue = 0,
                     TimeUs work_done = 0, int32_t queue = 0) {
    return {&j, seq, enqueue, attained, queue, work_done, 0};
  }

  // A running job holding `mask` GPUs of `node` (applied to the state).
  void Run(const job::JobSpec& j, int node, uint64_t mask, TimeUs start, double attained = 0) {
    auto& placements = placements_.emplace_back();
    state::Allocation a{.node = NodeId(node), .gpu_mask = mask, .milli_per_gpu = kMilliPerGpu};
    placements.push_back({TaskKey{j.id, 0}, a});
    ASSERT_TRUE(state_->Apply(state::PlaceTask{TaskKey{j.id, 0}, a}).ok());
    framework::RunningJob r;
    r.spec = &j;
    r.placements = placements;
    r.seq = j.id.value();
    r.start_time = r.run_start = start;
    r.milli_gpu = int64_t{std::popcount(mask)} * kMilliPerGpu;
    r.attained_gpu_seconds = attained;
    r.priority = j.priority;
    r.checkpoint_interval = j.checkpoint_interval;
    running_.push_back(r);
  }

  std::optional<framework::PreemptionPlan> Preempt(framework::Plugin& p, const job::JobSpec& job, const QueuedJob& q,
                                                   TimeUs now, JobId preempted_by = JobId()) {
    ledger_ = std::make_unique<tenancy::Ledger>(tenancy::QueueTree(1), *cluster_);
    const framework::Verdict v = framework::Verdict::Unschedulable("capacity", "short");
    framework::SchedulerView view{*state_, *ledger_, running_, now, {}};
    framework::PreemptContext ctx{job, 0, v, view, preempted_by, q};
    return dynamic_cast<framework::PostFilterPlugin&>(p).PostFilter(ctx);
  }

  framework::PluginRegistry registry_;
  std::unique_ptr<cluster::Cluster> cluster_;
  std::unique_ptr<state::ClusterState> state_;
  std::unique_ptr<tenancy::Ledger> ledger_;
  std::deque<job::JobSpec> specs_;  // stable addresses
  std::deque<std::vector<framework::TaskPlacement>> placements_;
  std::vector<framework::RunningJob> running_;
};

std::vector<int64_t> Victims(const std::optional<framework::PreemptionPlan>& p) {
  std::vector<int64_t> out;
  if (p) for (JobId id : p->victims) out.push_back(id.value());
  return out;
}

TEST_F(QueueSortTest, SrtfOrdersByRemainingTimeUnknownLast) {
  auto p = Make("srtf");
  auto& s = Sort(p);
  const auto& limit2h = Job(1, 5 * kHour, 2 * kHour);  // a declared limit wins over the duration
  const auto& dur3h = Job(1, 3 * kHour);
  const auto& unknown = Job(1);
  const auto& dur4h_half_done = Job(1, 4 * kHour);
  EXPECT_TRUE(s.Less(Q(limit2h, 3), Q(dur3h, 0)));
  EXPECT_TRUE(s.Less(Q(dur3h, 5), Q(unknown, 1)));
  EXPECT_FALSE(s.Less(Q(unknown, 1), Q(dur3h, 5)));
  // 4 h with 2.5 h saved by checkpoints: 1.5 h remain.
  EXPECT_TRUE(s.Less(Q(dur4h_half_done, 9, 0, 0, 150 * 60 * kUsPerSecond), Q(limit2h, 0)));
  // Ties by seq.
  const auto& other3h = Job(1, 3 * kHour);
  EXPECT_TRUE(s.Less(Q(other3h, 1), Q(dur3h, 2)));
  EXPECT_FALSE(s.Less(Q(dur3h, 2), Q(other3h, 1)));
}

TEST_F(QueueSortTest, SrtfEvictsOnlyLongerRemainingJobs) {
  auto p = Make("srtf");
  const auto& long_job = Job(8, 10 * kHour);
  const auto& short_job = Job(8, 1 * kHour);
  Run(long_job, 0, 0xff, 0);
  Run(short_job, 1, 0xff, 0);
  const auto& waiting = Job(8, 2 * kHour);
  // At 30 min: 9.5 h and 0.5 h remain; only the first is longer than 2 h.
  auto plan = Preempt(*p, waiting, Q(waiting, 2), kHour / 2);
  EXPECT_EQ(Victims(plan), std::vector<int64_t>{long_job.id.value()});
  EXPECT_NE(plan->reason.find("srtf"), std::string::npos);
  // A 16-GPU job would need both: the short one ranks ahead of it, so no plan.
  const auto& wide = Job(16, 2 * kHour);
  EXPECT_FALSE(Preempt(*p, wide, Q(wide, 3), kHour / 2).has_value());
  // With preempt=false, never.
  auto off = Make("srtf", {{"preempt", "false"}});
  EXPECT_FALSE(Preempt(*off, waiting, Q(waiting, 2), kHour / 2).has_value());
}

TEST_F(QueueSortTest, GuardsMinimumRuntimeAndNoPingPong) {
  const auto& young = Job(8, 10 * kHour);
  Run(young, 0, 0xff, kHour - 300 * kUsPerSecond);  // 5 minutes into its run at 1 h
  Run(Job(8, 10 * kHour), 1, 0xff, kHour - 300 * kUsPerSecond);
  const auto& waiting = Job(8, kHour);
  auto p = Make("srtf");
  EXPECT_FALSE(Preempt(*p, waiting, Q(waiting, 5), kHour).has_value());
  auto eager = Make("srtf", {{"min_runtime_s", "0"}});
  auto plan = Preempt(*eager, waiting, Q(waiting, 5), kHour);
  ASSERT_TRUE(plan.has_value());
  const JobId first = plan->victims[0];
  // The job that evicted `waiting` last is never its victim: the other is taken.
  plan = Preempt(*eager, waiting, Q(waiting, 5), kHour, first);
  ASSERT_TRUE(plan.has_value());
  EXPECT_NE(plan->victims[0], first);
  EXPECT_FALSE(registry_.Create("tiresias", {{"min_runtime_s", "-5"}}).ok());
}

TEST_F(QueueSortTest, JobsThatNeverCheckpointAreNotEvictedByDefault) {
  const auto& never = Job(8, 10 * kHour, -1, -1);
  Run(never, 0, 0xff, 0);
  Run(Job(8, 10 * kHour, -1, -1), 1, 0xff, 0);
  const auto& waiting = Job(8, kHour);
  for (const char* name : {"srtf", "tiresias"}) {
    auto p = Make(name);
    EXPECT_FALSE(Preempt(*p, waiting, Q(waiting, 5), 2 * kHour).has_value()) << name;
    PluginArgs args = {{"evict_uncheckpointed", "true"}};
    if (std::string(name) == "tiresias") args["thresholds_gpu_h"] = "1";
    auto p2 = Make(name, args);
    auto plan = Preempt(*p2, waiting, Q(waiting, 5), 2 * kHour);
    ASSERT_TRUE(plan.has_value()) << name;
    EXPECT_EQ(plan->victims.size(), 1u);
    EXPECT_NEAR(plan->lost_gpu_seconds, 8 * 2 * 3600.0, 1e-6) << name;  // all its work
  }
}

TEST_F(QueueSortTest, TiresiasQueuesByAttainedServiceFifoWithin) {
  auto p = Make("tiresias", {{"thresholds_gpu_h", "1,10"}, {"promote_after", "0"}});
  auto& s = Sort(p);
  EXPECT_TRUE(s.Dynamic());
  s.Prepare(tenancy::Ledger(tenancy::QueueTree(1), *cluster_), 0);
  const auto& a = Job(8);
  const auto& b = Job(8);
  const auto& c = Job(1);
  // Queue 0 below 1 GPU-h, queue 1 below 10, queue 2 from 10.
  EXPECT_TRUE(s.Less(Q(a, 5, 0.5 * 3600), Q(b, 1, 1.0 * 3600)));   // q0 before q1, whatever the seq
  EXPECT_TRUE(s.Less(Q(b, 1, 2 * 3600), Q(a, 5, 9 * 3600)));       // both q1: FIFO by seq
  EXPECT_FALSE(s.Less(Q(a, 5, 9 * 3600), Q(b, 1, 2 * 3600)));
  EXPECT_TRUE(s.Less(Q(a, 5, 9 * 3600), Q(c, 0, 10 * 3600)));      // q1 before q2
}

TEST_F(QueueSortTest, TiresiasPromotesAStarvedJobToQueueZero) {
  auto p = Make("tiresias", {{"thresholds_gpu_h", "1"}, {"promote_after", "2"}});
  auto& s = Sort(p);
  const auto& old = Job(2);   // ran 1 h on 2 GPUs: 2 GPU-h, queue 1, executed 1 h
  const auto& fresh = Job(2);
  const TimeUs evicted = 10 * kHour;
  s.Prepare(tenancy::Ledger(tenancy::QueueTree(1), *cluster_), evicted + 2 * kHour - 1);
  EXPECT_TRUE(s.Less(Q(fresh, 7), Q(old, 0, 2 * 3600, evicted)));  // waited just under 2 h
  s.Prepare(tenancy::Ledger(tenancy::QueueTree(1), *cluster_), evicted + 2 * kHour);
  EXPECT_TRUE(s.Less(Q(old, 0, 2 * 3600, evicted), Q(fresh, 7)));  // promoted: queue 0, older
  // Its service restarts from the promotion: 0.5 GPU-h more keeps it in queue 0.
  EXPECT_TRUE(s.Less(Q(old, 0, 2.5 * 3600, evicted + 3 * kHour), Q(fresh, 7)));
  framework::PluginCounters counters;
  p->Counters(counters);
  ASSERT_EQ(counters.size(), 1u);
  EXPECT_EQ(counters[0].first, "tiresias.promotions");
  EXPECT_EQ(counters[0].second, 1);
}

TEST_F(QueueSortTest, TiresiasEvictsOnlyHigherQueuesNewestFirst) {
  auto p = Make("tiresias", {{"thresholds_gpu_h", "1"}});
  const auto& q1_old = Job(4);
  const auto& q1_new = Job(4);
  const auto& q0 = Job(8);
  // Two queue-1 jobs on node 0 (2 GPU-h each by now), a queue-0 job on node 1.
  Run(q1_old, 0, 0x0f, 0, 0);
  Run(q1_new, 0, 0xf0, 0, 0);
  Run(q0, 1, 0xff, kHour / 2, 0);
  const TimeUs now = kHour / 2;  // q1 jobs: 4 GPUs x 0.5 h = 2 GPU-h; the q0 job starts now (0)
  const auto& small = Job(4);
  EXPECT_EQ(Victims(Preempt(*p, small, Q(small, 9), now)), std::vector<int64_t>{q1_new.id.value()});
  const auto& full = Job(8);
  auto both = Victims(Preempt(*p, full, Q(full, 9), now));
  std::sort(both.begin(), both.end());
  EXPECT_EQ(both, (std::vector<int64_t>{q1_old.id.value(), q1_new.id.value()}));
  // A waiting job of queue 1 evicts nobody of its own queue.
  EXPECT_FALSE(Preempt(*p, small, Q(small, 9, 2 * 3600, now), now).has_value());
}

TEST_F(QueueSortTest, VictimSetIsMinimal) {
  // Worst first: a (4 GPUs, node 0), b (4 GPUs, node 1), c (4 GPUs, node 0).
  // An 8-GPU task needs a whole node: a and c; b is dropped.
  const auto& a = Job(4, -1, -1, -1);
  const auto& b = Job(4, -1, -1, -1);
  const auto& c = Job(4, -1, -1, -1);
  const auto& d = Job(4, -1, -1, -1);
  Run(a, 0, 0x0f, 0);
  Run(b, 1, 0x0f, 0);
  Run(c, 0, 0xf0, 0);
  Run(d, 1, 0xf0, 0);
  ledger_ = std::make_unique<tenancy::Ledger>(tenancy::QueueTree(1), *cluster_);
  const framework::Verdict v = framework::Verdict::Unschedulable("capacity", "short");
  framework::SchedulerView view{*state_, *ledger_, running_, kHour, {}};
  const auto& job = Job(8);
  framework::PreemptContext ctx{job, 0, v, view, JobId(), Q(job, 9)};
  const std::vector<int32_t> order = {0, 1, 2};
  auto plan = queue_sort::PlanVictimsInOrder(ctx, order, "test");
  EXPECT_EQ(Victims(plan), (std::vector<int64_t>{a.id.value(), c.id.value()}));
  EXPECT_NEAR(plan->lost_gpu_seconds, 2 * 4 * 3600.0, 1e-6);  // no checkpoints: an hour on 4 GPUs each
  EXPECT_NE(plan->reason.find("2 jobs, 8.00 GPU-h lost"), std::string::npos) << plan->reason;
  // Not enough among the candidates: nullopt.
  const std::vector<int32_t> one = {1};
  EXPECT_FALSE(queue_sort::PlanVictimsInOrder(ctx, one, "test").has_value());
}

TEST_F(QueueSortTest, FairShareOrdersQueuesByShareThenPriority) {
  // Tree: team (weight 1) with leaves x and y; z under the root.
  std::vector<tenancy::QueueSpec> specs = {
      {.name = "team"}, {.name = "x", .parent = "team", .tenants = {"xa"}},
      {.name = "y", .parent = "team", .weight = 3, .tenants = {"ya"}}, {.name = "z", .tenants = {"za"}}};
  auto tree = tenancy::QueueTree::Create(specs, *cluster_);
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  tenancy::Ledger ledger(std::move(tree).value(), *cluster_, kHour);
  const int32_t x = ledger.tree().Find("x"), y = ledger.tree().Find("y"), z = ledger.tree().Find("z");
  // Now: x holds 4 GPUs, y 6 (weight 3: share 6/16/3 = 0.125 < x's 0.25), z 2.
  ledger.Charge(x, GpuTypeId(0), 4000, 0);
  ledger.Charge(y, GpuTypeId(0), 6000, 0);
  ledger.Charge(z, GpuTypeId(0), 2000, 0);
  auto p = Make("fairshare", {{"age_boost_after_s", "0"}});
  auto& s = Sort(p);
  s.Prepare(ledger, 0);
  const auto& jx = Job(1);
  const auto& jy = Job(1);
  const auto& jz = Job(1);
  // Root level: z (2/16 = 0.125) before team (10/16); inside team y before x.
  EXPECT_TRUE(s.Less(Q(jz, 9, 0, 0, 0, z), Q(jy, 1, 0, 0, 0, y)));
  EXPECT_TRUE(s.Less(Q(jy, 5, 0, 0, 0, y), Q(jx, 1, 0, 0, 0, x)));
  EXPECT_TRUE(s.Less(Q(jz, 9, 0, 0, 0, z), Q(jx, 1, 0, 0, 0, x)));
  // Within a queue: priority, then seq.
  job::JobSpec& high = Job(1);
  high.priority = 5;
  EXPECT_TRUE(s.Less(Q(high, 9, 0, 0, 0, x), Q(jx, 1, 0, 0, 0, x)));
  EXPECT_TRUE(s.Less(Q(jx, 1, 0, 0, 0, x), Q(Job(1), 2, 0, 0, 0, x)));
}

TEST_F(QueueSortTest, FairShareHistoryAndAgeBoost) {
  std::vector<tenancy::QueueSpec> specs = {{.name = "a", .tenants = {"alice"}}, {.name = "b", .tenants = {"bob"}}};
  auto tree = tenancy::QueueTree::Create(specs, *cluster_);
  ASSERT_TRUE(tree.ok());
  tenancy::Ledger ledger(std::move(tree).value(), *cluster_, kHour);
  const int32_t a = ledger.tree().Find("a"), b = ledger.tree().Find("b");
  // a used the whole cluster for 10 h, then stopped; b uses 2 GPUs now.
  ledger.Charge(a, GpuTypeId(0), 16000, 0);
  ledger.Uncharge(a, GpuTypeId(0), 16000, 10 * kHour);
  ledger.Charge(b, GpuTypeId(0), 2000, 10 * kHour);
  ledger.Advance(10 * kHour);
  auto p = Make("fairshare", {{"age_boost_after_s", "3600"}});
  auto& s = Sort(p);
  s.Prepare(ledger, 10 * kHour);
  const auto& ja = Job(1);
  const auto& jb = Job(1);
  // a's history (about the whole cluster) outweighs b's current 2/16.
  EXPECT_TRUE(s.Less(Q(jb, 5, 0, 10 * kHour, 0, b), Q(ja, 1, 0, 10 * kHour, 0, a)));
  // Many half-lives later a's history has faded below b's share.
  ledger.Advance(30 * kHour);
  s.Prepare(ledger, 30 * kHour);
  EXPECT_TRUE(s.Less(Q(ja, 1, 0, 30 * kHour, 0, a), Q(jb, 5, 0, 30 * kHour, 0, b)));
  // b's job that has waited an hour is boosted ahead.
  EXPECT_TRUE(s.Less(Q(jb, 5, 0, 29 * kHour, 0, b), Q(ja, 1, 0, 30 * kHour, 0, a)));
}

TEST_F(QueueSortTest, FairShareDividesByTheReachableEntitlement) {
  // 8 GPUs on one 8-GPU node and 12 on 2-GPU nodes. a's jobs are 8-GPU
  // gangs (they fit only the big node), b's are 1-GPU jobs.
  auto c = cluster::ParseClusterSpec("1x8:H100+6x2:H100");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const cluster::Cluster cluster = std::move(c).value();
  for (bool reachable : {false, true}) {
    std::vector<tenancy::QueueSpec> specs = {{.name = "a", .tenants = {"a"}}, {.name = "b", .tenants = {"b"}}};
    auto tree = tenancy::QueueTree::Create(specs, cluster);
    ASSERT_TRUE(tree.ok());
    if (reachable) tree->set_entitlement(tenancy::EntitlementMode::kReachable, 0);
    tenancy::Ledger ledger(std::move(tree).value(), cluster);
    const int32_t a = ledger.tree().Find("a"), b = ledger.tree().Find("b");
    ledger.AddDemand(a, Job(16));
    for (int i = 0; i < 20; ++i) ledger.AddDemand(b, Job(1));
    // a holds 4 GPUs, b 5.
    ledger.Charge(a, GpuTypeId(0), 4000, 0);
    ledger.Charge(b, GpuTypeId(0), 5000, 0);
    ledger.Advance(0);
    if (reachable) {
      EXPECT_NEAR(ledger.entitled(a), 8000, 1e-6);  // all of the big node
      EXPECT_NEAR(ledger.entitled(b), 12000, 1e-6);
    }
    auto p = Make("fairshare", {{"age_boost_after_s", "0"}});
    auto& s = Sort(p);
    s.Prepare(ledger, 0);
    const auto& ja = Job(8);
    const auto& jb = Job(1);
    // Flat: a 4/20 before b 5/20. Reachable: b 5/12 before a 4/8.
    EXPECT_EQ(s.Less(Q(ja, 1, 0, 0, 0, a), Q(jb, 2, 0, 0, 0, b)), !reachable);
  }
}

TEST_F(QueueSortTest, ArgsAreChecked) {
  EXPECT_FALSE(registry_.Create("tiresias", {{"thresholds_gpu_h", "10,1"}}).ok());
  EXPECT_FALSE(registry_.Create("tiresias", {{"thresholds_gpu_h", "x"}}).ok());
  EXPECT_FALSE(registry_.Create("tiresias", {{"promote_after", "-1"}}).ok());
  EXPECT_FALSE(registry_.Create("srtf", {{"preempt", "maybe"}}).ok());
  auto unknown = registry_.Create("fairshare", {{"half_life", "1h"}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown arg 'half_life'"), std::string::npos);
}

TEST_F(QueueSortTest, PoliciesNameTheirPlugins) {
  framework::PolicyRegistry policies;
  ASSERT_TRUE(RegisterBuiltinPolicies(policies).ok());
  for (const char* name : {"srtf", "tiresias"}) {
    auto profile = policies.Find(name);
    ASSERT_TRUE(profile.ok()) << name;
    EXPECT_EQ(profile->queue_sort, name);
    ASSERT_EQ(profile->post_filter.size(), 1u);
    auto fw = framework::Framework::Create(*profile, registry_);
    ASSERT_TRUE(fw.ok()) << fw.status().ToString();
    // One instance serves as the queue sort and the post-filter.
    EXPECT_EQ(dynamic_cast<const framework::Plugin*>(&(*fw)->queue_sort()),
              dynamic_cast<const framework::Plugin*>((*fw)->post_filter()[0]));
  }
  for (const char* name : {"fairshare", "fairshare-backfill"}) {
    auto profile = policies.Find(name);
    ASSERT_TRUE(profile.ok()) << name;
    EXPECT_EQ(profile->queue_sort, "fairshare");
  }
}

}  // namespace
}  // namespace berth::plugins
