// The store's safety rules in the service: the cluster recorded in the store
// (a start on another cluster is refused unless accepted, and then the jobs
// that no longer fit wait, reported), and idempotency keys that are freed.
#include <gtest/gtest.h>

#include "berth/server/service_test_util.h"

namespace berth::server {
namespace {

using testing::ServiceHarness;
using testing::WaitFor;

TEST(ServiceStoreSafetyTest, AnotherClusterIsRefusedUnlessAccepted) {
  auto data = std::make_shared<store::MemoryStore::Data>();
  int64_t small = -1, big = -1, run = -1;
  {
    ServiceHarness h("4x8:H100/leaf=2", {}, data);
    ASSERT_TRUE(h.Start().ok());
    run = h.Submit(R"({"name":"run","groups":[{"count":1,"gpus":8}]})");
    small = h.Submit(R"({"name":"small","groups":[{"count":4,"gpus":8}]})");  // waits behind run
    big = h.Submit(R"({"name":"big","groups":[{"count":3,"gpus":8}]})");
    ASSERT_TRUE(WaitFor([&] { return h.State(run) == "running"; }));
    h.Quiesce();
  }
  {  // Same cluster: starts as before.
    ServiceHarness same("4x8:H100/leaf=2", {}, data);
    ASSERT_TRUE(same.Start().ok());
  }
  {  // Half the nodes: refused, naming both clusters and the flag.
    ServiceHarness smaller("2x8:H100/leaf=1", {}, data);
    Status s = smaller.Start();
    ASSERT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.message();
    EXPECT_NE(s.message().find("--accept-cluster-change"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("4 nodes, 32 GPUs"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("2 nodes, 16 GPUs"), std::string::npos) << s.message();
  }
  ServiceOptions accept;
  accept.accept_cluster_change = true;
  {
    ServiceHarness smaller("2x8:H100/leaf=1", accept, data);
    ASSERT_TRUE(smaller.Start().ok());
    smaller.Quiesce();
    // 4 x 8 GPUs and 3 x 8 no longer fit 16 GPUs: they wait, marked, not failed.
    for (int64_t id : {small, big}) {
      ApiResult j = smaller.service().GetJob(id);
      EXPECT_EQ(j.body["state"], "pending") << j.body.dump();
      EXPECT_NE(j.body.value("unfit", "").find("does not fit"), std::string::npos) << j.body.dump();
    }
    EXPECT_EQ(smaller.State(run), "running");  // its node n0 is still there
    // A job that waits unfit can be cancelled.
    EXPECT_EQ(smaller.service().CancelJob(big).code, 200);
  }
  // Back on the first cluster (a change again, accepted): the job that waited runs.
  ServiceHarness back("4x8:H100/leaf=2", accept, data);
  ASSERT_TRUE(back.Start().ok());
  EXPECT_EQ(back.service().GetJob(small).body.count("unfit"), 0u);
  EXPECT_EQ(back.State(big), "cancelled");
  EXPECT_EQ(back.service().CancelJob(run).code, 200);
  EXPECT_TRUE(WaitFor([&] { return back.State(small) == "running"; }));
}

TEST(ServiceStoreSafetyTest, EndedJobsFreeTheirNames) {
  ServiceHarness h;
  ASSERT_TRUE(h.Start().ok());
  const int64_t a = h.Submit(R"({"name":"train","groups":[{"count":1,"gpus":1}]})");
  EXPECT_EQ(h.service().SubmitJob(R"({"name":"train","groups":[{"count":1,"gpus":1}]})").body["id"], a);  // a retry
  ASSERT_EQ(h.service().CancelJob(a).code, 200);
  // The name is free again: a new job.
  const int64_t b = h.Submit(R"({"name":"train","groups":[{"count":2,"gpus":1}]})");
  EXPECT_NE(b, a);
  // An explicit key stays taken after its job ends, for the TTL (24 h by default).
  const int64_t k = h.Submit(R"({"name":"x","idempotency_key":"k1","groups":[{"count":1,"gpus":1}]})");
  ASSERT_EQ(h.service().CancelJob(k).code, 200);
  ApiResult late = h.service().SubmitJob(R"({"name":"x","idempotency_key":"k1","groups":[{"count":1,"gpus":1}]})");
  EXPECT_EQ(late.code, 200);
  EXPECT_EQ(late.body["id"], k);
}

TEST(ServiceStoreSafetyTest, KeysExpireAfterTheTtlAndRecoveryKeepsTheRule) {
  auto data = std::make_shared<store::MemoryStore::Data>();
  ServiceOptions o;
  o.idempotency_ttl = 1;  // 1 us: expired as soon as the job ends
  int64_t a = -1, b = -1;
  {
    ServiceHarness h("4x8:H100/leaf=2", o, data);
    ASSERT_TRUE(h.Start().ok());
    a = h.Submit(R"({"name":"x","idempotency_key":"k","groups":[{"count":1,"gpus":1}]})");
    ASSERT_EQ(h.service().CancelJob(a).code, 200);
    h.Quiesce();
    b = h.Submit(R"({"name":"x","idempotency_key":"k","groups":[{"count":1,"gpus":1}]})");
    EXPECT_NE(a, b);
    h.Quiesce();
  }
  // After a restart the key belongs to the newer job, and both jobs are there.
  ServiceHarness h2("4x8:H100/leaf=2", o, data);
  ASSERT_TRUE(h2.Start().ok());
  EXPECT_EQ(h2.State(a), "cancelled");
  EXPECT_NE(h2.State(b), "");
  ApiResult again = h2.service().SubmitJob(R"({"name":"x","idempotency_key":"k","groups":[{"count":1,"gpus":1}]})");
  EXPECT_EQ(again.code, 200);
  EXPECT_EQ(again.body["id"], b);
}

}  // namespace
}  // namespace berth::server
