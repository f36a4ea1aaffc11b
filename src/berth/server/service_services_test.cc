// Services through the daemon: a kind: service job starts its replicas as
// jobs, a load report scales them, a cancel stops them, and a restart starts
// them again from the durable service.
#include <gtest/gtest.h>

#include <chrono>

#include "berth/server/service_test_util.h"

namespace berth::server {
namespace {

using testing::ServiceHarness;
using testing::WaitFor;

int64_t Running(ServiceHarness& h, int64_t id) {
  const ApiResult r = h.service().GetService(id);
  return r.code == 200 ? r.body["running"].get<int64_t>() : -1;
}

constexpr const char* kChat =
    R"({"name":"chat","kind":"service","replicas":2,"min_replicas":1,"max_replicas":6,)"
    R"("latency_class":"critical","target":{"requests_per_s":10},"spread":{"max_per_node":2},)"
    R"("groups":[{"gpus":1}]})";

TEST(ServiceServicesTest, ReplicasStartScaleWithLoadAndStop) {
  ServiceHarness h;
  ASSERT_TRUE(h.Start().ok());
  const int64_t s = h.Submit(kChat);
  ASSERT_TRUE(WaitFor([&] { return Running(h, s) == 2; }));
  EXPECT_EQ(h.State(s), "running");
  const ApiResult job = h.service().GetJob(s);
  EXPECT_EQ(job.body["spec"]["kind"], "service") << job.body.dump();
  // 45 requests/s at 10 per replica: 5 replicas at the next evaluation.
  ApiResult load = h.service().ReportServiceLoad(s, R"({"requests_per_s":45})");
  ASSERT_EQ(load.code, 200) << load.body.dump();
  ASSERT_TRUE(WaitFor([&] { return Running(h, s) == 5; }, 60));
  // Spread: at most two replicas on a node.
  const ApiResult st = h.service().GetService(s);
  std::map<std::string, int> per_node;
  for (const auto& r : st.body["replicas"]) {
    const ApiResult rj = h.service().GetJob(r.get<int64_t>());
    for (const auto& p : rj.body["placements"]) ++per_node[p["node"].get<std::string>()];
  }
  for (const auto& [node, n] : per_node) EXPECT_LE(n, 2) << node;
  EXPECT_EQ(h.service().ReportServiceLoad(9999, R"({"requests_per_s":1})").code, 404);
  EXPECT_EQ(h.service().ReportServiceLoad(s, R"({"rps":1})").code, 400);
  EXPECT_EQ(h.service().ReportServiceLoad(s, R"({"requests_per_s":-1})").code, 400);
  ASSERT_EQ(h.service().CancelJob(s).code, 200);
  ASSERT_TRUE(WaitFor([&] { return h.service().GetService(s).code == 404; }));
  EXPECT_EQ(h.State(s), "cancelled");
}

TEST(ServiceServicesTest, BadServiceDocumentsAre400s) {
  ServiceHarness h;
  ASSERT_TRUE(h.Start().ok());
  EXPECT_EQ(h.service().SubmitJob(R"({"name":"a","replicas":2,"groups":[{"gpus":1}]})").code, 400);
  EXPECT_EQ(h.service().SubmitJob(R"({"name":"a","kind":"service","replicas":9,"max_replicas":3,"groups":[{"gpus":1}]})").code, 400);
  EXPECT_EQ(h.service().SubmitJob(R"({"name":"a","kind":"server","groups":[{"gpus":1}]})").code, 400);
  EXPECT_EQ(h.service().SubmitJob(R"({"name":"a","kind":"service","groups":[{"count":2,"gpus":1}]})").code, 400);
}

// A replica that may evict a batch job only once the job has run
// --min-runtime: with nothing else happening, the loop wakes when the guard
// expires (Scheduler::NextGuardExpiry) and the pass then places the replica.
TEST(ServiceServicesTest, ReplicaWaitingForAGuardIsPlacedWhenItExpires) {
  ServiceOptions o;
  o.policy = "priority-preempt";
  o.min_runtime = SecondsToUs(1.5);
  ServiceHarness h("1x8:H100", o);
  ASSERT_TRUE(h.Start().ok());
  const int64_t b = h.Submit(R"({"name":"train","groups":[{"gpus":8}]})");
  ASSERT_TRUE(WaitFor([&] { return h.State(b) == "running"; }));
  const auto submitted = std::chrono::steady_clock::now();
  const int64_t s = h.Submit(
      R"({"name":"chat","kind":"service","replicas":1,"min_replicas":1,"max_replicas":1,"priority":10,)"
      R"("groups":[{"gpus":1}]})");
  ASSERT_TRUE(WaitFor([&] { return Running(h, s) == 1; }, 10));
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - submitted).count();
  EXPECT_NE(h.State(b), "running");  // evicted for the replica
  EXPECT_GT(waited, 0.5);            // not before train's guard (1.5 s of its run) expired
  EXPECT_LT(waited, 5.0);
}

TEST(ServiceServicesTest, RestartStartsTheReplicasAgain) {
  auto data = std::make_shared<store::MemoryStore::Data>();
  int64_t s = -1;
  {
    ServiceHarness h("4x8:H100/leaf=2", {}, data);
    ASSERT_TRUE(h.Start().ok());
    s = h.Submit(kChat);
    ASSERT_TRUE(WaitFor([&] { return Running(h, s) == 2; }));
    h.Quiesce();
  }
  ServiceHarness h2("4x8:H100/leaf=2", {}, data);
  ASSERT_TRUE(h2.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return Running(h2, s) == 2; }));
  EXPECT_EQ(h2.State(s), "running");
}

}  // namespace
}  // namespace berth::server
