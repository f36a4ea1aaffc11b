// The federation fence of a member service (service_fence.cc): nothing
// starts while the dispatcher's lease has lapsed, the dispatcher's running
// jobs are requeued after its hold, a late grant does not reopen the lease,
// and --require-federation-lease starts a member fenced.
#include <gtest/gtest.h>

#include "berth/server/service_test_util.h"

namespace berth::server {
namespace {

using testing::ServiceHarness;
using testing::WaitFor;

ServiceOptions Virtual(bool require_lease = false) {
  ServiceOptions o;
  o.virtual_nodes = true;
  o.policy = "bestfit";
  o.require_federation_lease = require_lease;
  return o;
}

TimeUs WallNow() { return SystemClock().Now(); }

TEST(ServiceFenceTest, ARequiredLeaseHoldsEveryStartUntilGranted) {
  ServiceHarness h("2x8:H100", Virtual(true));
  ASSERT_TRUE(h.Start().ok());
  const int64_t fed = h.Submit(R"({"name":"f","duration_s":3600,"idempotency_key":"fed-1-1","groups":[{"count":1,"gpus":8}]})");
  const int64_t own = h.Submit(R"({"name":"o","duration_s":3600,"groups":[{"count":1,"gpus":8}]})");
  h.Quiesce();
  h.Quiesce();
  EXPECT_EQ(h.State(fed), "pending");
  EXPECT_EQ(h.State(own), "pending");
  h.service().GrantFederationLease(WallNow() + 600 * kUsPerSecond, 600 * kUsPerSecond);
  ASSERT_TRUE(WaitFor([&] { return h.State(fed) == "running" && h.State(own) == "running"; }));
}

TEST(ServiceFenceTest, ALapsedLeaseStopsStartsAndRequeuesTheDispatchersJobsAfterTheHold) {
  ServiceHarness h("2x8:H100", Virtual());
  ASSERT_TRUE(h.Start().ok());
  // Leased for 2 s, running jobs held 1 s past it.
  const TimeUs until = WallNow() + 2 * kUsPerSecond;
  h.service().GrantFederationLease(until, kUsPerSecond);
  const int64_t fed = h.Submit(R"({"name":"f","duration_s":3600,"idempotency_key":"fed-1-1","groups":[{"count":1,"gpus":8}]})");
  const int64_t own = h.Submit(R"({"name":"o","duration_s":3600,"groups":[{"count":1,"gpus":4}]})");
  ASSERT_TRUE(WaitFor([&] { return h.State(fed) == "running" && h.State(own) == "running"; }));
  ASSERT_TRUE(WaitFor([&] { return WallNow() > until; }));
  // Lapsed: a new job waits although a node is free.
  const int64_t late = h.Submit(R"({"name":"l","duration_s":60,"idempotency_key":"fed-2-1","groups":[{"count":1,"gpus":4}]})");
  h.Quiesce();
  EXPECT_EQ(h.State(late), "pending");
  // A grant that ended already (a request delayed in a stopped process) does not reopen it.
  h.service().GrantFederationLease(WallNow() - kUsPerSecond, kUsPerSecond);
  h.Quiesce();
  EXPECT_EQ(h.State(late), "pending");
  // After the hold, the dispatcher's running job is requeued; the member's own keeps running.
  ASSERT_TRUE(WaitFor([&] { return h.State(fed) == "pending"; }));
  EXPECT_EQ(h.State(own), "running");
  h.Quiesce();
  EXPECT_EQ(h.State(fed), "pending");
  EXPECT_GE(h.service().GetJob(fed).body.value("requeues", 0), 1) << h.service().GetJob(fed).body.dump();
  // A new lease: both start.
  h.service().GrantFederationLease(WallNow() + 600 * kUsPerSecond, 600 * kUsPerSecond);
  ASSERT_TRUE(WaitFor([&] { return h.State(fed) == "running" && h.State(late) == "running"; }));
}

TEST(ServiceFenceTest, AMemberNeverLeasedIsNeverFenced) {
  ServiceHarness h("2x8:H100", Virtual());
  ASSERT_TRUE(h.Start().ok());
  const int64_t fed = h.Submit(R"({"name":"f","duration_s":3600,"idempotency_key":"fed-1-1","groups":[{"count":1,"gpus":8}]})");
  ASSERT_TRUE(WaitFor([&] { return h.State(fed) == "running"; }));
}

}  // namespace
}  // namespace berth::server
