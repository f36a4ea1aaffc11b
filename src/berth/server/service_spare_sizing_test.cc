// Hot spares sized from failure rates in the service (`berth serve --spares
// leaf --failure-rates ...`): the expected-cost rule of faults/spares.h for
// the largest gang the service holds; no gang or low rates keep none; a
// fixed count (leaf:N) ignores the rates.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "berth/faults/spares.h"
#include "berth/server/service.h"
#include "berth/server/service_agents_test_util.h"
#include "berth/server/service_test_util.h"

namespace berth::server {
namespace {

using nlohmann::json;
using testing::AgentHarness;
using testing::WaitFor;

// Six 4-GPU tasks: a gang that a fault restarts whole at a cost of 24 h.
const char* kGang =
    R"({"name":"big","restart_cost_s":86400,"groups":[{"name":"w","count":6,"gpus":4}],"command":["sleep","600"]})";

int Spares(AgentHarness& h) {
  int n = 0;
  const json nodes = h.s().Nodes().body["nodes"];
  for (const auto& node : nodes) n += node["spare"].get<bool>();
  return n;
}

void Sized(AgentHarness& h, const std::string& rates, const std::string& spares = "leaf") {
  h.options_.repair = faults::RepairMode::kInPlace;
  h.options_.spares = faults::ParseSpareSetting(spares).value();
  h.options_.spare_rates = faults::LoadFailures(rates, cluster::Cluster{}).value().rates;
}

void RegisterEight(AgentHarness& h) {
  for (int i = 1; i <= 8; ++i)
    ASSERT_EQ(h.Register("n" + std::to_string(i), "a" + std::to_string(i), 4, "l1").code, 200);
}

// Keeps the agents alive (at a tenth of the timeout) and lets the server
// publish what it did.
bool BeatAll(AgentHarness& h) {
  for (int i = 1; i <= 8; ++i) h.Beat("n" + std::to_string(i), "a" + std::to_string(i));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return h.s().Sync();
}

// The rule's count for this leaf (8 nodes, 32 GPUs) and the gang above.
int32_t Expected(const std::string& rates) {
  const auto r = faults::LoadFailures(rates, cluster::Cluster{}).value().rates;
  return faults::DomainSpareCount(8, 32, faults::NodeLevelRate(r, 4), 24, 86400 * kUsPerSecond, 0);
}

TEST(ServiceSpareSizingTest, TheLargestGangAndTheRatesSizeTheLeafsSpares) {
  const std::string rates = "llama3*20";
  const int32_t want = Expected(rates);
  ASSERT_GE(want, 1);  // these rates justify a spare for this gang
  ASSERT_LE(want, 2);  // and it still fits beside the gang (8 - 6 nodes)
  AgentHarness h(nullptr, 1'000'000);
  Sized(h, rates);
  ASSERT_TRUE(h.Start().ok());
  RegisterEight(h);
  ASSERT_TRUE(h.s().Sync());
  EXPECT_EQ(Spares(h), 0);  // no gang held: a spare would save nothing
  const int64_t id = h.s().SubmitJob(kGang).body["id"];
  ASSERT_TRUE(WaitFor([&] { return BeatAll(h) && h.State(id) == "running" && Spares(h) == want; }))
      << h.s().Nodes().body.dump();
  // The gang ends: nothing left to protect, the spares go back to work.
  ASSERT_EQ(h.s().CancelJob(id).code, 200);
  ASSERT_TRUE(WaitFor([&] { return BeatAll(h) && Spares(h) == 0; })) << h.s().Nodes().body.dump();
}

TEST(ServiceSpareSizingTest, LowRatesKeepNoSpareAndAFixedCountIgnoresTheRates) {
  ASSERT_EQ(Expected("llama3"), 0);
  {
    AgentHarness h(nullptr, 1'000'000);
    Sized(h, "llama3");
    ASSERT_TRUE(h.Start().ok());
    RegisterEight(h);
    const int64_t id = h.s().SubmitJob(kGang).body["id"];
    ASSERT_TRUE(WaitFor([&] { return BeatAll(h) && h.State(id) == "running"; }));
    ASSERT_TRUE(h.s().Sync());
    EXPECT_EQ(Spares(h), 0);
  }
  AgentHarness h(nullptr, 1'000'000);
  Sized(h, "llama3", "leaf:1");
  ASSERT_TRUE(h.Start().ok());
  RegisterEight(h);
  ASSERT_TRUE(h.s().Sync());
  ASSERT_TRUE(WaitFor([&] { return BeatAll(h) && Spares(h) == 1; })) << h.s().Nodes().body.dump();
}

}  // namespace
}  // namespace berth::server
