// Helpers for the trace reader tests: small files in a fresh temporary
// folder, and a field-by-field comparison of jobs.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "berth/job/job.h"

namespace berth::sim {

// A fresh folder under the test temp dir, named after the running test.
inline std::string TestDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "." + info->name();
  for (char& c : name)
    if (c == '/') c = '_';
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "berth_readers" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// Writes `text` to `dir`/`name` and returns the path.
inline std::string WriteFile(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = dir + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

inline void ExpectSameJob(const job::JobSpec& a, const job::JobSpec& b) {
  SCOPED_TRACE("job " + a.name);
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.tenant, b.tenant);
  EXPECT_EQ(a.queue, b.queue);
  EXPECT_EQ(a.priority, b.priority);
  EXPECT_EQ(a.submit_time, b.submit_time);
  EXPECT_EQ(a.duration, b.duration);
  EXPECT_EQ(a.runtime_limit, b.runtime_limit);
  EXPECT_EQ(a.job_class, b.job_class);
  EXPECT_EQ(a.dataset, b.dataset);
  EXPECT_EQ(a.dataset_mib, b.dataset_mib);
  EXPECT_EQ(a.checkpoint_interval, b.checkpoint_interval);
  EXPECT_EQ(a.work_steps, b.work_steps);
  EXPECT_EQ(a.required_level, b.required_level);
  EXPECT_EQ(a.preferred_level, b.preferred_level);
  EXPECT_EQ(a.regions, b.regions);
  EXPECT_EQ(a.avoid_regions, b.avoid_regions);
  EXPECT_EQ(a.span_regions, b.span_regions);
  EXPECT_EQ(a.deadline, b.deadline);
  EXPECT_EQ(a.budget_cents, b.budget_cents);
  EXPECT_EQ(a.launcher, b.launcher);
  EXPECT_EQ(a.command, b.command);
  EXPECT_EQ(a.env, b.env);
  ASSERT_EQ(a.groups.size(), b.groups.size());
  for (size_t i = 0; i < a.groups.size(); ++i) {
    const auto &g = a.groups[i], &h = b.groups[i];
    EXPECT_EQ(g.name, h.name);
    EXPECT_EQ(g.count, h.count);
    EXPECT_EQ(g.min_count, h.min_count);
    EXPECT_EQ(g.gpus, h.gpus);
    EXPECT_EQ(g.milli_per_gpu, h.milli_per_gpu);
    EXPECT_EQ(g.cpu_milli, h.cpu_milli);
    EXPECT_EQ(g.memory_mib, h.memory_mib);
    EXPECT_EQ(g.gpu_type_spec, h.gpu_type_spec);
    EXPECT_EQ(g.block_tasks, h.block_tasks);
    if (g.block_tasks > 0) EXPECT_EQ(g.block_level, h.block_level);  // written only with blocks
    EXPECT_EQ(g.gpu_memory_mib, h.gpu_memory_mib);
    EXPECT_EQ(g.required_level, h.required_level);
    EXPECT_EQ(g.preferred_level, h.preferred_level);
  }
}

inline void ExpectSameJobs(const std::vector<job::JobSpec>& a, const std::vector<job::JobSpec>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ExpectSameJob(a[i], b[i]);
    if (::testing::Test::HasFailure()) return;  // one job's differences are enough
  }
}

}  // namespace berth::sim
