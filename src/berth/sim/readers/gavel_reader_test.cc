// The Gavel reader: both layouts, field mapping, and the real trace files.
#include <gtest/gtest.h>

#include <filesystem>

#include "berth/sim/readers/reader_test_util.h"
#include "berth/sim/readers/readers.h"
#include "berth/testing/paths.h"

namespace berth::sim {
namespace {

TEST(GavelReader, MapsTenFieldLines) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(
      dir, "small.trace",
      "ResNet-50 (batch size 64)\tpython3 main.py -j 2\timage_classification/imagenet\t--num_minibatches\t1\t2931\t1\t1"
      "\t-1.000000\t0\n"
      "LM (batch size 20)\tpython3 main.py\tlanguage_modeling\t--steps\t0\t500\t4\t5\t-1\t90.25\r\n");
  auto t = ReadTrace(path, "", {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->format, "gavel");
  const auto& a = t->jobs[0];
  EXPECT_EQ(a.name, "small-1");
  EXPECT_EQ(a.tenant, "");
  EXPECT_EQ(a.job_class, "ResNet-50 (batch size 64)");
  EXPECT_EQ(a.work_steps, 2931);
  EXPECT_EQ(a.priority, 1);
  EXPECT_EQ(a.submit_time, 0);
  EXPECT_EQ(a.duration, -1);
  const auto& b = t->jobs[1];
  EXPECT_EQ(b.priority, 5);
  EXPECT_EQ(b.submit_time, 90'250'000);
  ASSERT_EQ(b.groups.size(), 1u);
  EXPECT_EQ(b.groups[0].count, 4);  // a gang of 4 single-GPU tasks
  EXPECT_EQ(b.groups[0].gpus, 1);
  EXPECT_EQ(b.groups[0].gang_min(), 4);
}

TEST(GavelReader, MapsSevenFieldLinesWithTheVcAsTenant) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "6214e9.trace",
                                     "CycleGAN\tcd %s && python3 cyclegan.py\t--n_steps\t1\t236751\t7363956.000000\t1\n"
                                     "A3C\tpython3 main.py\t--max-steps\t0\t1000\t7363960\t16\n");
  auto t = ReadTrace(path, "gavel", {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->jobs[0].tenant, "6214e9");
  EXPECT_EQ(t->jobs[0].work_steps, 236751);
  EXPECT_EQ(t->jobs[0].submit_time, 7363956 * kUsPerSecond);
  EXPECT_EQ(t->jobs[0].priority, 1);
  EXPECT_EQ(t->jobs[1].groups[0].count, 16);
}

TEST(GavelReader, RefusesMixedLayoutsAndBadValues) {
  const std::string dir = TestDir();
  const std::string ten = "A3C\tpython3 main.py\trl\t--steps\t0\t1000\t1\t1\t-1\t0";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"A3C\tpython3 main.py\t--steps\t0\t1000\t0\t1", "expected 10 tab-separated fields (physical_cluster"},
      {"A3C\tpython3 main.py\trl\t--steps\t0\t1000\t1\t1.5\t-1\t0", "field 8 (priority_weight)"},
      {"A3C\tpython3 main.py\trl\t--steps\t2\t1000\t1\t1\t-1\t0", "field 5 (needs_data_dir)"},
      {"A3C\tpython3 main.py\trl\t--steps\t0\t0\t1\t1\t-1\t0", "field 6 (total_steps)"},
      {"A3C\tpython3 main.py\trl\t--steps\t0\t1000\t1\t1\t0\t0", "field 9 (SLO)"},
      {"A3C\tpython3 main.py\trl\t--steps\t0\t1000\t1\t1\t-1\t-3", "field 10 (arrival_time)"},
      {"\tpython3 main.py\trl\t--steps\t0\t1000\t1\t1\t-1\t0", "field 1 (job_type)"},
  };
  for (const auto& [line, what] : bad) {
    SCOPED_TRACE(line);
    const std::string path = WriteFile(dir, "x.trace", ten + "\n" + line + "\n");
    auto t = ReadTrace(path, "gavel", {});
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().message().rfind(path + ":2: ", 0), 0u) << t.status().message();
    EXPECT_NE(t.status().message().find(what), std::string::npos) << t.status().message();
  }
  // A first line of neither width.
  const std::string path = WriteFile(dir, "y.trace", "job_type\tcommand\n" + ten + "\n");
  auto t = ReadTrace(path, "gavel", {});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find(path + ":1: expected 10 (physical_cluster) or 7 (msr)"), std::string::npos);
}

int64_t ReadAll(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".trace") files.push_back(e.path().string());
  int64_t jobs = 0;
  for (const auto& f : files) {
    auto t = ReadTrace(f, "", {});
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    if (t.ok()) jobs += static_cast<int64_t>(t->jobs.size());
  }
  return jobs;
}

TEST(GavelReader, RealTraces) {
  const std::string d = testing::DataDir() + "/gavel/traces";
  EXPECT_EQ(ReadAll(d + "/physical_cluster"), 15 + 14 + 14 + 8 + 96 + 20 + 100 + 20);
  EXPECT_EQ(ReadAll(d + "/msr/seed=0"), 15264);  // the README's total
  auto t = ReadTrace(d + "/physical_cluster/artifact_evaluation.trace", "", {});
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->jobs.size(), 15u);
  EXPECT_EQ(t->jobs[0].job_class, "ResNet-50 (batch size 64)");
  EXPECT_EQ(t->jobs[0].work_steps, 2931);
}

}  // namespace
}  // namespace berth::sim
