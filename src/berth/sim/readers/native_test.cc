// The native JSON-lines format: every key, strict checks, and round trips
// (read a trace -> write native -> read native gives the same jobs).
#include <gtest/gtest.h>

#include <fstream>

#include "berth/sim/readers/native_writer.h"
#include "berth/sim/readers/reader_test_util.h"
#include "berth/sim/readers/readers.h"
#include "berth/testing/paths.h"

namespace berth::sim {
namespace {

TEST(NativeReader, ReadsEveryKey) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(
      dir, "a.jsonl",
      R"({"name":"train","tenant":"vision","queue":"vision/prod","priority":7,"submit_time_s":1.5,)"
      R"("duration_s":3600,"runtime_limit_s":7200,"job_class":"resnet50","dataset":"imagenet","dataset_mib":150000,)"
      R"("checkpoint_interval_s":600,"restart_cost_s":90,"work_steps":5000,"required_level":"spine","preferred_level":"rail",)"
      R"("groups":[{"name":"ps","count":1,"cpu_milli":4000,)"
      R"("memory_mib":8192},{"name":"worker","count":4,"min_count":2,"gpus":8,"gpu_types":["H100","A100"],)"
      R"("block_tasks":2,"block_level":"leaf"},)"
      R"({"name":"share","gpus":1,"milli_per_gpu":250}]})"
      "\n"
      R"({"name":"min","groups":[{}]})"
      "\n");
  auto t = ReadTrace(path, "", {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 2u);
  const auto& j = t->jobs[0];
  EXPECT_EQ(j.name, "train");
  EXPECT_EQ(j.tenant, "vision");
  EXPECT_EQ(j.queue, "vision/prod");
  EXPECT_EQ(j.priority, 7);
  EXPECT_EQ(j.submit_time, 1'500'000);
  EXPECT_EQ(j.duration, 3600 * kUsPerSecond);
  EXPECT_EQ(j.runtime_limit, 7200 * kUsPerSecond);
  EXPECT_EQ(j.job_class, "resnet50");
  EXPECT_EQ(j.dataset, "imagenet");
  EXPECT_EQ(j.dataset_mib, 150000);
  EXPECT_EQ(j.checkpoint_interval, 600 * kUsPerSecond);
  EXPECT_EQ(j.restart_cost, 90 * kUsPerSecond);
  EXPECT_EQ(t->jobs[1].restart_cost, -1);
  EXPECT_EQ(j.work_steps, 5000);
  ASSERT_EQ(j.groups.size(), 3u);
  EXPECT_EQ(j.groups[0].name, "ps");
  EXPECT_EQ(j.groups[0].gpus, 0);
  EXPECT_EQ(j.groups[0].cpu_milli, 4000);
  EXPECT_EQ(j.groups[0].memory_mib, 8192);
  EXPECT_EQ(j.groups[1].count, 4);
  EXPECT_EQ(j.groups[1].gang_min(), 2);
  EXPECT_EQ(j.groups[1].gpu_type_spec, "H100|A100");
  EXPECT_EQ(j.required_level, cluster::Level::kSpine);
  EXPECT_EQ(j.preferred_level, cluster::Level::kLeaf);  // "rail" is an alias
  EXPECT_EQ(j.groups[1].block_tasks, 2);
  EXPECT_EQ(j.groups[1].block_level, cluster::Level::kLeaf);
  EXPECT_EQ(j.groups[0].block_tasks, 0);
  EXPECT_EQ(j.groups[2].milli_per_gpu, 250);
  // Defaults are JobSpec's.
  const auto& m = t->jobs[1];
  const job::JobSpec d;
  EXPECT_EQ(m.submit_time, d.submit_time);
  EXPECT_EQ(m.duration, d.duration);
  EXPECT_EQ(m.runtime_limit, d.runtime_limit);
  EXPECT_EQ(m.checkpoint_interval, d.checkpoint_interval);
  EXPECT_EQ(m.restart_cost, d.restart_cost);
  EXPECT_EQ(m.work_steps, -1);
  EXPECT_FALSE(m.required_level.has_value());
  EXPECT_FALSE(m.preferred_level.has_value());
  EXPECT_EQ(m.groups[0].name, "main");
  EXPECT_EQ(m.groups[0].count, 1);
  EXPECT_EQ(m.groups[0].min_count, -1);
}

TEST(NativeReader, StrictChecksNameTheLineAndTheKey) {
  const std::string dir = TestDir();
  const std::string good = R"({"name":"ok","groups":[{"gpus":1}]})";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"name":"x","groups":[{"gpus":1}],"priorty":3})", "unknown key 'priorty'"},
      {R"({"name":"x","groups":[{"gpu":1}]})", "unknown key 'groups[0].gpu'"},
      {R"({"groups":[{"gpus":1}]})", "missing key 'name'"},
      {R"({"name":"x"})", "missing key 'groups'"},
      {R"({"name":"x","groups":[]})", "groups: expected a non-empty array"},
      {R"({"name":"","groups":[{}]})", "name: empty"},
      {R"({"name":3,"groups":[{}]})", "name: expected a string, found 3"},
      {R"({"name":"x","priority":1.5,"groups":[{}]})", "priority: expected an integer, found 1.5"},
      {R"({"name":"x","submit_time_s":-1,"groups":[{}]})", "submit_time_s: -1 s is out of range"},
      {R"({"name":"x","submit_time_s":"0","groups":[{}]})", "submit_time_s: expected a number"},
      {R"({"name":"x","runtime_limit_s":0,"groups":[{}]})", "runtime_limit_s: 0 s is out of range"},
      {R"({"name":"x","duration_s":null,"groups":[{}]})", "duration_s: expected a number"},
      {R"({"name":"x","work_steps":0,"groups":[{}]})", "work_steps: 0 is outside"},
      {R"({"name":"x","groups":[{"count":2,"min_count":3}]})", "groups[0].min_count: 3 is above count 2"},
      {R"({"name":"x","groups":[{"count":0}]})", "groups[0].count: 0 is outside"},
      {R"({"name":"x","groups":[{"count":99999999999}]})", "groups[0].count: 99999999999 is outside"},
      {R"({"name":"x","groups":[{"gpus":1,"milli_per_gpu":1001}]})", "groups[0].milli_per_gpu"},
      {R"({"name":"x","groups":[{"gpus":2,"milli_per_gpu":500}]})", "fractional GPU share"},
      {R"({"name":"x","groups":[{"gpus":1,"gpu_types":"A100"}]})", "groups[0].gpu_types: expected an array"},
      {R"({"name":"x","groups":[{"gpus":1,"gpu_types":["A100|H100"]}]})", "is not a GPU type name"},
      {R"({"name":"x","groups":[{"cpu_milli":18446744073709551615}]})", "is too large"},
      {R"([{"name":"x","groups":[{}]}])", "expected one JSON object per line"},
      {R"({"name":"x","groups":[{}]} {"name":"y","groups":[{}]})", "not valid JSON"},
      {R"({"name":"x",)", "not valid JSON"},
      {R"({"name":"ok","groups":[{}]})", "name: 'ok' already on line 1"},
      {R"({"name":"x","required_level":"rack","groups":[{}]})", "required_level: \"rack\" is not a level"},
      {R"({"name":"x","preferred_level":2,"groups":[{}]})", "preferred_level: expected a level name"},
      {R"({"name":"x","groups":[{"count":4,"gpus":8,"block_tasks":-2}]})", "groups[0].block_tasks: -2 is outside"},
      {R"({"name":"x","groups":[{"count":3,"gpus":8,"block_tasks":2}]})", "block_tasks: count 3 is not a multiple"},
      {R"({"name":"x","groups":[{"count":2,"gpus":8,"block_tasks":2,"block_level":"row"}]})",
       "groups[0].block_level"},
      {R"({"name":"x","groups":[{"gpus":1,"gpu_memory_mib":-1}]})", "groups[0].gpu_memory_mib: -1 is outside"},
      {R"({"name":"x","groups":[{"gpus":1,"gpu_memory_mib":1.5}]})", "groups[0].gpu_memory_mib: expected an integer"},
      {R"({"name":"x","groups":[{"gpus":1,"gpu_memory_mib":"8Gi"}]})", "groups[0].gpu_memory_mib: expected an integer"},
      {R"({"name":"x","groups":[{"gpus":1,"gpu_memory_mib":99999999}]})", "groups[0].gpu_memory_mib: 99999999 is outside"},
      {R"({"name":"x","groups":[{"gpus":0,"gpu_memory_mib":100}]})", "gpu_memory_mib: a task without GPUs"},
      {R"({"name":"x","groups":[{"gpus":8,"required_level":"rack"}]})", "groups[0].required_level: \"rack\" is not a level"},
      {R"({"name":"x","groups":[{"gpus":8,"preferred_level":1}]})", "groups[0].preferred_level: expected a level name"},
      {R"({"name":"x","required_level":"leaf","groups":[{"gpus":8,"required_level":"spine"}]})",
       "required_level: spine is wider than the job's required_level leaf"},
      {R"({"name":"x","groups":[{"gpus":1,"milli_per_gpu":500,"required_level":"leaf"}]})",
       "required_level: a group's topology level needs whole-GPU tasks"},
      {R"({"name":"x","block_tasks":-1,"groups":[{"gpus":8}]})", "block_tasks: -1 is outside"},
      {R"({"name":"x","block_tasks":2,"groups":[{"count":3,"gpus":8}]})", "block_tasks: count 3 is not a multiple"},
      {R"({"name":"x","block_level":"row","groups":[{"gpus":8}]})", "block_level: \"row\" is not a level"},
  };
  for (const auto& [line, what] : bad) {
    SCOPED_TRACE(line);
    const std::string path = WriteFile(dir, "x.jsonl", good + "\n" + line + "\n");
    auto t = ReadTrace(path, "native", {});
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().message().rfind(path + ":2: ", 0), 0u) << t.status().message();
    EXPECT_NE(t.status().message().find(what), std::string::npos) << t.status().message();
  }
}

