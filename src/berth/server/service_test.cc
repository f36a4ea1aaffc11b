// The service without HTTP: submissions, idempotency, "why", cancels,
// recovery from the store, fencing, store failures, virtual nodes.
#include "berth/server/service.h"

#include <gtest/gtest.h>

#include "berth/server/service_test_util.h"

namespace berth::server {
namespace {

using testing::ServiceHarness;
using testing::WaitFor;

const char* kJob8 = R"({"name":"a","groups":[{"count":1,"gpus":8}]})";

TEST(ServiceTest, SubmitPlacesAndExplainsWaiting) {
  ServiceHarness h;
  ASSERT_TRUE(h.Start().ok());
  EXPECT_TRUE(h.service().ready());
  const int64_t a = h.Submit(R"({"name":"a","groups":[{"count":3,"gpus":8}]})");
  ASSERT_TRUE(WaitFor([&] { return h.State(a) == "running"; }));
  const int64_t b = h.Submit(R"({"name":"b","queue":"research","groups":[{"count":2,"gpus":8,"cpu_milli":1000}]})");
  ASSERT_TRUE(WaitFor([&] { return !h.service().WhyJob(b).body["verdict"].is_null(); }));
  ApiResult why = h.service().WhyJob(b);
  EXPECT_EQ(why.body["state"], "pending");
  EXPECT_NE(why.body["why"].get<std::string>().find("GPUs"), std::string::npos) << why.body.dump();
  ApiResult job = h.service().GetJob(a);
  EXPECT_EQ(job.body["placements"].size(), 3u);
  ApiResult q = h.service().Queues();
  ASSERT_EQ(q.code, 200);
  bool found = false;
  for (const auto& x : q.body["queues"])
    if (x["name"] == "research") {
      found = true;
      EXPECT_EQ(x["pending"], 1);
      EXPECT_EQ(x["pending_gpus"], 16);
    }
  EXPECT_TRUE(found) << q.body.dump();
  EXPECT_EQ(h.service().GetJob(999).code, 404);
  const std::string m = h.service().MetricsText();
  EXPECT_NE(m.find("berth_queue_pending_jobs{queue=\"research\"} 1"), std::string::npos);
  EXPECT_NE(m.find("berth_gpus_allocated{gpu_type=\"H100\"} 24"), std::string::npos);
  EXPECT_NE(m.find("berth_decision_latency_seconds_count 1"), std::string::npos);
}

TEST(ServiceTest, FilterRejectCountsReachWhy) {
  ServiceHarness h;
  ASSERT_TRUE(h.Start().ok());
  // A task asking more CPU than any free node has now, but fits an idle node.
  h.Submit(R"({"name":"hog","groups":[{"count":4,"gpus":1,"cpu_milli":100000}]})");
  const int64_t b = h.Submit(R"({"name":"b","groups":[{"count":1,"gpus":1,"cpu_milli":100000}]})");
  ASSERT_TRUE(WaitFor([&] { return !h.service().WhyJob(b).body["verdict"].is_null(); }));
  ApiResult why = h.service().WhyJob(b);
  ASSERT_EQ(why.body["verdict"]["rejects"].size(), 1u) << why.body.dump();
  EXPECT_EQ(why.body["verdict"]["rejects"][0]["nodes"], 4);
}

TEST(ServiceTest, RetriedSubmissionsDoNotDuplicate) {
  ServiceHarness h;
  ASSERT_TRUE(h.Start().ok());
  const int64_t a = h.Submit(R"({"name":"x","idempotency_key":"k1","groups":[{"count":1,"gpus":1}]})");
  ApiResult again = h.service().SubmitJob(R"({"name":"x","idempotency_key":"k1","groups":[{"count":1,"gpus":1}]})");
  EXPECT_EQ(again.code, 200);
  EXPECT_EQ(again.body["id"], a);
  EXPECT_TRUE(again.body["duplicate"].get<bool>());
  // Same key, different job: a conflict, naming the first job.
  ApiResult conflict = h.service().SubmitJob(R"({"name":"x","idempotency_key":"k1","groups":[{"count":2,"gpus":1}]})");
  EXPECT_EQ(conflict.code, 409);
  EXPECT_EQ(conflict.body["id"], a);
  // Without a key, the name is the key.
  const int64_t b = h.Submit(R"({"name":"named","groups":[{"count":1,"gpus":1}]})");
  EXPECT_EQ(h.service().SubmitJob(R"({"name":"named","groups":[{"count":1,"gpus":1}]})").body["id"], b);
  EXPECT_EQ(h.service().ListJobs("", -1, 100).body["jobs"].size(), 2u);
}

// GET /v1/jobs answers from cached text per job view: the same document as
// the JSON body, pages and filters included, and a job that changed shows its
// new state (a new view), not the cached old one.
TEST(ServiceTest, TheJobListAsTextIsTheSameDocument) {
  ServiceHarness h;
  ASSERT_TRUE(h.Start().ok());
  std::vector<int64_t> ids;
  for (int i = 0; i < 7; ++i)
    ids.push_back(h.Submit(R"({"name":"j)" + std::to_string(i) + R"(","groups":[{"count":1,"gpus":8}]})"));
  h.Quiesce();
  auto same = [&](const std::string& state, int64_t after, int64_t limit) {
    const ApiResult body = h.service().ListJobs(state, after, limit);
    const ApiResult text = h.service().ListJobs(state, after, limit, /*as_text=*/true);
    ASSERT_EQ(text.code, 200);
    ASSERT_FALSE(text.text.empty());
    EXPECT_EQ(nlohmann::json::parse(text.text), body.body) << text.text;
    EXPECT_EQ(text.text, body.body.dump());
  };
  for (int round = 0; round < 2; ++round) {  // the second round reads the cached items
    same("", -1, 100);
    same("", -1, 3);
    same("", ids[2], 3);
    same("pending", -1, 100);
    same("running", -1, 2);
  }
  ASSERT_EQ(h.service().CancelJob(ids[0]).code, 200);
  h.Quiesce();
  same("", -1, 100);
  const nlohmann::json list = nlohmann::json::parse(h.service().ListJobs("", -1, 1, true).text);
  EXPECT_EQ(list["jobs"][0]["state"], "cancelled");
  EXPECT_EQ(h.service().ListJobs("bogus", -1, 10, true).code, 400);
}

TEST(ServiceTest, CancelPendingAndRunning) {
  ServiceHarness h;
  ASSERT_TRUE(h.Start().ok());
  const int64_t a = h.Submit(R"({"name":"a","groups":[{"count":4,"gpus":8}]})");
  const int64_t b = h.Submit(R"({"name":"b","groups":[{"count":1,"gpus":8}]})");
  ASSERT_TRUE(WaitFor([&] { return h.State(a) == "running"; }));
  EXPECT_EQ(h.service().CancelJob(a).code, 200);
  EXPECT_EQ(h.State(a), "cancelled");
  EXPECT_EQ(h.service().CancelJob(a).code, 200);  // idempotent
  ASSERT_TRUE(WaitFor([&] { return h.State(b) == "running"; }));  // the freed GPUs go to b
  EXPECT_EQ(h.service().CancelJob(12345).code, 404);
}

TEST(ServiceTest, RestartRecoversEveryJobOnce) {
  auto data = std::make_shared<store::MemoryStore::Data>();
  std::vector<std::string> placements_before;
  int64_t run = -1, wait = -1, gone = -1;
  {
    ServiceHarness h("4x8:H100/leaf=2", {}, data);
    ASSERT_TRUE(h.Start().ok());
    run = h.Submit(R"({"name":"run","groups":[{"count":3,"gpus":8}]})");
    wait = h.Submit(R"({"name":"wait","groups":[{"count":2,"gpus":8}]})");
    gone = h.Submit(R"({"name":"gone","groups":[{"count":1,"gpus":1}]})");
    ASSERT_TRUE(WaitFor([&] { return h.State(run) == "running" && h.State(gone) == "running"; }));
    ASSERT_EQ(h.service().CancelJob(gone).code, 200);
    const ApiResult job = h.service().GetJob(run);
    for (const auto& p : job.body["placements"]) placements_before.push_back(p.dump());
    ASSERT_TRUE(WaitFor([&] { return h.records() >= 7; }));  // the cluster, 3 accepted, 2 started, 1 finished
  }
  ServiceHarness h2("4x8:H100/leaf=2", {}, data);
  ASSERT_TRUE(h2.Start().ok());
  EXPECT_EQ(h2.State(run), "running");
  EXPECT_EQ(h2.State(wait), "pending");
  EXPECT_EQ(h2.State(gone), "cancelled");
  std::vector<std::string> after;
  const ApiResult job = h2.service().GetJob(run);
  for (const auto& p : job.body["placements"]) after.push_back(p.dump());
  EXPECT_EQ(after, placements_before);
  EXPECT_EQ(h2.service().ListJobs("", -1, 100).body["jobs"].size(), 3u);
  // Retrying an acknowledged submission after the restart returns the same id.
  ApiResult again = h2.service().SubmitJob(R"({"name":"wait","groups":[{"count":2,"gpus":8}]})");
  EXPECT_EQ(again.code, 200);
  EXPECT_EQ(again.body["id"], wait);
  // New ids continue after the recovered ones.
  EXPECT_GT(h2.Submit(R"({"name":"new","groups":[{"count":1,"gpus":1}]})"), gone);
}

TEST(ServiceTest, ANewerWriterFencesTheOldOne) {
  auto data = std::make_shared<store::MemoryStore::Data>();
  ServiceHarness old_leader("4x8:H100/leaf=2", {}, data);
  ASSERT_TRUE(old_leader.Start().ok());
  old_leader.Submit(kJob8);
  ServiceHarness new_leader("4x8:H100/leaf=2", {}, data);
  ASSERT_TRUE(new_leader.Start().ok());
  ApiResult r = old_leader.service().SubmitJob(R"({"name":"late","groups":[{"count":1,"gpus":1}]})");
  EXPECT_EQ(r.code, 503) << r.body.dump();
  EXPECT_TRUE(WaitFor([&] { return !old_leader.service().ready(); }));
  EXPECT_TRUE(new_leader.service().ready());
  EXPECT_EQ(new_leader.service().ListJobs("", -1, 100).body["jobs"].size(), 1u);
}

TEST(ServiceTest, StoreFailureAnswers503AndLeavesNoJob) {
  ServiceHarness h;
  ASSERT_TRUE(h.Start().ok());
  h.data()->fail_writes = true;
  const std::string body = R"({"name":"x","idempotency_key":"k","groups":[{"count":1,"gpus":1}]})";
  EXPECT_EQ(h.service().SubmitJob(body).code, 503);
  ASSERT_TRUE(h.service().Sync());
  EXPECT_TRUE(h.service().ListJobs("", -1, 100).body["jobs"].empty());
  h.data()->fail_writes = false;
  ASSERT_TRUE(WaitFor([&] { return h.service().SubmitJob(body).code == 201; }));
}

TEST(ServiceTest, VirtualNodesRunJobsToCompletion) {
  ServiceOptions o;
  o.virtual_nodes = true;
  o.speedup = 1000;
  ServiceHarness h("4x8:H100/leaf=2", o);
  ASSERT_TRUE(h.Start().ok());
  const int64_t a = h.Submit(R"({"name":"a","duration_s":5,"groups":[{"count":2,"gpus":8}]})");
  ASSERT_TRUE(WaitFor([&] { return h.State(a) == "succeeded"; }));
  EXPECT_EQ(h.metrics().jobs_finished.load(), 1u);
}

TEST(ServiceTest, SilentNodeRequeuesItsJobsAndRepeatedFailuresQuarantine) {
  ServiceOptions o;
  o.virtual_nodes = true;
  o.heartbeat_interval = 10'000;
  o.heartbeat_timeout = 150'000;
  o.quarantine_failures = 2;
  ServiceHarness h("4x8:H100/leaf=2", o);
  ASSERT_TRUE(h.Start().ok());
  const int64_t a = h.Submit(R"({"name":"a","groups":[{"count":1,"gpus":8}]})");
  ASSERT_TRUE(WaitFor([&] { return h.State(a) == "running"; }));
  const std::string node = h.service().GetJob(a).body["placements"][0]["node"];
  const int32_t n = h.cluster().FindNode(node)->value();
  auto node_json = [&] { return h.service().Nodes().body["nodes"][n]; };
  h.service().virtual_nodes()->Crash(n);
  ASSERT_TRUE(WaitFor([&] { return !node_json()["up"].get<bool>(); }));
  ASSERT_TRUE(WaitFor([&] {
    ApiResult j = h.service().GetJob(a);
    return j.body["state"] == "running" && j.body["requeues"] == 1;
  }));
  EXPECT_NE(h.service().GetJob(a).body["placements"][0]["node"], node);
  h.service().virtual_nodes()->Restore(n);
  ASSERT_TRUE(WaitFor([&] { return node_json()["up"].get<bool>(); }));
  h.service().virtual_nodes()->Crash(n);
  ASSERT_TRUE(WaitFor([&] { return node_json()["quarantined"].get<bool>(); }));
  h.service().virtual_nodes()->Restore(n);
  // Heartbeats come back but a quarantined node stays out.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(node_json()["up"].get<bool>());
  EXPECT_NE(h.service().MetricsText().find("berth_nodes_quarantined 1"), std::string::npos);
}

// A scheduling loop that stalls (here: a Sync that sleeps three timeouts)
// takes no node down: heartbeats are recorded when they arrive, off the loop.
// Reads are answered meanwhile, from the last published snapshot.
TEST(ServiceTest, AStalledLoopTakesNoNodeDownAndReadsGoOn) {
  ServiceOptions o;
  o.virtual_nodes = true;
  o.heartbeat_interval = 10'000;
  o.heartbeat_timeout = 400'000;
  ServiceHarness h("4x8:H100/leaf=2", o);
  ASSERT_TRUE(h.Start().ok());
  const int64_t a = h.Submit(R"({"name":"a","groups":[{"count":1,"gpus":8}]})");
  ASSERT_TRUE(WaitFor([&] { return h.State(a) == "running"; }));
  std::atomic<bool> stalled{false};
  std::thread stall([&] {
    h.service().Sync([&] {
      stalled = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1200));
    });
  });
  ASSERT_TRUE(WaitFor([&] { return stalled.load(); }));
  EXPECT_EQ(h.service().GetJob(a).body["state"], "running");  // answered while the loop sleeps
  EXPECT_EQ(h.service().ListJobs("", -1, 10).body["jobs"].size(), 1u);
  EXPECT_EQ(h.service().Nodes().body["nodes"].size(), 4u);
  stall.join();
  h.Quiesce();
  EXPECT_EQ(h.metrics().node_failures.load(), 0u);
  EXPECT_EQ(h.metrics().jobs_requeued.load(), 0u);
  EXPECT_EQ(h.service().GetJob(a).body["requeues"], 0);
}

