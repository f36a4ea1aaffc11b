// Reserved nodes for services in the daemon: the flags' args (names, ids,
// the queue file's per-queue overcommit, errors that name the flag), replicas
// only on the reservation, static partitioning keeping batch off it, and a
// replica reclaiming a reserved node from best-effort work.
#include <gtest/gtest.h>

#include "berth/server/colocation_flags.h"
#include "berth/server/service_test_util.h"

namespace berth::server {
namespace {

using testing::ServiceHarness;
using testing::WaitFor;

// The node names of job `id`'s placements ("" when it has none).
std::string NodeOf(ServiceHarness& h, int64_t id) {
  const ApiResult r = h.service().GetJob(id);
  if (r.code != 200 || !r.body.contains("placements") || r.body["placements"].empty()) return "";
  return r.body["placements"][0]["node"].get<std::string>();
}

// The job ids of service `id`'s replicas.
std::vector<int64_t> Replicas(ServiceHarness& h, int64_t id) {
  std::vector<int64_t> out;
  const ApiResult r = h.service().GetService(id);
  if (r.code != 200) return out;
  for (const auto& x : r.body["replicas"]) out.push_back(x.get<int64_t>());
  return out;
}

constexpr const char* kService =
    R"({"name":"chat","kind":"service","replicas":1,"min_replicas":1,"max_replicas":1,)"
    R"("latency_class":"critical","groups":[{"gpus":8}]})";

TEST(ServeColocationArgs, NamesIdsQueueRatiosAndErrors) {
  const cluster::Cluster c = cluster::ParseClusterSpec("4x8:H100").value();
  tenancy::QueueFile q;
  q.overcommit["be"] = 0.25;
  ServeColocation f;
  EXPECT_TRUE(ColocationArgs(f, c, &q).value().empty());  // nothing reserved: no plugin
  f.reserved = c.nodes()[0].name + ",2-3";
  f.overcommit = 0.5;
  auto a = ColocationArgs(f, c, &q);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->at("reserved"), "0,2-3");
  EXPECT_EQ(a->at("mode"), "colocate");
  EXPECT_EQ(a->at("overcommit"), "0.500");
  EXPECT_EQ(a->at("spill"), "true");
  EXPECT_EQ(a->at("queue.be"), "0.250");
  f.reserved = "gpu-9";
  EXPECT_EQ(ColocationArgs(f, c, nullptr).status().message(),
            "--reserved-nodes: 'gpu-9' is not a node id or range within 0..3 (or a node name of the cluster)");
  f.reserved = "0";
  f.mode = "shared";
  EXPECT_EQ(ColocationArgs(f, c, nullptr).status().message(),
            "--colocation-mode: expected colocate or static, got 'shared'");
  f.mode = "static";
  f.overcommit = 2;
  EXPECT_EQ(ColocationArgs(f, c, nullptr).status().message(), "--overcommit: expected a ratio in 0..1, got 2.000");
}

ServiceOptions Reserved(const std::string& mode) {
  ServiceOptions o;
  o.policy = "priority-preempt";
  o.yield_best_effort = SecondsToUs(30);
  const cluster::Cluster c = cluster::ParseClusterSpec("2x8:H100").value();
  ServeColocation f;
  f.reserved = "0";
  f.mode = mode;
  o.colocation = ColocationArgs(f, c, nullptr).value();
  return o;
}

TEST(ServeColocation, StaticPartitionKeepsBatchOffTheReservation) {
  ServiceHarness h("2x8:H100", Reserved("static"));
  const Status started = h.Start();
  ASSERT_TRUE(started.ok()) << started.message();
  const std::string reserved = h.cluster().nodes()[0].name, batch = h.cluster().nodes()[1].name;
  const int64_t b1 = h.Submit(R"({"name":"b1","groups":[{"gpus":8}]})");
  const int64_t b2 = h.Submit(R"({"name":"b2","groups":[{"gpus":8}]})");
  ASSERT_TRUE(WaitFor([&] { return h.State(b1) == "running" || h.State(b2) == "running"; }));
  h.Quiesce();
  // One batch job on the batch node, the other waits: the reservation is not theirs.
  EXPECT_EQ((h.State(b1) == "running") + (h.State(b2) == "running"), 1);
  EXPECT_EQ(NodeOf(h, h.State(b1) == "running" ? b1 : b2), batch);
  const int64_t s = h.Submit(kService);
  ASSERT_TRUE(WaitFor([&] {
    auto r = Replicas(h, s);
    return r.size() == 1 && h.State(r[0]) == "running";
  }));
  EXPECT_EQ(NodeOf(h, Replicas(h, s)[0]), reserved);
}

TEST(ServeColocation, ReplicaReclaimsTheReservationFromBestEffort) {
  ServiceHarness h("2x8:H100", Reserved("colocate"));
  const Status started = h.Start();
  ASSERT_TRUE(started.ok()) << started.message();
  const std::string reserved = h.cluster().nodes()[0].name;
  // Best effort and batch fill both nodes (they may borrow the idle reservation).
  const int64_t be = h.Submit(R"({"name":"be","best_effort":true,"groups":[{"gpus":8}]})");
  const int64_t b = h.Submit(R"({"name":"b","groups":[{"gpus":8}]})");
  ASSERT_TRUE(WaitFor([&] { return h.State(be) == "running" && h.State(b) == "running"; }));
  const int64_t borrower = NodeOf(h, be) == reserved ? be : b, other = borrower == be ? b : be;
  const int64_t s = h.Submit(kService);
  ASSERT_TRUE(WaitFor([&] {
    auto r = Replicas(h, s);
    return r.size() == 1 && h.State(r[0]) == "running";
  }));
  // The replica runs on the reserved node; whoever borrowed it was evicted
  // for it (batch work too, minutes into its run: the guard does not shield
  // borrowed reserved capacity), the work on the batch node kept running.
  EXPECT_EQ(NodeOf(h, Replicas(h, s)[0]), reserved);
  EXPECT_NE(h.State(borrower), "running");
  EXPECT_EQ(h.State(other), "running");
}

TEST(ServeColocation, ReservedNodesNeedAClusterGivenUpFront) {
  ServiceOptions o = Reserved("colocate");
  o.agent_nodes = true;
  EXPECT_NE(o.Validate().message().find("--reserved-nodes does not go with node agents"), std::string::npos);
}

}  // namespace
}  // namespace berth::server