// Job-level blocks are the default of every whole-GPU group without its own;
// a group's levels are its own (and written per group).
TEST(NativeReader, JobLevelBlocksAndGroupLevels) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(
      dir, "t.jsonl",
      R"({"name":"x","block_tasks":2,"block_level":"leaf","preferred_level":"leaf","groups":[)"
      R"({"name":"w","count":4,"gpus":8,"required_level":"spine"},{"name":"v","count":3,"gpus":8,"block_tasks":0},)"
      R"({"name":"s","count":1,"gpus":1,"milli_per_gpu":250}]})"
      "\n");
  auto t = ReadTrace(path, "native", {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const job::JobSpec& j = t->jobs.at(0);
  EXPECT_EQ(j.groups[0].block_tasks, 2);
  EXPECT_EQ(j.groups[0].block_level, cluster::Level::kLeaf);
  EXPECT_EQ(j.groups[0].required_level, cluster::Level::kSpine);
  EXPECT_FALSE(j.groups[0].preferred_level.has_value());  // the job's preference stays the job's
  EXPECT_EQ(j.groups[1].block_tasks, 0);                   // its own value overrides
  EXPECT_EQ(j.groups[2].block_tasks, 0);                   // a shared GPU takes no blocks
  auto line = NativeJobLine(j);
  ASSERT_TRUE(line.ok());
  EXPECT_NE(line->find(R"("block_tasks":2,"block_level":"leaf","required_level":"spine")"), std::string::npos) << *line;
}

TEST(NativeWriter, LeavesOutDefaultsAndKeepsFractionsExact) {
  job::JobSpec j;
  j.name = "a";
  j.submit_time = 1'234'567;
  j.groups.push_back({});
  auto line = NativeJobLine(j);
  ASSERT_TRUE(line.ok());
  EXPECT_EQ(*line, R"({"name":"a","submit_time_s":1.234567,"groups":[{"name":"main","count":1,"gpus":0}]})");
  j.name = "\xff";
  EXPECT_FALSE(NativeJobLine(j).ok());  // not UTF-8: an error, not a throw
}

// Reads `path` as `format`, writes it as native, reads that back: same jobs.
void ExpectRoundTrip(const std::string& path, const std::string& format, const ReadOptions& opts = {}) {
  SCOPED_TRACE(path);
  auto a = ReadTrace(path, format, opts);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  const std::string out = TestDir() + "/out.jsonl";
  ASSERT_TRUE(WriteNativeTrace(a->jobs, out).ok());
  auto b = ReadTrace(out, "", {});
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->format, "native");
  ExpectSameJobs(a->jobs, b->jobs);
}

