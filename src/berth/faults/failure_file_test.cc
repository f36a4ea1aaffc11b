// Tests of the failure file, the llama3 profile, the generator and the spare rule.
#include "berth/faults/failure_file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "berth/cluster/loaders.h"
#include "berth/faults/generator.h"
#include "berth/faults/spares.h"
#include "berth/testing/paths.h"

namespace berth::faults {
namespace {

cluster::Cluster Make(const std::string& spec) {
  auto c = cluster::ParseClusterSpec(spec);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(*c);
}

TEST(FailureFile, ParsesEveryKind) {
  const cluster::Cluster c = Make("8x8:H100/leaf=4/spine=2");
  auto spec = ParseFailureSpec(
      "# comment\n"
      "at 3h node node-7 for 6h cause host\n"
      "at 2h gpu node-3/5 for 12h cause faulty-gpu   # sorted by time\n"
      "at 4h link node-1 for 2h\n"
      "at 5h task node-1/0 cause software-bug\n"
      "at 6h leaf g0-leaf-1 for 30m cause network-switch\n"
      "at 8h maintenance g0-leaf-0 deadline 1h for 4h\n"
      "rate gpu 6.97e-6 cause faulty-gpu for exp:12h\n"
      "profile llama3 scale 2\n",
      "f.failures", c);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->events.size(), 6u);
  EXPECT_EQ(spec->events[0].kind, FaultKind::kGpu);
  EXPECT_EQ(spec->events[0].node, *c.FindNode("node-3"));
  EXPECT_EQ(spec->events[0].gpu, 5);
  EXPECT_EQ(spec->events[0].duration, 12 * 3600 * kUsPerSecond);
  EXPECT_EQ(spec->events[1].cause, "host");
  EXPECT_EQ(spec->events[2].cause, "link");
  EXPECT_EQ(spec->events[3].duration, 0);
  EXPECT_EQ(c.domain(spec->events[4].domain).name, "g0-leaf-1");
  EXPECT_TRUE(spec->events[5].planned());
  EXPECT_EQ(spec->events[5].deadline, 3600 * kUsPerSecond);
  EXPECT_EQ(spec->events[5].cause, "planned");
  EXPECT_EQ(spec->rates.size(), 1u + BuiltinProfile("llama3")->size());
  EXPECT_EQ(spec->rates[0].recovery.kind, DurationDist::Kind::kExponential);
}

TEST(FailureFile, ErrorsNameFileLineAndField) {
  const cluster::Cluster c = Make("2x8:H100");
  auto expect_error = [&](const std::string& text, const std::string& want) {
    auto s = ParseFailureSpec(text, "x.failures", c);
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_NE(s.status().message().find(want), std::string::npos) << s.status().message();
  };
  expect_error("\n\nat 1h node node-9 for 1h\n", "x.failures:3: no node 'node-9'");
  expect_error("at 1h gpu node-0/8 for 1h\n", "has no GPU '8'");
  expect_error("at 1h node node-0\n", "'for DURATION' is required");
  expect_error("at 1h meteor node-0 for 1h\n", "unknown kind 'meteor'");
  expect_error("at soon node node-0 for 1h\n", "'soon'");
  expect_error("at 1h node node-0 for 1h colour red\n", "unknown word 'colour'");
  expect_error("rate gpu -1 for 1h\n", "expected a number >= 0");
  expect_error("profile nope\n", "no failure profile 'nope'");
  expect_error("at 1h leaf nowhere for 1h\n", "no leaf domain 'nowhere'");
  expect_error("at 1h task node-0/0 for 1h\n", "task fault takes nothing down");
  EXPECT_FALSE(LoadFailures("/no/such/file", c).ok());
  EXPECT_TRUE(LoadFailures("llama3*0.5", c).ok());
}

TEST(FailureFile, ShippedExampleParses) {
  const cluster::Cluster c = Make("32x8:H100/leaf=8/spine=2");
  auto spec = LoadFailures(testing::SourceDir() + "/examples/failures/mixed.failures", c);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_FALSE(spec->events.empty());
}

// The llama3 profile reproduces the published mix on the published cluster:
// 466 interruptions (47 planned) over 16,384 GPUs x 54 days, in expectation.
TEST(Llama3Profile, ExpectedCountsMatchThePaper) {
  auto rates = BuiltinProfile("llama3");
  ASSERT_TRUE(rates.ok());
  const cluster::Cluster c = Make("2048x8:H100/leaf=32/spine=16");
  double total = 0, planned = 0, faulty_gpu = 0, hbm3 = 0, cpu = 0, network = 0;
  for (const FailureRate& r : *rates) {
    const double n = r.per_hour * static_cast<double>(FaultGenerator::Components(c, r.kind)) * 54 * 24;
    total += n;
    if (r.kind == FaultKind::kMaintenance) planned += n;
    if (r.cause == "faulty-gpu") faulty_gpu = n;
    if (r.cause == "gpu-hbm3") hbm3 = n;
    if (r.cause == "cpu") cpu = n;
    if (r.cause == "network-switch-cable") network = n;
  }
  EXPECT_NEAR(total, 466, 1e-6);
  EXPECT_NEAR(planned, 47, 1e-6);
  EXPECT_NEAR(faulty_gpu, 148, 1e-6);
  EXPECT_NEAR(hbm3, 72, 1e-6);
  EXPECT_NEAR(network, 35, 1e-6);
  EXPECT_NEAR(cpu, 2, 1e-6);
}

TEST(Generator, SeededAndNearTheRate) {
  const cluster::Cluster c = Make("2048x8:H100/leaf=32/spine=16");
  auto rates = BuiltinProfile("llama3");
  FaultGenerator a(c, *rates, 7, 0), b(c, *rates, 7, 0);
  const TimeUs horizon = TimeUs{54} * 24 * 3600 * kUsPerSecond;
  int64_t n = 0;
  std::map<FaultKind, int64_t> by_kind;
  while (true) {
    auto fa = a.Next();
    auto fb = b.Next();
    ASSERT_TRUE(fa && fb);
    ASSERT_EQ(fa->at, fb->at);
    ASSERT_EQ(fa->node, fb->node);
    ASSERT_EQ(fa->cause, fb->cause);
    if (fa->at > horizon) break;
    ++n;
    ++by_kind[fa->kind];
    ASSERT_TRUE(fa->node.valid());
    if (fa->kind == FaultKind::kGpu) ASSERT_TRUE(fa->gpu >= 0 && fa->gpu < 8);
  }
  EXPECT_NEAR(static_cast<double>(n), 466, 3 * std::sqrt(466.0));
  EXPECT_GT(by_kind[FaultKind::kGpu], by_kind[FaultKind::kNode]);
  FaultGenerator none(c, {}, 1, 0);
  EXPECT_FALSE(none.Next().has_value());
}

TEST(Spares, ExpectedCostRule) {
  // The worked example of spares.h.
  SpareInputs in{32, 8, 1.5e-4, 20, 16384, 0.5};
  EXPECT_EQ(SpareCount(in), 1);
  in.faults_per_node_hour = 1.5e-3;  // ten times the faults: more spares pay
  EXPECT_GT(SpareCount(in), 1);
  in.saved_hours = 0;  // a repair saves nothing: no spares
  EXPECT_EQ(SpareCount(in), 0);
  in = {32, 8, 1.5e-4, 20, 8, 0.5};  // a small gang: spares cost more than they save
  EXPECT_EQ(SpareCount(in), 0);
  const NodeFaultRate r = NodeLevelRate(*BuiltinProfile("llama3"), 8);
  EXPECT_GT(r.per_node_hour, 1e-4);
  EXPECT_GT(r.mean_down_hours, 1);
}

}  // namespace
}  // namespace berth::faults
