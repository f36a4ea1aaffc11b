// The placement-dependent runtime stretch.
#include "berth/sim/runtime_model.h"

#include <gtest/gtest.h>

#include "berth/cluster/loaders.h"

namespace berth::sim {
namespace {

framework::TaskPlacement On(const cluster::Cluster& c, const char* node, int32_t task) {
  framework::TaskPlacement p;
  p.task = TaskKey{JobId(1), task};
  p.alloc.node = *c.FindNode(node);
  return p;
}

TEST(RuntimeModel, StretchFollowsTheSlowestLevelSpanned) {
  auto c = cluster::ParseClusterSpec("8x8:H100/leaf=2/spine=2");  // leaves of 2 nodes, spines of 2 leaves
  ASSERT_TRUE(c.ok());
  RuntimeModel m;
  m.comm_fraction = 0.2;
  std::vector<framework::TaskPlacement> one_node = {On(*c, "node-0", 0), On(*c, "node-0", 1)};
  std::vector<framework::TaskPlacement> leaf = {On(*c, "node-0", 0), On(*c, "node-1", 1)};
  std::vector<framework::TaskPlacement> spine = {On(*c, "node-0", 0), On(*c, "node-2", 1)};
  std::vector<framework::TaskPlacement> cluster = {On(*c, "node-0", 0), On(*c, "node-1", 1), On(*c, "node-7", 2)};
  EXPECT_FALSE(RuntimeModel::SpannedLevel(*c, one_node).has_value());
  EXPECT_EQ(*RuntimeModel::SpannedLevel(*c, leaf), cluster::Level::kLeaf);
  EXPECT_EQ(*RuntimeModel::SpannedLevel(*c, spine), cluster::Level::kSpine);
  EXPECT_EQ(*RuntimeModel::SpannedLevel(*c, cluster), cluster::Level::kCluster);
  EXPECT_DOUBLE_EQ(m.Stretch(*c, one_node), 1.0);
  EXPECT_DOUBLE_EQ(m.Stretch(*c, leaf), 1.0 + 0.2 * (3600.0 / 400 - 1));
  EXPECT_DOUBLE_EQ(m.Stretch(*c, spine), 1.0 + 0.2 * (3600.0 / 200 - 1));
  EXPECT_DOUBLE_EQ(m.Stretch(*c, cluster), 1.0 + 0.2 * (3600.0 / 100 - 1));
  m.comm_fraction = 0;
  EXPECT_DOUBLE_EQ(m.Stretch(*c, cluster), 1.0);  // off by default
}

TEST(RuntimeModel, RejectsBadFractions) {
  RuntimeModel m;
  m.comm_fraction = 1.5;
  EXPECT_FALSE(m.Validate().ok());
  m.comm_fraction = 0.3;
  EXPECT_TRUE(m.Validate().ok());
}

}  // namespace
}  // namespace berth::sim
