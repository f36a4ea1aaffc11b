// The Tiresias reader: field mapping, optional columns, and 60_job.csv.
#include <gtest/gtest.h>

#include "berth/sim/readers/reader_test_util.h"
#include "berth/sim/readers/readers.h"
#include "berth/testing/paths.h"

namespace berth::sim {
namespace {

TEST(TiresiasReader, RealTrace) {
  auto t = ReadTrace(testing::DataDir() + "/tiresias/60_job.csv", "", {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 60u);
  EXPECT_EQ(t->format, "tiresias");
  // 1,8,30,133,vgg11,147,23
  const auto& j = t->jobs[1];
  EXPECT_EQ(j.name, "1");
  EXPECT_EQ(j.submit_time, 30 * kUsPerSecond);
  EXPECT_EQ(j.duration, 147 * kUsPerSecond);
  EXPECT_EQ(j.job_class, "vgg11");
  EXPECT_EQ(j.work_steps, 133);
  ASSERT_EQ(j.groups.size(), 1u);
  EXPECT_EQ(j.groups[0].count, 8);
  EXPECT_EQ(j.groups[0].gpus, 1);
  int by_gpus[9] = {};
  for (const auto& x : t->jobs) ++by_gpus[x.groups[0].count];
  EXPECT_EQ(by_gpus[1], 30);
  EXPECT_EQ(by_gpus[2], 10);
  EXPECT_EQ(by_gpus[4], 10);
  EXPECT_EQ(by_gpus[8], 10);
}

TEST(TiresiasReader, OptionalColumnsAndDuplicates) {
  const std::string dir = TestDir();
  auto t = ReadTrace(WriteFile(dir, "a_job.csv", "num_gpu,job_id,duration,submit_time\n2,x,10.5,3\n"), "", {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->jobs[0].work_steps, -1);
  EXPECT_EQ(t->jobs[0].duration, 10'500'000);
  EXPECT_EQ(t->jobs[0].groups[0].count, 2);

  const std::string missing = WriteFile(dir, "b_job.csv", "job_id,num_gpu,submit_time\n0,1,0\n");
  t = ReadTrace(missing, "", {});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message().rfind(missing + ":1: missing column 'duration'", 0), 0u) << t.status().message();

  const std::string dup = WriteFile(dir, "c_job.csv", "job_id,num_gpu,submit_time,duration\n7,1,0,5\n7,1,1,5\n");
  t = ReadTrace(dup, "", {});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), dup + ":3: job_id: '7' already on line 2");
}

}  // namespace
}  // namespace berth::sim