TEST(NativeRoundTrip, Philly) { ExpectRoundTrip(testing::DataDir() + "/pollux-philly/philly.csv", "philly"); }

TEST(NativeRoundTrip, PhillyWindow) {
  ReadOptions o;
  o.window_from = "2017-10-01";
  o.window_to = "2017-10-07";
  ExpectRoundTrip(testing::DataDir() + "/pollux-philly/philly.csv", "philly", o);
}

TEST(NativeRoundTrip, OtherFormats) {
  const std::string d = testing::DataDir();
  ExpectRoundTrip(d + "/gavel/traces/physical_cluster/artifact_evaluation.trace", "gavel");
  ExpectRoundTrip(d + "/gavel/traces/msr/seed=0/6214e9.trace", "gavel");
  ExpectRoundTrip(d + "/tiresias/60_job.csv", "tiresias");
  ExpectRoundTrip(d + "/alibaba-gpu-v2023/openb_pod_list_gpuspec20.csv", "openb");
  ExpectRoundTrip(d + "/alibaba-gpu-v2023/openb_pod_list_gpushare40.csv", "openb");
}

TEST(NativeReader, FederationKeys) {
  const std::string path = TestDir() + "/fed.jsonl";
  {
    std::ofstream out(path);
    out << R"({"name":"a","regions":["east"],"avoid_regions":["west"],"span_regions":true,"deadline_s":600,)"
        << R"("budget_usd":12.5,"groups":[{"count":1,"gpus":8}]})" << "\n";
    out << R"({"name":"b","regions":"east","groups":[{"count":1,"gpus":8}]})" << "\n";
    out << R"({"name":"c","regions":["x","x"],"groups":[{"count":1,"gpus":8}]})" << "\n";
    out << R"({"name":"d","deadline_s":0,"groups":[{"count":1,"gpus":8}]})" << "\n";
    out << R"({"name":"e","budget_usd":-1,"groups":[{"count":1,"gpus":8}]})" << "\n";
    out << R"({"name":"f","regions":["x"],"avoid_regions":["x"],"groups":[{"count":1,"gpus":8}]})" << "\n";
  }
  ReadOptions skip;
  skip.skip_bad_lines = true;
  auto t = ReadTrace(path, "", skip);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 1u);
  const job::JobSpec& j = t->jobs[0];
  EXPECT_EQ(j.regions, std::vector<std::string>{"east"});
  EXPECT_EQ(j.avoid_regions, std::vector<std::string>{"west"});
  EXPECT_TRUE(j.span_regions);
  EXPECT_EQ(j.deadline, 600 * kUsPerSecond);
  EXPECT_EQ(j.budget_cents, 1250);
  EXPECT_EQ(t->report.skipped, 5);
  auto strict = ReadTrace(path, "", {});
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.status().message().find(":2: regions: expected an array"), std::string::npos)
      << strict.status().message();
}

