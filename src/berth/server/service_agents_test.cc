// The node API of the service, without HTTP: registrations rebuild the
// cluster, heartbeat answers list the tasks, exits end jobs, silence requeues,
// and a restart recovers the registrations and the running placements.
#include <gtest/gtest.h>

#include <cstdio>

#include "berth/server/agent_api.h"
#include "berth/server/job_json.h"
#include "berth/server/service.h"
#include "berth/server/service_agents_test_util.h"
#include "berth/server/service_test_util.h"
#include "berth/store/memory_store.h"

namespace berth::server {
namespace {

using nlohmann::json;
using testing::AgentHarness;
using testing::WaitFor;

const char* kGang =
    R"({"name":"g","groups":[{"name":"w","count":2,"gpus":4}],"command":["/bin/true"],"env":{"A":"1"}})";

TEST(ServiceAgentsTest, RegisteredAgentsAreTheCluster) {
  AgentHarness h;
  ASSERT_TRUE(h.Start().ok());
  EXPECT_EQ(h.s().Nodes().body["nodes"].size(), 0u);
  ASSERT_EQ(h.Register("n1", "a1").code, 200);
  ASSERT_EQ(h.Register("n2", "a2").code, 200);
  ASSERT_TRUE(h.s().Sync());
  json nodes = h.s().Nodes().body["nodes"];
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0]["name"], "n1");
  EXPECT_EQ(nodes[1]["gpus"], 4);
  // The same registration again changes nothing.
  EXPECT_EQ(h.Register("n1", "a1").body["changed"], false);
}

TEST(ServiceAgentsTest, GangRunsThroughHeartbeatsAndSucceeds) {
  AgentHarness h;
  ASSERT_TRUE(h.Start().ok());
  ASSERT_EQ(h.Register("n1", "a1").code, 200);
  ASSERT_EQ(h.Register("n2", "a2").code, 200);
  const int64_t id = h.s().SubmitJob(kGang).body.value("id", int64_t{-1});
  ASSERT_GE(id, 1);
  ASSERT_TRUE(WaitFor([&] { return h.State(id) == "running"; }));
  json run1, run2;
  ASSERT_TRUE(WaitFor([&] {
    run1 = h.Beat("n1", "a1").body["run"];
    run2 = h.Beat("n2", "a2").body["run"];
    return run1.size() == 1 && run2.size() == 1;
  }));
  EXPECT_EQ(run1[0]["gpus"].size(), 4u);
  EXPECT_EQ(run1[0]["command"][0], "/bin/true");
  EXPECT_EQ(run1[0]["env"]["A"], "1");
  EXPECT_NE(run1[0]["task"], run2[0]["task"]);
  const int gen = run1[0]["generation"];
  EXPECT_EQ(h.Exit("n1", "a1", id, gen, run1[0]["task"], 0).code, 200);
  EXPECT_EQ(h.State(id), "running");  // the other task still runs
  // A task the node does not run, a job that does not exist: refused.
  EXPECT_EQ(h.Exit("n1", "a1", id, gen, run2[0]["task"], 0).code, 409);
  EXPECT_EQ(h.Exit("n1", "a1", 999, 1, 0, 0).code, 404);
  EXPECT_EQ(h.Exit("n1", "a1", id, gen + 1, 0, 0).code, 409);
  // Repeated heartbeat reports of a recorded exit are harmless.
  EXPECT_EQ(h.Beat("n1", "a1", json::array({{{"job", id}, {"generation", gen}, {"task", run1[0]["task"]},
                                              {"state", "exited"}, {"exit_code", 0}}}))
                .code,
            200);
  EXPECT_EQ(h.Exit("n2", "a2", id, gen, run2[0]["task"], 0).code, 200);
  ASSERT_TRUE(WaitFor([&] { return h.State(id) == "succeeded"; }));
  EXPECT_TRUE(h.Beat("n1", "a1").body["run"].empty());
}