// The admin API lists a quarantined node and lifts its quarantine, durably:
// the node comes back at its next heartbeat and stays lifted after a restart.
TEST(ServiceTest, AdminLiftsAQuarantine) {
  ServiceOptions o;
  o.virtual_nodes = true;
  o.heartbeat_interval = 10'000;
  o.heartbeat_timeout = 1'000'000;  // generous: a loaded machine must not fail it twice
  o.quarantine_failures = 1;
  ServiceHarness h("4x8:H100/leaf=2", o);
  ASSERT_TRUE(h.Start().ok());
  const std::string name = h.cluster().node(NodeId(2)).name;
  h.service().virtual_nodes()->Crash(2);
  ASSERT_TRUE(WaitFor([&] { return h.service().AdminNodes("test").body["quarantined"] == 1; }));
  ApiResult list = h.service().AdminNodes("test");
  ASSERT_EQ(list.body["nodes"].size(), 1u);
  EXPECT_EQ(list.body["nodes"][0]["name"], name);
  EXPECT_EQ(list.body["nodes"][0]["up"], false);
  h.service().virtual_nodes()->Restore(2);
  EXPECT_EQ(h.service().Unquarantine("no-such-node", "test").code, 404);
  ApiResult lifted = h.service().Unquarantine(name, "test");
  ASSERT_EQ(lifted.code, 200) << lifted.body.dump();
  EXPECT_EQ(lifted.body["was_quarantined"], true);
  ASSERT_TRUE(WaitFor([&] { return h.service().Nodes().body["nodes"][2]["up"].get<bool>(); }));
  EXPECT_EQ(h.service().Unquarantine(name, "test").body["was_quarantined"], false);
  EXPECT_EQ(h.service().AdminNodes("test").body["nodes"].size(), 0u);
  h.Stop();
  ServiceHarness again("4x8:H100/leaf=2", o, h.data());
  ASSERT_TRUE(again.Start().ok());
  EXPECT_FALSE(again.service().Nodes().body["nodes"][2]["quarantined"].get<bool>());
}

}  // namespace
}  // namespace berth::server
