// Scheduling knobs of `berth serve` that reach the core: --min-runtime (the
// preemption guard), --preemption-grace (the preemptor's startup delay),
// --restore-cost (checked here; the scheduler's own tests cover its effect),
// topology fields only under a policy that places by topology, the
// hetero-speed / hetero-cost policies, and the admission limits
// (--max-tasks-per-job ...), and the range of --scheduler-nice.
#include <gtest/gtest.h>

#include "berth/server/service_test_util.h"

namespace berth::server {
namespace {

using testing::ServiceHarness;
using testing::WaitFor;

constexpr const char* kLow = R"({"name":"low","priority":0,"groups":[{"count":1,"gpus":8}]})";
constexpr const char* kHigh = R"({"name":"high","priority":10,"groups":[{"count":1,"gpus":8}]})";

TEST(ServiceOptionsTest, DefaultMinRuntimeKeepsAFreshJob) {
  ServiceOptions o;
  o.policy = "priority-preempt";
  ServiceHarness h("1x8:H100", o);
  ASSERT_TRUE(h.Start().ok());
  const int64_t low = h.Submit(kLow);
  ASSERT_TRUE(WaitFor([&] { return h.State(low) == "running"; }));
  const int64_t high = h.Submit(kHigh);
  ASSERT_TRUE(WaitFor([&] { return !h.service().WhyJob(high).body["verdict"].is_null(); }));
  h.Quiesce();
  EXPECT_EQ(h.State(low), "running");  // it has not run 600 s yet
  EXPECT_EQ(h.State(high), "pending");
}

TEST(ServiceOptionsTest, MinRuntimeAndGraceReachThePreemption) {
  ServiceOptions o;
  o.policy = "priority-preempt";
  o.min_runtime = 0;
  o.preemption_grace = SecondsToUs(30);
  ServiceHarness h("1x8:H100", o);
  ASSERT_TRUE(h.Start().ok());
  const int64_t low = h.Submit(kLow);
  ASSERT_TRUE(WaitFor([&] { return h.State(low) == "running"; }));
  const int64_t high = h.Submit(kHigh);
  ASSERT_TRUE(WaitFor([&] { return h.State(high) == "running"; }));
  EXPECT_EQ(h.State(low), "pending");
  const nlohmann::json doc = h.service().GetJob(high).body;
  EXPECT_EQ(doc["startup_delay_s"], 30.0) << doc.dump();
  EXPECT_EQ(h.service().GetJob(low).body["requeues"], 1);
}

TEST(ServiceOptionsTest, MinRuntimeNeedsAPreemptingPolicy) {
  ServiceOptions o;
  o.policy = "bestfit";
  o.min_runtime = SecondsToUs(60);
  ServiceHarness h("1x8:H100", o);
  Status s = h.Start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--min-runtime: policy 'bestfit' does not preempt"), std::string::npos) << s.message();
}

TEST(ServiceOptionsTest, NegativeDurationsAreRefused) {
  ServiceOptions o;
  o.preemption_grace = -1;
  EXPECT_FALSE(o.Validate().ok());
  o.preemption_grace = 0;
  o.min_runtime = -5;
  EXPECT_FALSE(o.Validate().ok());
  o.min_runtime = -1;
  o.restore_cost = -1;
  EXPECT_FALSE(o.Validate().ok());
  o.restore_cost = SecondsToUs(60);
  EXPECT_TRUE(o.Validate().ok());
}

TEST(ServiceOptionsTest, SchedulerNiceIsANiceValue) {
  ServiceOptions o;
  EXPECT_EQ(o.scheduler_nice, -5);
  o.scheduler_nice = -21;
  EXPECT_FALSE(o.Validate().ok());
  o.scheduler_nice = 20;
  EXPECT_FALSE(o.Validate().ok());
  o.scheduler_nice = 0;
  EXPECT_TRUE(o.Validate().ok());
  o.scheduler_nice = 19;
  EXPECT_TRUE(o.Validate().ok());
}

TEST(ServiceOptionsTest, SchedulerRtPriorityIsOffOrAFifoPriority) {
  ServiceOptions o;
  EXPECT_EQ(o.scheduler_rt_priority, 0);
  o.scheduler_rt_priority = -1;
  EXPECT_FALSE(o.Validate().ok());
  o.scheduler_rt_priority = 100;
  EXPECT_FALSE(o.Validate().ok());
  o.scheduler_rt_priority = 1;
  EXPECT_TRUE(o.Validate().ok());
  o.scheduler_rt_priority = 99;
  EXPECT_TRUE(o.Validate().ok());
}

TEST(ServiceOptionsTest, TopologyFieldsNeedATopologyPolicy) {
  const std::string job = R"({"name":"tp","required_level":"leaf","groups":[{"count":2,"gpus":8,"block_tasks":2,"block_level":"leaf"}]})";
  {
    ServiceHarness h;  // the default policy, topology
    ASSERT_TRUE(h.Start().ok());
    const int64_t id = h.Submit(job);
    ASSERT_TRUE(WaitFor([&] { return h.State(id) == "running"; }));
    const nlohmann::json doc = h.service().GetJob(id).body;
    EXPECT_EQ(doc["spec"]["required_level"], "leaf");
    EXPECT_EQ(doc["spec"]["groups"][0]["block_tasks"], 2);
  }
  ServiceOptions o;
  o.policy = "bestfit";
  ServiceHarness h("4x8:H100/leaf=2", o);
  ASSERT_TRUE(h.Start().ok());
  ApiResult r = h.service().SubmitJob(job);
  EXPECT_EQ(r.code, 422);
  EXPECT_NE(r.body["error"].get<std::string>().find("required_level: policy 'bestfit' does not place by topology"),
            std::string::npos)
      << r.body.dump();
}

TEST(ServiceOptionsTest, HeteroPoliciesServe) {
  for (const char* policy : {"hetero-speed", "hetero-cost"}) {
    SCOPED_TRACE(policy);
    ServiceOptions o;
    o.policy = policy;
    o.catalog = std::string(BERTH_SOURCE_DIR) + "/data/accelerators.yaml";
    ServiceHarness h("1x4:V100+1x4:K80", o);
    ASSERT_TRUE(h.Start().ok());
    const int64_t id = h.Submit(R"({"name":"r","job_class":"ResNet-50","groups":[{"count":1,"gpus":1}]})");
    ASSERT_TRUE(WaitFor([&] { return h.State(id) == "running"; }));
  }
  ServiceOptions o;
  o.policy = "hetero-speed";
  o.catalog = "/nonexistent/accelerators.yaml";
  ServiceHarness h("1x4:V100+1x4:K80", o);
  Status s = h.Start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/nonexistent/accelerators.yaml"), std::string::npos) << s.message();
}

TEST(ServiceOptionsTest, AdmissionLimitsReachSubmissions) {
  ServiceOptions o;
  o.limits.max_tasks_per_job = 4;
  o.limits.max_name_bytes = 8;
  ServiceHarness h("4x8:H100", o);
  ASSERT_TRUE(h.Start().ok());
  EXPECT_EQ(h.service().SubmitJob(R"({"name":"four","groups":[{"count":4,"gpus":1}]})").code, 201);
  ApiResult five = h.service().SubmitJob(R"({"name":"five","groups":[{"count":5,"gpus":1}]})");
  EXPECT_EQ(five.code, 422);
  EXPECT_NE(five.body["error"].get<std::string>().find("--max-tasks-per-job"), std::string::npos);
  EXPECT_EQ(h.service().SubmitJob(R"({"name":"a-long-name","groups":[{"count":1}]})").code, 422);
  ServiceOptions bad;
  bad.limits.max_groups_per_job = 0;
  EXPECT_FALSE(bad.Validate().ok());
}

}  // namespace
}  // namespace berth::server