TEST(ServiceAgentsTest, NonZeroExitFailsTheJob) {
  AgentHarness h;
  ASSERT_TRUE(h.Start().ok());
  ASSERT_EQ(h.Register("n1", "a1", 8).code, 200);
  const int64_t id =
      h.s().SubmitJob(R"({"name":"f","groups":[{"name":"w","count":1,"gpus":2}],"command":["false"]})").body["id"];
  json run;
  ASSERT_TRUE(WaitFor([&] { return (run = h.Beat("n1", "a1").body["run"]).size() == 1; }));
  EXPECT_EQ(h.Exit("n1", "a1", id, run[0]["generation"], 0, 3).code, 200);
  ASSERT_TRUE(WaitFor([&] { return h.State(id) == "failed"; }));
  EXPECT_NE(h.s().GetJob(id).body.dump().find("exited with status 3"), std::string::npos);
}

TEST(ServiceAgentsTest, BadInputChangesNothing) {
  AgentHarness h;
  ASSERT_TRUE(h.Start().ok());
  ASSERT_EQ(h.Register("n1", "a1").code, 200);
  // The name taken by another live agent.
  ApiResult dup = h.Register("n1", "other");
  EXPECT_EQ(dup.code, 409);
  EXPECT_NE(dup.body["error"].get<std::string>().find("another agent"), std::string::npos);
  EXPECT_EQ(h.Beat("n1", "other").code, 409);
  // Malformed documents.
  EXPECT_EQ(h.s().AgentRegister("{").code, 400);
  EXPECT_EQ(h.s().AgentRegister(R"({"name":"x","agent_id":"a","gpus":[{"index":0}]})").code, 400);
  EXPECT_EQ(h.s().AgentRegister(R"({"name":"x","agent_id":"a","gpus":[{"index":0,"type":"H100"},{"index":0,"type":"H100"}]})").code, 400);
  EXPECT_EQ(h.s().AgentRegister(R"({"name":"x","agent_id":"a","gpus":[{"index":0,"type":"H100"},{"index":1,"type":"A100"}]})").code, 400);
  EXPECT_EQ(h.s().AgentRegister(R"({"name":"x","agent_id":"a","colour":"red"})").code, 400);
  EXPECT_EQ(h.s().AgentHeartbeat(R"({"name":"n1","agent_id":"a1","tasks":[{"job":"one"}]})").code, 400);
  EXPECT_EQ(h.s().AgentTaskStatus(R"({"name":"n1","agent_id":"a1","job":1,"generation":1,"task":0,"state":"running"})").code, 400);
  EXPECT_EQ(h.Beat("ghost", "g").code, 404);
  ASSERT_TRUE(h.s().Sync());
  json nodes = h.s().Nodes().body["nodes"];
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0]["name"], "n1");
}

TEST(ServiceAgentsTest, JobWaitsForAgentsThatCanHoldIt) {
  AgentHarness h;
  ASSERT_TRUE(h.Start().ok());
  const int64_t id = h.s().SubmitJob(kGang).body.value("id", int64_t{-1});
  ASSERT_GE(id, 1);
  ASSERT_TRUE(WaitFor([&] { return h.State(id) == "pending"; }));
  EXPECT_NE(h.s().GetJob(id).body.dump().find("waiting for node agents"), std::string::npos);
  ASSERT_EQ(h.Register("n1", "a1").code, 200);
  ASSERT_TRUE(h.s().Sync());
  EXPECT_EQ(h.State(id), "pending");  // one node of 4 GPUs cannot hold 2 x 4
  ASSERT_EQ(h.Register("n2", "a2").code, 200);
  ASSERT_TRUE(WaitFor([&] { return h.State(id) == "running"; }));
}

