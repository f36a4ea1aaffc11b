// The service's job documents and the simulator's native trace format are one
// format: a native line parses as an API body to the same job (the API
// refusing only its arrival time, submit_time_s), and API
// documents written as JSON lines read back through the native reader.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "berth/server/job_json.h"
#include "berth/server/workflow_json.h"
#include "berth/sim/readers/native_writer.h"
#include "berth/sim/readers/readers.h"

namespace berth {
namespace {

std::vector<job::JobSpec> Jobs() {
  std::vector<job::JobSpec> jobs;
  job::JobSpec a;
  a.name = "a";
  a.groups.push_back({.count = 1, .gpus = 1});
  jobs.push_back(a);
  job::JobSpec b;
  b.name = "llm";
  b.tenant = "ml";
  b.queue = "research";
  b.priority = -3;
  b.submit_time = SecondsToUs(12.5);
  b.duration = SecondsToUs(3600);
  b.runtime_limit = SecondsToUs(7200);
  b.job_class = "gpt";
  b.dataset = "web";
  b.dataset_mib = 1024;
  b.checkpoint_interval = SecondsToUs(600);
  b.work_steps = 1000;
  b.required_level = cluster::Level::kSpine;
  b.preferred_level = cluster::Level::kLeaf;
  b.launcher = job::Launcher::kTorch;
  b.command = {"/usr/bin/python3", "-c", "import torch.distributed as dist\ndist.init_process_group('gloo')"};
  b.env = {{"NCCL_DEBUG", "INFO"}, {"OMP_NUM_THREADS", "4"}};
  b.groups.push_back({.name = "worker", .count = 4, .min_count = 2, .gpus = 8, .cpu_milli = 64000,
                      .memory_mib = 262144, .gpu_type_spec = "H100|A100", .block_tasks = 2,
                      .block_level = cluster::Level::kNvlink});
  b.groups.push_back({.name = "ps", .count = 1, .gpus = 1, .milli_per_gpu = 250, .cpu_milli = 500});
  jobs.push_back(b);
  return jobs;
}

TEST(NativeFormatTest, NativeLinesAreApiBodies) {
  for (const auto& j : Jobs()) {
    auto line = sim::NativeJobLine(j);
    ASSERT_TRUE(line.ok());
    // The API refuses arrival times (the service stamps its own); the rest
    // of a line is an API body.
    auto api = server::ParseJobBody(*line);
    if (line->find("\"submit_time_s\"") != std::string::npos) {
      ASSERT_FALSE(api.ok());
      EXPECT_NE(api.status().message().find("submit_time_s: not accepted by the API"), std::string::npos);
    } else {
      ASSERT_TRUE(api.ok()) << *line << ": " << api.status().ToString();
    }
    auto sub = server::ParseJobBody(*line, server::JobSource::kStored);
    ASSERT_TRUE(sub.ok()) << *line << ": " << sub.status().ToString();
    EXPECT_EQ(server::JobToJson(sub->spec), server::JobToJson(j)) << *line;
  }
}

TEST(NativeFormatTest, WorkflowLinesAreApiBodies) {
  const std::string line =
      R"({"name":"p","tenant":"ml","stages":[{"name":"a","artifact":"/out/a","groups":[{"gpus":1}]},)"
      R"({"name":"b","depends_on":["a"],"after":"any","retries":2,"launcher":"mpi","groups":[{"count":2,"gpus":8}]}]})";
  const auto path = std::filesystem::temp_directory_path() / ("berth_wf_" + std::to_string(::getpid()) + ".jsonl");
  std::ofstream(path) << line << "\n";
  auto trace = sim::ReadNative(path.string(), {});
  std::filesystem::remove(path);
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  ASSERT_EQ(trace->workflows.size(), 1u);
  auto api = server::ParseWorkflowJson(nlohmann::json::parse(line));
  ASSERT_TRUE(api.ok()) << api.status().ToString();
  EXPECT_EQ(server::WorkflowToJson(api->spec), server::WorkflowToJson(trace->workflows[0]));
  EXPECT_EQ(api->spec.stages[1].after, workload::StageCondition::kAny);
}

TEST(NativeFormatTest, ApiDocumentsReadAsNativeLines) {
  const auto path = std::filesystem::temp_directory_path() / ("berth_native_" + std::to_string(::getpid()) + ".jsonl");
  {
    std::ofstream out(path);
    for (const auto& j : Jobs()) out << server::JobToJson(j).dump() << "\n";
  }
  auto trace = sim::ReadNative(path.string(), {});
  std::filesystem::remove(path);
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  const auto jobs = Jobs();
  ASSERT_EQ(trace->jobs.size(), jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i)
    EXPECT_EQ(server::JobToJson(trace->jobs[i]), server::JobToJson(jobs[i]));
}

}  // namespace
}  // namespace berth
