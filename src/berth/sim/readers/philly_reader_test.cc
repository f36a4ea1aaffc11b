// The Philly reader: mapping of a line to a job, gang shapes, the time
// origin, the window and VC filters, and the real Pollux/Sia philly.csv.
#include <gtest/gtest.h>

#include "berth/sim/readers/reader_test_util.h"
#include "berth/sim/readers/reader_util.h"
#include "berth/sim/readers/readers.h"
#include "berth/testing/paths.h"

namespace berth::sim {
namespace {

const char kHeader[] = "timestamp,duration,num_gpus,gpu_time,cluster\n";

// The 11 VCs of helios/philly_vc.csv.
const std::vector<std::string> kHeliosVcs = {"6214e9", "7f04ca", "11cb48", "b436b2", "ee9e8c", "e13805",
                                             "6c71a0", "2869ce", "ed69ec", "103959", "0e4a51"};

TEST(PhillyReader, MapsLinesToJobs) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "philly.csv",
                                     std::string(kHeader) +
                                         "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
                                         "2017-10-09 06:13:03,2951.5,16,47224.0,6214e9\n"
                                         "2017-10-09 06:00:00,10,12,120,6214e9\n"
                                         "2017-10-09 06:00:01,10,128,1280,b436b2\n"
                                         "2017-10-09 06:00:02,10,8,80,b436b2\n"
                                         "\n");
  auto t = ReadTrace(path, "", {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 5u);
  EXPECT_EQ(t->format, "philly");
  EXPECT_EQ(t->time_origin, "2017-10-09 06:00:00");  // the earliest timestamp, not the first line's
  const auto& a = t->jobs[0];
  EXPECT_EQ(a.name, "philly-2");
  EXPECT_EQ(a.tenant, "11cb48");
  EXPECT_EQ(a.submit_time, (3600 + 115) * kUsPerSecond);
  EXPECT_EQ(a.duration, 66 * kUsPerSecond);
  ASSERT_EQ(a.groups.size(), 1u);
  EXPECT_EQ(a.groups[0].count, 1);
  EXPECT_EQ(a.groups[0].gpus, 1);
  EXPECT_EQ(a.groups[0].gang_min(), 1);
  const auto& b = t->jobs[1];
  EXPECT_EQ(b.duration, 2951'500'000);
  EXPECT_EQ(b.groups[0].count, 2);  // 16 GPUs = 2 x 8
  EXPECT_EQ(b.groups[0].gpus, 8);
  EXPECT_EQ(b.groups[0].gang_min(), 2);
  EXPECT_EQ(t->jobs[2].submit_time, 0);
  EXPECT_EQ(t->jobs[2].groups[0].count, 2);  // 12 GPUs = 2 x 6
  EXPECT_EQ(t->jobs[2].groups[0].gpus, 6);
  EXPECT_EQ(t->jobs[3].groups[0].count, 16);  // 128 GPUs = 16 x 8
  EXPECT_EQ(t->jobs[3].groups[0].gpus, 8);
  EXPECT_EQ(t->jobs[4].groups[0].count, 1);  // 8 GPUs: one task
  EXPECT_EQ(t->jobs[4].groups[0].gpus, 8);
  for (const auto& j : t->jobs) EXPECT_TRUE(job::ValidateJob(j).ok());
}

TEST(PhillyReader, RefusesBadTimestampsAndInconsistentGpuTime) {
  const std::string dir = TestDir();
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"2017-02-30 00:00:00,60,1,60,vc", "timestamp"},    // no such date
      {"2017-10-01 24:00:00,60,1,60,vc", "timestamp"},    // no such hour
      {"2017-10-01T00:00:00,60,1,60,vc", "timestamp"},    // not the format
      {"1506816000,60,1,60,vc", "timestamp"},             // not the format
      {"2017-10-01 00:00:00,60,2,60,vc", "gpu_time"},     // not duration x num_gpus
      {"2017-10-01 00:00:00,60,0,0,vc", "num_gpus"},      // no GPU
      {"2017-10-01 00:00:00,-5,1,-5,vc", "duration"},     // negative
      {"2017-10-01 00:00:00,60,1.5,90,vc", "num_gpus"},   // not whole
      {"2017-10-01 00:00:00,60,1,60,", "cluster"},        // no VC
  };
  for (const auto& [line, column] : bad) {
    SCOPED_TRACE(line);
    const std::string path = WriteFile(dir, "philly.csv", std::string(kHeader) + line + "\n");
    auto t = ReadTrace(path, "philly", {});
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().message().rfind(path + ":2: " + column, 0), 0u) << t.status().message();
  }
}

