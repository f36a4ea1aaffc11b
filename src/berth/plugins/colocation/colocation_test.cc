// The colocation plugin's args: reservations, modes and ratios, and errors
// that name the arg. Its placement behaviour: tests/scenarios/colocation_reclaim.scn.
#include "berth/plugins/colocation/colocation.h"

#include <gtest/gtest.h>

#include "berth/cluster/loaders.h"
#include "berth/state/cluster_state.h"
#include "berth/tenancy/ledger.h"

namespace berth::plugins {
namespace {

TEST(ColocationArgs, ReservedRangesModeAndRatios) {
  auto c = cluster::ParseClusterSpec("6x8:H100");
  ASSERT_TRUE(c.ok());
  auto cfg = ParseColocationArgs(
      {{"reserved", "0-1,4"}, {"mode", "static"}, {"overcommit", "0.5"}, {"node.node-4", "0.25"}, {"queue.be", "1"}},
      &*c);
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  EXPECT_EQ(cfg->reserved, (std::vector<uint8_t>{1, 1, 0, 0, 1, 0}));
  EXPECT_TRUE(cfg->static_partition);
  EXPECT_EQ(cfg->overcommit_permille, 500);
  EXPECT_EQ(cfg->node_permille.at("node-4"), 250);
  EXPECT_EQ(cfg->queue_permille.at("be"), 1000);
  ColocationPlugin p(*cfg);
  EXPECT_EQ(p.NodeRule(), framework::NodeRuleKind::kReservation);
  state::ClusterState st(*c);
  tenancy::Ledger ledger(tenancy::QueueTree(), *c);
  const framework::SchedulerView view{st, ledger, {}, 0, {}};
  auto ruled = [&](const job::JobSpec& j) {
    std::vector<uint8_t> out(6, 0);
    EXPECT_TRUE(p.RulesOut(view, j, out));
    return out;
  };
  job::JobSpec replica;
  replica.service = job::ServiceSpec{};
  EXPECT_EQ(ruled(replica), (std::vector<uint8_t>{0, 0, 1, 1, 0, 1}));  // only on the reservation
  job::JobSpec batch;
  EXPECT_EQ(ruled(batch), (std::vector<uint8_t>{1, 1, 0, 0, 1, 0}));  // static: batch never on the reservation
  std::vector<uint8_t> avoided(6, 0);
  EXPECT_TRUE(p.Avoids(view, replica, avoided));
  EXPECT_EQ(avoided, (std::vector<uint8_t>{0, 0, 1, 1, 0, 1}));
  EXPECT_FALSE(p.Avoids(view, batch, avoided));
  EXPECT_EQ(ColocationPlugin(ColocationConfig{}).NodeRule(), framework::NodeRuleKind::kNone);
}

TEST(ColocationArgs, ErrorsNameTheArg) {
  auto c = cluster::ParseClusterSpec("2x8:H100");
  ASSERT_TRUE(c.ok());
  auto msg = [&](framework::PluginArgs a) { return ParseColocationArgs(a, &*c).status().message(); };
  EXPECT_NE(msg({{"reserved", "0-2"}}).find("reserved: '0-2'"), std::string::npos);
  EXPECT_NE(msg({{"overcommit", "1.5"}}).find("overcommit must be a ratio"), std::string::npos);
  EXPECT_NE(msg({{"mode", "shared"}}).find("mode must be colocate or static"), std::string::npos);
  EXPECT_NE(msg({{"node.gpu-9", "0.5"}}).find("node.gpu-9: no such node"), std::string::npos);
  EXPECT_NE(msg({{"ratio", "0.5"}}).find("unknown arg 'ratio'"), std::string::npos);
  EXPECT_FALSE(ParseColocationArgs({{"reserved", "0"}}, nullptr).ok());
}

}  // namespace
}  // namespace berth::plugins
