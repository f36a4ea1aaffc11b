// In-place repair with virtual nodes (`berth serve --virtual-nodes --spares
// leaf:1 --repair in-place`): a crashed node's task of a running gang moves
// to the leaf's spare (the job keeps its run, no requeue) and the gang ends
// on its new nodes; an operator's quarantine repairs the same way; without a
// replacement in the domain the gang is requeued whole.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "berth/server/service.h"
#include "berth/server/service_test_util.h"

namespace berth::server {
namespace {

using testing::ServiceHarness;
using testing::WaitFor;

ServiceOptions RepairOptions() {
  ServiceOptions o;
  o.virtual_nodes = true;
  o.heartbeat_interval = 10'000;
  o.heartbeat_timeout = 150'000;
  o.spares = *faults::ParseSpareSetting("leaf:1");
  o.repair = faults::RepairMode::kInPlace;
  o.speedup = 10;  // a 3 s job runs 0.3 s
  return o;
}

std::set<std::string> Nodes(ServiceHarness& h, int64_t id) {
  std::set<std::string> out;
  const ApiResult job = h.service().GetJob(id);
  for (const auto& p : job.body["placements"]) out.insert(p["node"].get<std::string>());
  return out;
}

TEST(ServiceVirtualRepairTest, ACrashedNodesTaskMovesToTheSpareAndTheGangFinishes) {
  ServiceHarness h("4x8:H100/leaf=4", RepairOptions());
  ASSERT_TRUE(h.Start().ok());
  // One spare of the leaf (the highest name) is kept out of the scheduler.
  ASSERT_TRUE(WaitFor([&] {
    const ApiResult nodes = h.service().Nodes();
    for (const auto& n : nodes.body["nodes"])
      if (n.value("spare", false)) return true;
    return false;
  }));
  const int64_t a = h.Submit(R"({"name":"a","duration_s":3,"groups":[{"count":2,"gpus":8}]})");
  ASSERT_TRUE(WaitFor([&] { return h.State(a) == "running"; }));
  const std::set<std::string> before = Nodes(h, a);
  ASSERT_EQ(before.size(), 2u);
  const int32_t crashed = h.cluster().FindNode(*before.begin())->value();
  h.service().virtual_nodes()->Crash(crashed);
  ASSERT_TRUE(WaitFor([&] { return h.service().GetJob(a).body.value("repairs", 0) == 1; }));
  const std::set<std::string> after = Nodes(h, a);
  EXPECT_EQ(after.count(*before.begin()), 0u);
  EXPECT_EQ(after.count(*before.rbegin()), 1u);  // the other task stayed where it was
  EXPECT_EQ(h.service().GetJob(a).body["requeues"], 0);
  ASSERT_TRUE(WaitFor([&] { return h.State(a) == "succeeded"; }));
  EXPECT_EQ(h.metrics().gang_repairs.load(), 1u);
  EXPECT_EQ(h.metrics().spares_used.load(), 1u);
  EXPECT_EQ(h.service().GetJob(a).body["requeues"], 0);
}

TEST(ServiceVirtualRepairTest, AQuarantineRepairsInPlaceAndNoRoomRequeues) {
  ServiceOptions o = RepairOptions();
  o.spares = faults::SpareSetting{};  // no spares: free nodes of the leaf only
  ServiceHarness h("3x8:H100/leaf=3", o);
  ASSERT_TRUE(h.Start().ok());
  const int64_t a = h.Submit(R"({"name":"a","duration_s":600,"groups":[{"count":2,"gpus":8}]})");
  ASSERT_TRUE(WaitFor([&] { return h.State(a) == "running"; }));
  h.Quiesce();  // its start is durable: the nodes run it (a start not yet durable is requeued, not repaired)
  const std::string node = *Nodes(h, a).begin();
  ASSERT_EQ(h.service().Quarantine(node, "test").code, 200);
  ASSERT_TRUE(WaitFor([&] { return h.service().GetJob(a).body.value("repairs", 0) == 1; }));
  EXPECT_EQ(Nodes(h, a).count(node), 0u);
  EXPECT_EQ(h.State(a), "running");
  EXPECT_EQ(h.service().GetJob(a).body["requeues"], 0);
  // The next quarantine finds no free node in the leaf: the gang is requeued whole.
  const std::string next = *Nodes(h, a).begin();
  ASSERT_EQ(h.service().Quarantine(next, "test").code, 200);
  ASSERT_TRUE(WaitFor([&] { return h.service().GetJob(a).body["requeues"] == 1; }));
  EXPECT_EQ(h.metrics().repair_fallbacks.load(), 1u);
}

}  // namespace
}  // namespace berth::server