TEST(NativeReader, LaunchFields) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(
      dir, "l.jsonl",
      R"({"name":"a","launcher":"mpi","command":["mpirun","hostname"],"env":{"X":"1"},"groups":[{}]})"
      "\n"
      R"({"name":"b","groups":[{}]})"
      "\n");
  auto t = ReadTrace(path, "", {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->jobs[0].launcher, job::Launcher::kMpi);
  EXPECT_EQ(t->jobs[0].command, (std::vector<std::string>{"mpirun", "hostname"}));
  EXPECT_EQ(t->jobs[0].env.at("X"), "1");
  EXPECT_EQ(t->jobs[1].launcher, job::Launcher::kNone);  // the default
  EXPECT_TRUE(t->jobs[1].command.empty());
  const std::pair<const char*, const char*> bad[] = {
      {R"({"name":"a","launcher":"jax","groups":[{}]})", ":1: launcher"},
      {R"({"name":"a","command":"ls","groups":[{}]})", ":1: command"},
      {R"({"name":"a","command":[1],"groups":[{}]})", ":1: command[0]"},
      {R"({"name":"a","command":[""],"groups":[{}]})", "command[0]"},
      {R"({"name":"a","env":{"1X":"v"},"groups":[{}]})", "env"},
      {R"({"name":"a","env":{"X":3},"groups":[{}]})", ":1: env.X"},
  };
  for (const auto& [line, mentions] : bad) {
    const std::string p2 = WriteFile(dir, "bad.jsonl", std::string(line) + "\n");
    auto r = ReadTrace(p2, "", {});
    ASSERT_FALSE(r.ok()) << line;
    EXPECT_NE(r.status().message().find(mentions), std::string::npos) << r.status().message();
  }
}