TEST(ServiceAgentsTest, SilentNodeGoesDownAndItsGangIsRequeued) {
  AgentHarness h(nullptr, 400'000);
  ASSERT_TRUE(h.Start().ok());
  ASSERT_EQ(h.Register("n1", "a1").code, 200);
  ASSERT_EQ(h.Register("n2", "a2").code, 200);
  const int64_t id =
      h.s().SubmitJob(R"({"name":"one","groups":[{"name":"w","count":1,"gpus":4}],"command":["sleep","60"]})").body["id"];
  ASSERT_TRUE(WaitFor([&] { return h.State(id) == "running"; }));
  const std::string first = h.s().GetJob(id).body["placements"][0]["node"];
  const std::string other = first == "n1" ? "n2" : "n1";
  const std::string other_id = first == "n1" ? "a2" : "a1";
  // Only the other node heartbeats: the first goes down, the job moves.
  ASSERT_TRUE(WaitFor([&] {
    h.Beat(other, other_id);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    json j = h.s().GetJob(id).body;
    return j["state"] == "running" && j["placements"][0]["node"] == other;
  }));
  EXPECT_GE(h.s().GetJob(id).body["requeues"].get<int>(), 1);
}

TEST(ServiceAgentsTest, RestartRecoversRegistrationsAndRunningJobs) {
  auto data = std::make_shared<store::MemoryStore::Data>();
  int64_t id = -1;
  json placements;
  {
    AgentHarness h(data);
    ASSERT_TRUE(h.Start().ok());
    ASSERT_EQ(h.Register("n1", "a1").code, 200);
    ASSERT_EQ(h.Register("n2", "a2").code, 200);
    id = h.s().SubmitJob(kGang).body["id"];
    ASSERT_TRUE(WaitFor([&] { return h.State(id) == "running" && h.Beat("n1", "a1").body["run"].size() == 1; }));
    placements = h.s().GetJob(id).body["placements"];
  }
  AgentHarness h(data);
  ASSERT_TRUE(h.Start().ok());
  EXPECT_EQ(h.State(id), "running");
  EXPECT_EQ(h.s().GetJob(id).body["placements"], placements);
  EXPECT_EQ(h.s().Nodes().body["nodes"].size(), 2u);
  // The agents carry on without registering again.
  json run = h.Beat("n1", "a1").body["run"];
  ASSERT_EQ(run.size(), 1u);
  EXPECT_EQ(run[0]["generation"], 1);
}

TEST(JobCommandTest, CommandAndEnvRoundTrip) {
  auto sub = ParseJobBody(
      R"({"name":"a","groups":[{"count":1,"gpus":1}],"command":["sh","-c","echo hi\nexit 0"],"env":{"A_1":"x y"}})");
  ASSERT_TRUE(sub.ok()) << sub.status().message();
  EXPECT_EQ(sub->spec.command.size(), 3u);
  EXPECT_EQ(sub->spec.env.at("A_1"), "x y");
  json back = JobToJson(sub->spec);
  EXPECT_EQ(back["command"][2], "echo hi\nexit 0");
  EXPECT_EQ(back["env"]["A_1"], "x y");
  for (const char* bad : {R"("command":[])", R"("command":"sh")", R"("command":[""])", R"("command":[1])",
                          R"("env":{"1A":"x"})", R"("env":{"A":1})", R"("env":[])"}) {
    auto r = ParseJobBody(std::string(R"({"name":"a","groups":[{"count":1,"gpus":1}],)") + bad + "}");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_TRUE(r.status().message().find("command") != std::string::npos ||
                r.status().message().find("env") != std::string::npos)
        << r.status().message();
  }
}

TEST(AgentApiTest, ParsesAndEncodesRegistrations) {
  auto r = ParseAgentRegistration(
      R"({"name":"n","agent_id":"x","cpu_milli":1000,"memory_mib":2048,"gpus":[{"index":3,"type":"H100","memory_mib":81920}],"labels":{"leaf":"l1"}})");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->gpus[0].index, 3);
  EXPECT_EQ(r->ToNodeSpec().gpu_count, 1);
  EXPECT_EQ(r->ToNodeSpec().leaf, "l1");
  auto again = ParseAgentRegistration(EncodeAgentRegistration(*r));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(EncodeAgentRegistration(*again), EncodeAgentRegistration(*r));
  auto bad = ParseAgentRegistration(R"({"name":"a b","agent_id":"x"})");
  EXPECT_FALSE(bad.ok());
  auto label = ParseAgentRegistration(R"({"name":"n","agent_id":"x","labels":{"rack":"r"}})");
  ASSERT_FALSE(label.ok());
  EXPECT_NE(label.status().message().find("not a topology level"), std::string::npos) << label.status().message();
}

}  // namespace
}  // namespace berth::server

