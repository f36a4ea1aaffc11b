// PodGroup topology: the gang's and each subgroup's levels and blocks, and
// errors that name the field.
#include "berth/kubesched/group_topology.h"

#include <gtest/gtest.h>

namespace berth::kube {
namespace {

using cluster::Level;
using nlohmann::json;

TEST(PodGroupTopology, GangAndSubgroupsGoToTheJobAndItsGroups) {
  const json spec = json::parse(R"({"minMember":5,"topology":{"required":"spine","preferred":"leaf","blockTasks":2},
      "subGroups":[{"name":"workers","minMember":4,"topology":{"required":"leaf","preferred":"nvlink"}},
                   {"name":"ps","topology":{"blockTasks":1,"blockLevel":"leaf"}}]})");
  auto t = ParsePodGroupTopology(spec);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  job::JobSpec j;
  j.name = "ns/g";
  j.groups.push_back(job::TaskGroup{.name = "workers", .count = 4, .gpus = 8});
  j.groups.push_back(job::TaskGroup{.name = "ps", .count = 1, .gpus = 8});
  j.groups.push_back(job::TaskGroup{.name = "group-2", .count = 2, .gpus = 8});
  j.groups.push_back(job::TaskGroup{.name = "group-3", .count = 1, .gpus = 0});
  ApplyPodGroupTopology(*t, {"workers", "ps", "", ""}, j);
  EXPECT_EQ(j.required_level, Level::kSpine);
  EXPECT_EQ(j.preferred_level, Level::kLeaf);
  EXPECT_EQ(j.groups[0].required_level, Level::kLeaf);
  EXPECT_EQ(j.groups[0].preferred_level, Level::kNvlink);
  EXPECT_EQ(j.groups[0].block_tasks, 2);  // the gang's block size
  EXPECT_EQ(j.groups[1].block_tasks, 1);  // its own
  EXPECT_EQ(j.groups[1].block_level, Level::kLeaf);
  EXPECT_FALSE(j.groups[2].required_level.has_value());
  EXPECT_EQ(j.groups[2].block_tasks, 2);
  EXPECT_EQ(j.groups[3].block_tasks, 0);  // no GPUs: no blocks
  EXPECT_TRUE(job::ValidateJob(j).ok()) << job::ValidateJob(j).ToString();
}

TEST(PodGroupTopology, NoTopologyIsNoConstraint) {
  auto t = ParsePodGroupTopology(json::parse(R"({"minMember":2})"));
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->gang.required.has_value());
  EXPECT_TRUE(t->subgroups.empty());
  EXPECT_TRUE(ParsePodGroupTopology(json()).ok());
}

TEST(PodGroupTopology, BadValuesNameTheField) {
  const std::pair<const char*, const char*> bad[] = {
      {R"({"topology":{"required":"rack"}})", "spec.topology.required: 'rack' is not a level"},
      {R"({"topology":{"preferred":3}})", "spec.topology.preferred: expected a level name"},
      {R"({"topology":{"blockTasks":-1}})", "spec.topology.blockTasks: expected a non-negative integer"},
      {R"({"topology":{"levels":"leaf"}})", "unknown field 'spec.topology.levels'"},
      {R"({"topology":"leaf"})", "spec.topology: expected an object"},
      {R"({"subGroups":{"name":"w"}})", "spec.subGroups: expected a list"},
      {R"({"subGroups":[{"topology":{}}]})", "spec.subGroups[0].name: missing"},
      {R"({"subGroups":[{"name":"w"},{"name":"w"}]})", "spec.subGroups[1].name: 'w' given twice"},
      {R"({"subGroups":[{"name":"w","topology":{"required":"row"}}]})", "spec.subGroups[0].topology.required: 'row'"},
      {R"({"subGroups":[{"name":"w","topology":{"blockLevel":"x"}}]})", "spec.subGroups[0].topology.blockLevel"},
      {R"({"subGroups":[{"name":"w","size":2}]})", "unknown field 'spec.subGroups[0].size'"},
  };
  for (const auto& [text, what] : bad) {
    auto t = ParsePodGroupTopology(json::parse(text));
    ASSERT_FALSE(t.ok()) << text;
    EXPECT_NE(t.status().message().find(what), std::string::npos) << t.status().message();
  }
  auto annotation = ParseLevelText("annotation berth.dev/required-level", "galaxy");
  ASSERT_FALSE(annotation.ok());
  EXPECT_NE(annotation.status().message().find("annotation berth.dev/required-level: 'galaxy'"), std::string::npos);
}

}  // namespace
}  // namespace berth::kube