TEST(PhillyReader, WindowAndTenantFilters) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "philly.csv",
                                     std::string(kHeader) +
                                         "2017-09-30 23:59:59,1,1,1,a\n"
                                         "2017-10-01 00:00:00,1,1,1,a\n"
                                         "2017-10-01 00:00:10,1,1,1,b\n"
                                         "2017-11-30 23:59:59,1,1,1,a\n"
                                         "2017-12-01 00:00:00,1,1,1,a\n");
  ReadOptions o;
  o.window_from = "2017-10-01";
  o.window_to = "2017-11-30";  // a bare date: the whole day
  auto t = ReadTrace(path, "", o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 3u);
  EXPECT_EQ(t->report.filtered, 2);
  EXPECT_EQ(t->report.lines, 5);
  EXPECT_EQ(t->time_origin, "2017-10-01 00:00:00");  // the window start
  EXPECT_EQ(t->jobs[0].submit_time, 0);
  EXPECT_EQ(t->jobs[1].submit_time, 10 * kUsPerSecond);
  EXPECT_EQ(t->jobs[0].name, "philly-3");
  EXPECT_NE(t->report.Summary().find("2 left out by filters"), std::string::npos);

  o.tenants = {"b"};
  t = ReadTrace(path, "", o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 1u);
  EXPECT_EQ(t->jobs[0].tenant, "b");
  EXPECT_EQ(t->jobs[0].submit_time, 10 * kUsPerSecond);

  ReadOptions exact;
  exact.window_to = "2017-10-01 00:00:00";  // with a time: up to that second
  t = ReadTrace(path, "", exact);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->time_origin, "2017-09-30 23:59:59");

  ReadOptions none;
  none.tenants = {"zzz"};
  t = ReadTrace(path, "", none);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("5 left out by filters"), std::string::npos) << t.status().message();
}

TEST(PhillyReader, RefusesBadFilterOptions) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "philly.csv", std::string(kHeader) + "2017-10-01 00:00:00,1,1,1,a\n");
  for (auto [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"2017-13-01", ""}, {"yesterday", ""}, {"", "2017-11-31"}, {"2017-11-01", "2017-10-01"}}) {
    ReadOptions o;
    o.window_from = from;
    o.window_to = to;
    auto t = ReadTrace(path, "", o);
    EXPECT_FALSE(t.ok()) << from << " .. " << to;
  }
  ReadOptions o;
  o.tenants = {""};
  EXPECT_FALSE(ReadTrace(path, "", o).ok());
}

TEST(DateTime, ParsesStrictlyAndFormatsBack) {
  auto t = ParseDateTime("2017-09-04 10:30:41");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, 1504521041);
  EXPECT_EQ(FormatDateTime(*t), "2017-09-04 10:30:41");
  EXPECT_EQ(FormatDateTime(0), "1970-01-01 00:00:00");
  EXPECT_EQ(FormatDateTime(-1), "1969-12-31 23:59:59");
  EXPECT_FALSE(ParseDateTime("2017-09-04").ok());
  EXPECT_EQ(*ParseDateTime("2017-09-04", true), 1504483200);
  EXPECT_EQ(*ParseDateTime("2016-02-29 00:00:00"), 1456704000);
  for (const char* bad : {"2017-02-29 00:00:00", "2017-9-04 10:30:41", "2017-09-04 10:30:60", "2017-09-04 10:30",
                          "2017-09-04 10:30:41Z", "", "2017/09/04 10:30:41", "2017-00-04 10:30:41"})
    EXPECT_FALSE(ParseDateTime(bad, true).ok()) << bad;
}

TEST(PhillyReader, RealTrace) {
  const std::string path = testing::DataDir() + "/pollux-philly/philly.csv";
  auto t = ReadTrace(path, "", {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->jobs.size(), 82247u);  // the README's count; the blank last line is not a job
  EXPECT_EQ(t->report.skipped, 0);
  EXPECT_EQ(t->time_origin, "2017-09-04 10:30:41");
  int64_t max_submit = 0, gangs = 0, gpus = 0;
  for (const auto& j : t->jobs) {
    max_submit = std::max(max_submit, j.submit_time);
    gangs += j.groups[0].count > 1;
    gpus += j.total_gpus();
  }
  // 2017-12-22 08:02:11 is 9,408,690 s after 2017-09-04 10:30:41.
  EXPECT_EQ(max_submit, 9408690 * kUsPerSecond);
  EXPECT_EQ(gangs, 7 + 199 + 7 + 67 + 6 + 3);  // the jobs above 8 GPUs
  EXPECT_EQ(gpus, 76627 + 2 * 1818 + 4 * 1870 + 8 * 1643 + 12 * 7 + 16 * 199 + 24 * 7 + 32 * 67 + 64 * 6 + 128 * 3);
}

TEST(PhillyReader, HeliosWindowHas68503Jobs) {
  ReadOptions o;
  o.window_from = "2017-10-01";
  o.window_to = "2017-11-30";
  o.tenants = kHeliosVcs;
  auto t = ReadTrace(testing::DataDir() + "/pollux-philly/philly.csv", "philly", o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->jobs.size(), 68503u);  // as the README of pollux-philly says
  EXPECT_EQ(t->report.filtered, 82247 - 68503);
  EXPECT_EQ(t->time_origin, "2017-10-01 00:00:00");
  for (const auto& j : t->jobs) ASSERT_LT(j.submit_time, 61LL * 86400 * kUsPerSecond);
}

}  // namespace
}  // namespace berth::sim