namespace berth::server {
namespace {

// A heartbeat that reports a failed GPU: the job on it goes back to the queue
// and runs again on the node's other GPUs; the GPU stays out until a
// heartbeat leaves it out of the list, and again after a restart.
TEST(ServiceAgentsTest, FailedGpuTakesOnlyThatGpuOut) {
  auto data = std::make_shared<store::MemoryStore::Data>();
  AgentHarness h(data);
  ASSERT_TRUE(h.Start().ok());
  ASSERT_EQ(h.Register("n1", "a1", 8).code, 200);
  auto beat = [&](AgentHarness& x, json failed) {
    return x.s().AgentHeartbeat(json{{"name", "n1"}, {"agent_id", "a1"}, {"tasks", json::array()},
                                     {"failed_gpus", failed}}
                                    .dump());
  };
  const int64_t a = h.s().SubmitJob(R"({"name":"a","groups":[{"name":"w","count":1,"gpus":4}],"command":["x"]})")
                        .body["id"];
  ASSERT_TRUE(WaitFor([&] { return h.State(a) == "running"; }));
  const int bad = h.s().GetJob(a).body["placements"][0]["gpus"][0];
  ApiResult r = beat(h, json::array({bad}));
  ASSERT_EQ(r.code, 200) << r.body.dump();
  // Requeued from its checkpoint, then placed again on healthy GPUs.
  ASSERT_TRUE(WaitFor([&] { return h.s().GetJob(a).body["requeues"] == 1 && h.State(a) == "running"; }));
  for (const auto& g : h.s().GetJob(a).body["placements"][0]["gpus"]) EXPECT_NE(g, bad);
  json node = h.s().Nodes().body["nodes"][0];
  EXPECT_EQ(node["failed_gpus"], json::array({bad}));
  EXPECT_TRUE(node["up"].get<bool>());
  EXPECT_EQ(h.s().AdminNodes("test").body["nodes"][0]["failed_gpus"], json::array({bad}));
  EXPECT_NE(h.s().MetricsText().find("berth_gpu_failures_total 1"), std::string::npos);
  // The same report again changes nothing; 3 healthy GPUs are left.
  ASSERT_EQ(beat(h, json::array({bad})).code, 200);
  const int64_t b = h.s().SubmitJob(R"({"name":"b","groups":[{"name":"w","count":1,"gpus":4}],"command":["x"]})")
                        .body["id"];
  ASSERT_TRUE(h.s().Sync());
  ASSERT_TRUE(h.s().Sync());
  EXPECT_EQ(h.State(b), "pending");
  EXPECT_EQ(h.s().GetJob(a).body["requeues"], 1);
  // Bad reports are refused whole; an index the node never registered is ignored.
  EXPECT_EQ(beat(h, json::array({"x"})).code, 400);
  EXPECT_EQ(beat(h, json::array({1, 1})).code, 400);
  EXPECT_EQ(beat(h, json("3")).code, 400);
  ASSERT_EQ(beat(h, json::array({bad, 99})).code, 200);
  EXPECT_EQ(h.s().Nodes().body["nodes"][0]["failed_gpus"], json::array({bad}));
  h.s().Stop();

  // After a restart the next heartbeat says it again; then the GPU heals.
  AgentHarness again(data);
  ASSERT_TRUE(again.Start().ok());
  ASSERT_EQ(beat(again, json::array({bad})).code, 200);
  ASSERT_TRUE(again.s().Sync());
  EXPECT_EQ(again.s().Nodes().body["nodes"][0]["failed_gpus"], json::array({bad}));
  EXPECT_EQ(again.State(a), "running");
  EXPECT_EQ(again.State(b), "pending");
  ASSERT_EQ(beat(again, json::array()).code, 200);
  ASSERT_TRUE(WaitFor([&] { return again.State(b) == "running"; }));
  EXPECT_TRUE(again.s().Nodes().body["nodes"][0]["failed_gpus"].empty());
}

}  // namespace
}  // namespace berth::server