TEST(NativeRoundTrip, EveryJobSpecField) {
  job::JobSpec j;
  j.id = JobId(0);
  j.name = "all \"quoted\" \u00e9";
  j.tenant = "t";
  j.queue = "q";
  j.priority = -3;
  j.submit_time = 7;
  j.duration = 123'456'789;
  j.runtime_limit = 1;
  j.job_class = "c";
  j.dataset = "d";
  j.dataset_mib = 9;
  j.checkpoint_interval = 60 * kUsPerSecond;
  j.restart_cost = 30 * kUsPerSecond;
  j.work_steps = 11;
  j.regions = {"east", "west"};
  j.avoid_regions = {"north"};
  j.span_regions = true;
  j.deadline = 3600 * kUsPerSecond;
  j.budget_cents = 12345;
  j.launcher = job::Launcher::kTorch;
  j.command = {"/usr/bin/python3", "-c", "import os\nprint(os.environ['RANK'])", ""};
  j.env = {{"A", "1"}, {"NCCL_DEBUG", "INFO"}, {"Z_", ""}};
  job::TaskGroup g;
  g.name = "g";
  g.count = 3;
  g.min_count = 2;
  g.gpus = 1;
  g.milli_per_gpu = 300;
  g.cpu_milli = 5;
  g.memory_mib = 6;
  g.gpu_type_spec = "A|B";
  j.groups.push_back(g);
  j.required_level = cluster::Level::kCluster;
  j.preferred_level = cluster::Level::kNvlink;
  job::TaskGroup blocks;
  blocks.name = "tp";
  blocks.count = 4;
  blocks.gpus = 8;
  blocks.block_tasks = 2;
  blocks.block_level = cluster::Level::kLeaf;
  blocks.required_level = cluster::Level::kSpine;
  blocks.preferred_level = cluster::Level::kLeaf;
  j.groups.push_back(blocks);
  job::TaskGroup share;  // a share with its GPU memory
  share.name = "share";
  share.gpus = 1;
  share.milli_per_gpu = 300;
  share.gpu_memory_mib = 4096;
  j.groups.push_back(share);
  const std::string path = TestDir() + "/all.jsonl";
  ASSERT_TRUE(WriteNativeTrace({j}, path).ok());
  auto t = ReadTrace(path, "", {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ExpectSameJobs({j}, t->jobs);
}

// GPU memory per task: read, written only when set, and read back the same.
TEST(NativeRoundTrip, GpuMemoryPerGroup) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(
      dir, "mem.jsonl",
      R"({"name":"m","groups":[{"name":"s","gpus":1,"milli_per_gpu":250,"gpu_memory_mib":6144},{"name":"w","gpus":2}]})"
      "\n");
  auto t = ReadTrace(path, "native", {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 1u);
  EXPECT_EQ(t->jobs[0].groups[0].gpu_memory_mib, 6144);
  EXPECT_EQ(t->jobs[0].groups[1].gpu_memory_mib, 0);
  auto line = NativeJobLine(t->jobs[0]);
  ASSERT_TRUE(line.ok());
  EXPECT_NE(line->find(R"("gpu_memory_mib":6144)"), std::string::npos) << *line;
  EXPECT_EQ(line->find("gpu_memory_mib", line->find(R"("name":"w")")), std::string::npos) << *line;
  auto back = ReadTrace(WriteFile(dir, "mem2.jsonl", *line + "\n"), "native", {});
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->jobs[0].groups[0].gpu_memory_mib, 6144);
  EXPECT_EQ(back->jobs[0].groups[1].gpu_memory_mib, 0);
}


}  // namespace
}  // namespace berth::sim
