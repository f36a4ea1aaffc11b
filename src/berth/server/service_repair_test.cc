// In-place gang repair with node agents (service_repair.cc): a failed node's
// task alone restarts as a new attempt of the same run, with its rank, on a
// spare or free node of its domain; a lost task restarts where it was; a
// failed GPU's task moves to the node's other GPUs; without room the gang is
// requeued; a restarted server keeps the repaired placement and attempt.
#include <gtest/gtest.h>

#include <thread>

#include "berth/server/service.h"
#include "berth/server/service_agents_test_util.h"
#include "berth/server/service_test_util.h"
#include "berth/store/memory_store.h"

namespace berth::server {
namespace {

using nlohmann::json;
using testing::AgentHarness;
using testing::WaitFor;

const char* kPair = R"({"name":"g","groups":[{"name":"w","count":2,"gpus":4}],"command":["sleep","600"]})";

void InPlace(AgentHarness& h, const std::string& spares = "leaf:1") {
  h.options_.repair = faults::RepairMode::kInPlace;
  h.options_.spares = faults::ParseSpareSetting(spares).value();
}

// Registers n1..n<count> (4 GPUs each, one leaf), agent ids a1..a<count>.
void RegisterAll(AgentHarness& h, int count) {
  for (int i = 1; i <= count; ++i)
    ASSERT_EQ(h.Register("n" + std::to_string(i), "a" + std::to_string(i), 4, "l1").code, 200);
}

std::string AgentOf(const std::string& node) { return node.empty() ? "" : "a" + node.substr(1); }

// The run list item of task `task` of job `id` on `node`, or null.
json RunItem(AgentHarness& h, const std::string& node, int64_t id, int task) {
  const json run = h.Beat(node, AgentOf(node)).body["run"];
  for (const auto& item : run)
    if (item["job"] == id && item["task"] == task) return item;
  return nullptr;
}

std::string NodeOf(AgentHarness& h, int64_t id, int task) {
  const json placements = h.s().GetJob(id).body["placements"];
  for (const auto& p : placements)
    if (p["task"] == task) return p["node"];
  return "";
}

TEST(ServiceRepairTest, ASilentNodesTaskAloneRestartsOnTheSpareWithItsRank) {
  AgentHarness h(nullptr, 400'000);
  InPlace(h);
  ASSERT_TRUE(h.Start().ok());
  RegisterAll(h, 3);
  ASSERT_TRUE(h.s().Sync());
  std::string spare;
  const json nodes = h.s().Nodes().body["nodes"];
  for (const auto& n : nodes)
    if (n["spare"].get<bool>()) spare = n["name"];
  ASSERT_FALSE(spare.empty()) << h.s().Nodes().body.dump();
  const int64_t id = h.s().SubmitJob(kPair).body["id"];
  json item0, item1;
  const std::string n0 = [&] {
    EXPECT_TRUE(WaitFor([&] { return h.State(id) == "running" && !NodeOf(h, id, 0).empty(); }));
    return NodeOf(h, id, 0);
  }();
  const std::string n1 = NodeOf(h, id, 1);
  ASSERT_NE(n0, spare);
  ASSERT_NE(n1, spare);
  ASSERT_TRUE(WaitFor([&] { return !(item0 = RunItem(h, n0, id, 0)).is_null(); }));
  ASSERT_TRUE(WaitFor([&] { return !(item1 = RunItem(h, n1, id, 1)).is_null(); }));
  EXPECT_EQ(item0["attempt"], 0);
  const int gen = item0["generation"];
  const int rank = item0["rank"];
  ASSERT_EQ(item1["peers"].size(), 2u);

  // n0 goes silent; n1 and the spare keep beating.
  json moved;
  ASSERT_TRUE(WaitFor([&] {
    h.Beat(n1, AgentOf(n1));
    h.Beat(spare, AgentOf(spare));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return !(moved = RunItem(h, spare, id, 0)).is_null();
  }));
  EXPECT_EQ(moved["generation"], gen);  // the same run
  EXPECT_EQ(moved["attempt"], 1);
  EXPECT_EQ(moved["rank"], rank);       // the same rank on the new host
  EXPECT_EQ(moved["launch_env"]["RANK"], std::to_string(rank));
  json j = h.s().GetJob(id).body;
  EXPECT_EQ(j["state"], "running");
  EXPECT_EQ(j["requeues"], 0);
  EXPECT_EQ(j["repairs"], 1);
  EXPECT_EQ(NodeOf(h, id, 0), spare);
  EXPECT_EQ(NodeOf(h, id, 1), n1);
  // The peer that kept running is told where task 0 went (same run, attempt 0).
  json still = RunItem(h, n1, id, 1);
  ASSERT_FALSE(still.is_null());
  EXPECT_EQ(still["generation"], gen);
  EXPECT_EQ(still["attempt"], 0);
  bool told = false;
  for (const auto& p : still["peers"])
    if (p["task"] == 0) told = p["node"] == spare && p["attempt"] == 1;
  EXPECT_TRUE(told) << still["peers"].dump();
  const std::string metrics = h.s().MetricsText();
  EXPECT_NE(metrics.find("berth_gang_repairs_total 1"), std::string::npos);
  EXPECT_NE(metrics.find("berth_tasks_repaired_total 1"), std::string::npos);
  EXPECT_NE(metrics.find("berth_spares_used_total 1"), std::string::npos);

  // The old attempt's exit is refused; the new attempt's counts.
  EXPECT_EQ(h.Exit(spare, AgentOf(spare), id, gen, 0, 0, 0).code, 409);
  EXPECT_EQ(h.Exit(spare, AgentOf(spare), id, gen, 0, 0, 1).code, 200);
  EXPECT_EQ(h.Exit(n1, AgentOf(n1), id, gen, 1, 0).code, 200);
  ASSERT_TRUE(WaitFor([&] { return h.State(id) == "succeeded"; }));
}

TEST(ServiceRepairTest, WithoutRoomTheGangIsRequeued) {
  AgentHarness h(nullptr, 400'000);
  InPlace(h, "none");
  ASSERT_TRUE(h.Start().ok());
  RegisterAll(h, 2);
  const int64_t id = h.s().SubmitJob(kPair).body["id"];
  ASSERT_TRUE(WaitFor([&] { return h.State(id) == "running" && !RunItem(h, NodeOf(h, id, 1), id, 1).is_null(); }));
  const std::string n1 = NodeOf(h, id, 1);
  ASSERT_TRUE(WaitFor([&] {
    h.Beat(n1, AgentOf(n1));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return h.s().GetJob(id).body["requeues"] == 1;
  }));
  EXPECT_EQ(h.s().GetJob(id).body["repairs"], 0);
  EXPECT_NE(h.s().MetricsText().find("berth_repair_fallbacks_total 1"), std::string::npos);
}

TEST(ServiceRepairTest, ALostTaskRestartsWhereItWasAsANewAttempt) {
  AgentHarness h;
  InPlace(h, "none");
  ASSERT_TRUE(h.Start().ok());
  RegisterAll(h, 2);
  const int64_t id = h.s().SubmitJob(kPair).body["id"];
  json item;
  ASSERT_TRUE(WaitFor([&] { return h.State(id) == "running" && !NodeOf(h, id, 0).empty(); }));
  const std::string n0 = NodeOf(h, id, 0);
  ASSERT_TRUE(WaitFor([&] { return !(item = RunItem(h, n0, id, 0)).is_null(); }));
  const int gen = item["generation"];
  // The agent reports the task lost (its supervisor vanished with the machine).
  ApiResult r = h.Beat(n0, AgentOf(n0),
                       json::array({{{"job", id}, {"generation", gen}, {"task", 0}, {"state", "lost"}}}));
  ASSERT_EQ(r.code, 200) << r.body.dump();
  json again;
  ASSERT_TRUE(WaitFor([&] { return !(again = RunItem(h, n0, id, 0)).is_null() && again["attempt"] == 1; }));
  EXPECT_EQ(again["generation"], gen);
  EXPECT_EQ(again["gpus"], item["gpus"]);
  EXPECT_EQ(h.s().GetJob(id).body["requeues"], 0);
  // The report of the lost attempt, repeated by later heartbeats, is refused.
  r = h.Beat(n0, AgentOf(n0), json::array({{{"job", id}, {"generation", gen}, {"task", 0}, {"state", "lost"}}}));
  ASSERT_EQ(r.code, 200);
  ASSERT_EQ(r.body["refused"].size(), 1u) << r.body.dump();
  EXPECT_EQ(h.s().GetJob(id).body["repairs"], 1);
}

TEST(ServiceRepairTest, AFailedGpusTaskMovesToTheNodesOtherGpus) {
  AgentHarness h;
  InPlace(h, "none");
  ASSERT_TRUE(h.Start().ok());
  ASSERT_EQ(h.Register("n1", "a1", 8, "l1").code, 200);
  const int64_t id =
      h.s().SubmitJob(R"({"name":"g","groups":[{"name":"w","count":2,"gpus":2}],"command":["sleep","600"]})").body["id"];
  json item;
  ASSERT_TRUE(WaitFor([&] { return h.State(id) == "running" && !(item = RunItem(h, "n1", id, 0)).is_null(); }));
  const int bad = item["gpus"][0];
  ApiResult r = h.s().AgentHeartbeat(
      json{{"name", "n1"}, {"agent_id", "a1"}, {"tasks", json::array()}, {"failed_gpus", json::array({bad})}}.dump());
  ASSERT_EQ(r.code, 200);
  json moved;
  ASSERT_TRUE(WaitFor([&] { return !(moved = RunItem(h, "n1", id, 0)).is_null() && moved["attempt"] == 1; }));
  for (const auto& g : moved["gpus"]) EXPECT_NE(g, bad);
  EXPECT_EQ(RunItem(h, "n1", id, 1)["attempt"], 0);  // its peer kept its GPUs and its attempt
  EXPECT_EQ(h.s().GetJob(id).body["requeues"], 0);
}

TEST(ServiceRepairTest, PeersRestartTooWhenAsked) {
  AgentHarness h(nullptr, 400'000);
  InPlace(h);
  h.options_.repair_peers = ServiceOptions::RepairPeers::kRestart;
  ASSERT_TRUE(h.Start().ok());
  RegisterAll(h, 3);
  const int64_t id = h.s().SubmitJob(kPair).body["id"];
  ASSERT_TRUE(WaitFor([&] { return h.State(id) == "running" && !RunItem(h, NodeOf(h, id, 1), id, 1).is_null(); }));
  const std::string n0 = NodeOf(h, id, 0), n1 = NodeOf(h, id, 1);
  json peer;
  ASSERT_TRUE(WaitFor([&] {
    for (int i = 1; i <= 3; ++i)
      if ("n" + std::to_string(i) != n0) h.Beat("n" + std::to_string(i), "a" + std::to_string(i));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return h.s().GetJob(id).body["repairs"] == 1 && !(peer = RunItem(h, n1, id, 1)).is_null() && peer["attempt"] == 1;
  }));
  EXPECT_EQ(NodeOf(h, id, 1), n1);  // restarted on its own GPUs
  EXPECT_EQ(h.s().GetJob(id).body["requeues"], 0);
}

TEST(ServiceRepairTest, ARestartedServerKeepsTheRepairedPlacementAndAttempt) {
  auto data = std::make_shared<store::MemoryStore::Data>();
  int64_t id = -1;
  std::string spare, n0;
  {
    AgentHarness h(data, 400'000);
    InPlace(h);
    ASSERT_TRUE(h.Start().ok());
    RegisterAll(h, 3);
    id = h.s().SubmitJob(kPair).body["id"];
    ASSERT_TRUE(WaitFor([&] { return h.State(id) == "running" && !RunItem(h, NodeOf(h, id, 0), id, 0).is_null(); }));
    n0 = NodeOf(h, id, 0);
    ASSERT_TRUE(WaitFor([&] {
      for (int i = 1; i <= 3; ++i)
        if ("n" + std::to_string(i) != n0) h.Beat("n" + std::to_string(i), "a" + std::to_string(i));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      return h.s().GetJob(id).body["repairs"] == 1;
    }));
    spare = NodeOf(h, id, 0);
    ASSERT_TRUE(WaitFor([&] { return !RunItem(h, spare, id, 0).is_null(); }));  // its record is durable
  }
  AgentHarness h(data);
  InPlace(h);
  ASSERT_TRUE(h.Start().ok());
  EXPECT_EQ(h.State(id), "running");
  EXPECT_EQ(NodeOf(h, id, 0), spare);
  json item = RunItem(h, spare, id, 0);
  ASSERT_FALSE(item.is_null());
  EXPECT_EQ(item["attempt"], 1);
  EXPECT_EQ(item["generation"], 1);
  EXPECT_EQ(h.s().GetJob(id).body["repairs"], 1);
}

TEST(ServiceRepairTest, RepairNeedsNodeAgentsOrVirtualNodes) {
  ServiceOptions o;
  o.repair = faults::RepairMode::kInPlace;
  Status s = o.Validate();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("node agents"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("--virtual-nodes"), std::string::npos) << s.message();
  o.virtual_nodes = true;
  EXPECT_TRUE(o.Validate().ok());
  o.virtual_nodes = false;
  o.agent_nodes = true;
  EXPECT_TRUE(o.Validate().ok());
  o.repair_cost = -1;
  EXPECT_FALSE(o.Validate().ok());
}

}  // namespace
}  // namespace berth::server

namespace berth::server {
namespace {

// A topology-reliable service of two agents, n1 reporting its GPU 2 failed.
void StartWithAFailedGpu(AgentHarness& h) {
  h.options_.policy = "topology-reliable";
  ASSERT_TRUE(h.Start().ok());
  RegisterAll(h, 2);
  ApiResult r = h.s().AgentHeartbeat(
      json{{"name", "n1"}, {"agent_id", "a1"}, {"tasks", json::array()}, {"failed_gpus", json::array({2})}}.dump());
  ASSERT_EQ(r.code, 200);
}

// The service's own failure reports feed the history topology-reliable reads.
TEST(ServiceRepairTest, NodeAndGpuFailuresFeedTheFailureHistory) {
  AgentHarness h(nullptr, 400'000);
  StartWithAFailedGpu(h);
  // n2 goes silent.
  ASSERT_TRUE(WaitFor([&] {
    h.Beat("n1", "a1");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return h.s().MetricsText().find("berth_failures_learned_total 2") != std::string::npos;
  }));
  EXPECT_NE(h.s().MetricsText().find("berth_failure_history_entries 2"), std::string::npos);
}

// The history is in the store: a restarted server (the same store) holds the
// same failures and feeds them to its policy again, before any new failure.
TEST(ServiceRepairTest, TheFailureHistorySurvivesARestart) {
  auto data = std::make_shared<store::MemoryStore::Data>();
  {
    AgentHarness h(data, 400'000);
    StartWithAFailedGpu(h);
    ASSERT_TRUE(WaitFor([&] { return h.s().MetricsText().find("berth_failure_history_entries 1") != std::string::npos; }));
  }
  int failed_records = 0;
  for (const auto& rec : data->records)
    if (rec.kind == store::RecordKind::kNodeFailed) {
      ++failed_records;
      EXPECT_EQ(rec.key, "n1");
      EXPECT_EQ(rec.body, "{\"weight\":1.0}");
    }
  EXPECT_EQ(failed_records, 1);
  AgentHarness again(data, 60'000'000);
  again.options_.policy = "topology-reliable";
  ASSERT_TRUE(again.Start().ok());
  const std::string m = again.s().MetricsText();
  EXPECT_NE(m.find("berth_failure_history_entries 1"), std::string::npos) << m.substr(0, 400);
  EXPECT_NE(m.find("berth_failures_learned_total 0"), std::string::npos);  // learned before, not again
}

}  // namespace
}  // namespace berth::server
