// The admin node actions: an operator's quarantine (work stops at once), drain
// (work goes on; a deadline checkpoints and requeues what is left) and the
// return to service, each durable across a restart.
#include <gtest/gtest.h>

#include "berth/server/service.h"
#include "berth/server/service_test_util.h"

namespace berth::server {
namespace {

using testing::ServiceHarness;
using testing::WaitFor;

const char* kJob8 = R"({"name":"%s","groups":[{"count":1,"gpus":8}]})";

std::string Job8(const std::string& name) {
  char buf[128];
  std::snprintf(buf, sizeof buf, kJob8, name.c_str());
  return buf;
}

std::string NodeOf(ServiceHarness& h, int64_t id) {
  ApiResult j = h.service().GetJob(id);
  if (j.body["placements"].empty()) return "";
  return j.body["placements"][0]["node"].get<std::string>();
}

nlohmann::json NodeView(ServiceHarness& h, const std::string& name) {
  ApiResult nodes = h.service().Nodes();
  for (const auto& n : nodes.body["nodes"])
    if (n["name"] == name) return n;
  ADD_FAILURE() << "no node '" << name << "' in " << nodes.body.dump();
  return nlohmann::json::object({{"quarantined", false}, {"draining", false}, {"up", false}, {"tasks", -1}});
}

TEST(ServiceAdminTest, QuarantineStopsTheWorkAndHoldsAcrossARestart) {
  ServiceHarness h("4x8:H100/leaf=2");
  ASSERT_TRUE(h.Start().ok());
  const int64_t a = h.Submit(Job8("a"));
  ASSERT_TRUE(WaitFor([&] { return h.State(a) == "running"; }));
  const std::string node = NodeOf(h, a);
  EXPECT_EQ(h.service().Quarantine("no-such-node", "test").code, 404);
  ApiResult q = h.service().Quarantine(node, "test");
  ASSERT_EQ(q.code, 200) << q.body.dump();
  EXPECT_EQ(q.body["was_quarantined"], false);
  EXPECT_EQ(q.body["tasks_stopped"], 1);
  // Requeued from its checkpoint and started again on another node.
  ASSERT_TRUE(WaitFor([&] { return h.State(a) == "running" && NodeOf(h, a) != node; }));
  EXPECT_EQ(h.service().GetJob(a).body["requeues"], 1);
  EXPECT_EQ(h.service().Quarantine(node, "test").body["was_quarantined"], true);
  // Three nodes take work: the fourth 8-GPU job waits.
  const int64_t b = h.Submit(Job8("b")), c = h.Submit(Job8("c")), d = h.Submit(Job8("d"));
  ASSERT_TRUE(WaitFor([&] { return h.State(b) == "running" && h.State(c) == "running"; }));
  h.Quiesce();
  EXPECT_EQ(h.State(d), "pending");
  ApiResult list = h.service().AdminNodes("test");
  ASSERT_EQ(list.body["nodes"].size(), 1u) << list.body.dump();
  EXPECT_EQ(list.body["nodes"][0]["name"], node);
  EXPECT_EQ(list.body["nodes"][0]["quarantined"], true);
  EXPECT_EQ(list.body["nodes"][0]["failures"], 0);  // an operator's quarantine is no failure
  h.Stop();

  ServiceHarness again("4x8:H100/leaf=2", {}, h.data());
  ASSERT_TRUE(again.Start().ok());
  EXPECT_TRUE(NodeView(again, node)["quarantined"].get<bool>());
  again.Quiesce();
  EXPECT_EQ(again.State(d), "pending");
  ApiResult lifted = again.service().Unquarantine(node, "test");
  ASSERT_EQ(lifted.code, 200) << lifted.body.dump();
  EXPECT_EQ(lifted.body["was_quarantined"], true);
  EXPECT_EQ(lifted.body["was_draining"], false);
  // Without heartbeats the node is up at once, and the waiting job takes it.
  ASSERT_TRUE(WaitFor([&] { return again.State(d) == "running"; }));
  EXPECT_EQ(NodeOf(again, d), node);
}

TEST(ServiceAdminTest, DrainKeepsRunningWorkAndStopsItAtTheDeadline) {
  ServiceHarness h("4x8:H100/leaf=2");
  ASSERT_TRUE(h.Start().ok());
  const int64_t a = h.Submit(Job8("a"));
  ASSERT_TRUE(WaitFor([&] { return h.State(a) == "running"; }));
  const std::string node = NodeOf(h, a);
  ApiResult d = h.service().Drain(node, "", "test");
  ASSERT_EQ(d.code, 200) << d.body.dump();
  EXPECT_EQ(d.body["draining"], true);
  EXPECT_EQ(d.body["running_jobs"], 1);
  EXPECT_TRUE(d.body["deadline_s"].is_null());
  // The running job stays; new work goes elsewhere.
  const int64_t b = h.Submit(Job8("b")), c = h.Submit(Job8("c")), e = h.Submit(Job8("e")),
                f = h.Submit(Job8("f"));
  ASSERT_TRUE(WaitFor([&] { return h.State(e) == "running"; }));
  h.Quiesce();
  EXPECT_EQ(h.State(a), "running");
  EXPECT_EQ(NodeOf(h, a), node);
  EXPECT_EQ(h.State(f), "pending");
  for (int64_t id : {b, c, e}) EXPECT_NE(NodeOf(h, id), node);
  nlohmann::json nv = NodeView(h, node);
  EXPECT_TRUE(nv["draining"].get<bool>());
  EXPECT_TRUE(nv["up"].get<bool>());  // healthy: only out of the scheduler's reach
  EXPECT_EQ(h.service().AdminNodes("test").body["draining"], 1);

  // Bad bodies name the field; nothing changes.
  for (const char* bad : {R"({"deadline_s":-1})", R"({"deadline_s":1.5})", R"({"deadline":5})", "[1]", "{"}) {
    ApiResult r = h.service().Drain(node, bad, "test");
    EXPECT_EQ(r.code, 400) << bad;
    EXPECT_NE(r.body["error"].get<std::string>().find("drain"), std::string::npos) << r.body.dump();
  }
  EXPECT_EQ(h.service().Drain("no-such-node", "", "test").code, 404);
  EXPECT_EQ(h.State(a), "running");

  // A deadline: the job still there takes a checkpoint and goes back to the queue.
  ApiResult now = h.service().Drain(node, R"({"deadline_s":0})", "test");
  ASSERT_EQ(now.code, 200) << now.body.dump();
  EXPECT_EQ(now.body["was_draining"], true);
  ASSERT_TRUE(WaitFor([&] { return h.service().GetJob(a).body["requeues"] == 1; }));
  h.Quiesce();
  EXPECT_EQ(h.State(a), "pending");
  EXPECT_EQ(NodeView(h, node)["tasks"], 0);
  h.Stop();

  // Still draining after a restart, until returned to service.
  ServiceHarness again("4x8:H100/leaf=2", {}, h.data());
  ASSERT_TRUE(again.Start().ok());
  EXPECT_TRUE(NodeView(again, node)["draining"].get<bool>());
  again.Quiesce();
  EXPECT_NE(NodeOf(again, b), node);
  ApiResult lifted = again.service().Unquarantine(node, "test");
  ASSERT_EQ(lifted.code, 200);
  EXPECT_EQ(lifted.body["was_draining"], true);
  EXPECT_EQ(lifted.body["was_quarantined"], false);
  ASSERT_TRUE(WaitFor([&] { return again.State(a) == "running" || again.State(f) == "running"; }));
  EXPECT_FALSE(NodeView(again, node)["draining"].get<bool>());
  EXPECT_EQ(again.service().Unquarantine(node, "test").body["was_draining"], false);
}

// A deadline in the future passes on the loop's clock and stops the work then.
TEST(ServiceAdminTest, DrainDeadlineInTheFuture) {
  ServiceHarness h("2x8:H100");
  ASSERT_TRUE(h.Start().ok());
  const int64_t a = h.Submit(Job8("a"));
  ASSERT_TRUE(WaitFor([&] { return h.State(a) == "running"; }));
  const std::string node = NodeOf(h, a);
  ApiResult d = h.service().Drain(node, R"({"deadline_s":1})", "test");
  ASSERT_EQ(d.code, 200) << d.body.dump();
  EXPECT_EQ(d.body["deadline_s"], 1.0);
  // Requeued at the deadline and started on the other node.
  ASSERT_TRUE(WaitFor([&] { return h.State(a) == "running" && NodeOf(h, a) != node; }));
  EXPECT_EQ(h.service().GetJob(a).body["requeues"], 1);
}

}  // namespace
}  // namespace berth::server
