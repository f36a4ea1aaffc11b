// Tests of the job model: derived counts, task positions, validation errors
// that name the field, GPU type resolution against a cluster.
#include "berth/job/job.h"

#include <gtest/gtest.h>

#include <functional>

#include "berth/cluster/loaders.h"

// Designated initializers below leave the other fields at their defaults on purpose.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace berth::job {
namespace {

JobSpec TwoGroups() {
  JobSpec j;
  j.name = "llm";
  j.groups.push_back({.name = "ps", .count = 2, .gpus = 0, .cpu_milli = 8000});
  j.groups.push_back({.name = "worker", .count = 3, .gpus = 8, .cpu_milli = 96000});
  return j;
}

TEST(JobSpec, DerivedCounts) {
  JobSpec j = TwoGroups();
  EXPECT_EQ(j.num_tasks(), 5);
  EXPECT_EQ(j.total_gpus(), 24);
  EXPECT_EQ(j.total_milli_gpu(), 24'000);
  JobSpec share;
  share.groups.push_back({.count = 4, .gpus = 1, .milli_per_gpu = 250});
  EXPECT_EQ(share.total_milli_gpu(), 1000);
  EXPECT_TRUE(share.groups[0].is_sharing());
  EXPECT_EQ(share.groups[0].milli_per_task(), 250);
}

TEST(JobSpec, TaskPositionsRunGroupByGroup) {
  JobSpec j = TwoGroups();
  EXPECT_EQ(j.TaskPosition(0), std::make_pair(0, 0));
  EXPECT_EQ(j.TaskPosition(1), std::make_pair(0, 1));
  EXPECT_EQ(j.TaskPosition(2), std::make_pair(1, 0));
  EXPECT_EQ(j.TaskPosition(4), std::make_pair(1, 2));
  EXPECT_EQ(j.TaskPosition(5), std::make_pair(-1, -1));
}

TEST(JobSpec, GangMinimum) {
  TaskGroup g{.count = 8};
  EXPECT_EQ(g.gang_min(), 8);  // all or nothing by default
  g.min_count = 2;
  EXPECT_EQ(g.gang_min(), 2);
}

TEST(ValidateJob, AcceptsGoodJobs) {
  EXPECT_TRUE(ValidateJob(TwoGroups()).ok());
  JobSpec share;
  share.groups.push_back({.gpus = 1, .milli_per_gpu = 1});
  EXPECT_TRUE(ValidateJob(share).ok());
}

struct BadCase {
  const char* field;  // the field the message must name
  std::function<void(JobSpec&)> spoil;
};

TEST(ValidateJob, ErrorsNameJobGroupAndField) {
  const BadCase cases[] = {
      {"groups:", [](JobSpec& j) { j.groups.clear(); }},
      {"duration:", [](JobSpec& j) { j.duration = -2; }},
      {"runtime_limit:", [](JobSpec& j) { j.runtime_limit = -5; }},
      {"checkpoint_interval:", [](JobSpec& j) { j.checkpoint_interval = -3; }},
      {"submit_time:", [](JobSpec& j) { j.submit_time = -1; }},
      {"dataset_mib:", [](JobSpec& j) { j.dataset_mib = -1; }},
      {"group 'worker': count:", [](JobSpec& j) { j.groups[1].count = 0; }},
      {"group 'worker': min_count:", [](JobSpec& j) { j.groups[1].min_count = 4; }},
      {"group 'worker': min_count:", [](JobSpec& j) { j.groups[1].min_count = 0; }},
      {"group 'worker': min_count:", [](JobSpec& j) { j.groups[1].min_count = -2; }},
      {"group 'worker': gpus:", [](JobSpec& j) { j.groups[1].gpus = -1; }},
      {"group 'worker': gpus:", [](JobSpec& j) { j.groups[1].gpus = 65; }},
      {"group 'worker': milli_per_gpu:", [](JobSpec& j) { j.groups[1].milli_per_gpu = 0; }},
      {"group 'worker': milli_per_gpu:", [](JobSpec& j) { j.groups[1].milli_per_gpu = 1001; }},
      {"group 'worker': milli_per_gpu:", [](JobSpec& j) { j.groups[1].milli_per_gpu = 500; }},  // with 8 GPUs
      {"group 'ps': cpu_milli:", [](JobSpec& j) { j.groups[0].cpu_milli = -1; }},
      {"group 'ps': memory_mib:", [](JobSpec& j) { j.groups[0].memory_mib = -1; }},
  };
  for (const BadCase& c : cases) {
    JobSpec j = TwoGroups();
    c.spoil(j);
    Status s = ValidateJob(j);
    ASSERT_FALSE(s.ok()) << c.field;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message().rfind("job 'llm'", 0), 0u) << s.message();
    EXPECT_NE(s.message().find(c.field), std::string::npos) << "expected '" << c.field << "' in: " << s.message();
  }
}

TEST(ResolveGpuTypes, AgainstACluster) {
  auto c = cluster::ParseClusterSpec("1x8:V100M16+1x8:V100M32+1x2:T4");
  ASSERT_TRUE(c.ok());
  JobSpec j;
  j.groups.push_back({.name = "a", .gpus = 1, .gpu_type_spec = "V100M16|V100M32"});
  j.groups.push_back({.name = "b", .gpus = 1, .gpu_type_spec = "A100"});
  j.groups.push_back({.name = "c", .gpus = 1});
  ResolveGpuTypes(j, *c);
  EXPECT_TRUE(j.groups[0].gpu_types.Contains(*c->FindGpuType("V100M32")));
  EXPECT_FALSE(j.groups[0].gpu_types.Accepts(*c->FindGpuType("T4")));
  EXPECT_FALSE(j.groups[0].gpu_types_unknown);
  EXPECT_TRUE(j.groups[1].gpu_types_unknown);
  EXPECT_TRUE(j.groups[2].gpu_types.empty());
  EXPECT_FALSE(j.groups[2].gpu_types_unknown);
}

// GPU memory narrows the accepted types to those whose GPUs hold it; bad
// values are errors naming the field.
TEST(GpuMemory, NarrowsTypesAndIsChecked) {
  auto c = cluster::ParseClusterSpec("1x8:V100M16+1x8:V100M32+1x2:T4");
  ASSERT_TRUE(c.ok());
  JobSpec j;
  j.name = "m";
  j.groups.push_back({.name = "a", .gpus = 1, .milli_per_gpu = 500});
  j.groups.back().gpu_memory_mib = 20000;
  j.groups.push_back({.name = "b", .gpus = 1, .gpu_type_spec = "T4"});
  j.groups.back().gpu_memory_mib = 20000;
  j.groups.push_back({.name = "c", .gpus = 1});
  j.groups.back().gpu_memory_mib = 16384;
  EXPECT_TRUE(ValidateJob(j).ok());
  EXPECT_TRUE(CheckGpuMemory(j, *c).ok());
  ResolveGpuTypes(j, *c);
  EXPECT_TRUE(j.groups[0].gpu_types.Contains(*c->FindGpuType("V100M32")));
  EXPECT_FALSE(j.groups[0].gpu_types.Accepts(*c->FindGpuType("V100M16")));
  EXPECT_FALSE(j.groups[0].gpu_types.Accepts(*c->FindGpuType("T4")));
  EXPECT_TRUE(j.groups[1].gpu_types_unknown);  // T4s have 16 GiB
  EXPECT_TRUE(j.groups[2].gpu_types.Accepts(*c->FindGpuType("T4")));
  EXPECT_FALSE(j.groups[2].gpu_types.empty());

  j.groups[2].gpu_memory_mib = 40000;
  Status big = CheckGpuMemory(j, *c);
  EXPECT_NE(big.message().find("groups[2].gpu_memory_mib: 40000 MiB is more than the largest GPU here (32768 MiB, V100M32)"),
            std::string::npos) << big.message();
  j.groups[2].gpu_memory_mib = -5;
  EXPECT_NE(ValidateJob(j).message().find("group 'c': gpu_memory_mib: negative"), std::string::npos);
  j.groups[2].gpu_memory_mib = kMaxGpuMemoryMib + 1;
  EXPECT_NE(ValidateJob(j).message().find("gpu_memory_mib"), std::string::npos);
  j.groups[2].gpu_memory_mib = 100;
  j.groups[2].gpus = 0;
  EXPECT_NE(ValidateJob(j).message().find("gpu_memory_mib: a task without GPUs"), std::string::npos);
}

}  // namespace
}  // namespace berth::job

namespace berth::job {
namespace {

TEST(JobLaunchFields, LauncherNamesRoundTripAndEnvNamesAreChecked) {
  for (Launcher l : {Launcher::kNone, Launcher::kTorch, Launcher::kTf, Launcher::kMpi})
    EXPECT_EQ(ParseLauncher(LauncherName(l)), l);
  EXPECT_FALSE(ParseLauncher("pytorch").has_value());
  EXPECT_TRUE(IsEnvName("NCCL_DEBUG"));
  EXPECT_TRUE(IsEnvName("_x1"));
  EXPECT_FALSE(IsEnvName("1X"));
  EXPECT_FALSE(IsEnvName("A-B"));
  EXPECT_FALSE(IsEnvName(""));
  JobSpec j;
  j.name = "a";
  j.groups.push_back({});
  j.env["BAD NAME"] = "1";
  EXPECT_NE(ValidateJob(j).message().find("env: 'BAD NAME'"), std::string::npos);
  j.env.clear();
  j.command = {""};
  EXPECT_NE(ValidateJob(j).message().find("command[0]"), std::string::npos);
  j.command = {"true"};
  EXPECT_TRUE(ValidateJob(j).ok());
}

}  // namespace
}  // namespace berth::job
