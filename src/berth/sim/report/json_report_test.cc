// The JSON report: contract keys unchanged, series added under "series".
#include "berth/sim/report/json_report.h"

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "berth/testing/report_fixtures.h"

namespace berth::sim {
namespace {

TEST(JsonReport, ContractKeysAndSeries) {
  SimulateOutput out = berth::testing::SyntheticReplayOutput();
  out.results[0].allocation_over_time[10].y = std::numeric_limits<double>::quiet_NaN();
  const auto j = nlohmann::json::parse(ResultsToJson(out));
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), out.results.size());
  for (size_t i = 0; i < j.size(); ++i) {
    const auto& o = j[i];
    for (const char* key : {"policy", "seed", "gpu_allocation_ratio", "jobs_total", "jobs_placed", "jct_mean_s",
                            "queue_delay_mean_s", "decision_log_hash", "jct_s", "queue_delay_s", "mode", "trace"})
      EXPECT_TRUE(o.contains(key)) << key;
    EXPECT_EQ(o["policy"], out.results[i].policy);
    ASSERT_TRUE(o.contains("series"));
    for (const char* s : {"allocation_over_time", "queue_length_over_time"}) {
      const auto& arr = o["series"][s];
      ASSERT_TRUE(arr.is_array()) << s;
      EXPECT_LE(arr.size(), 1000u);
      for (const auto& p : arr) {
        ASSERT_TRUE(p.is_array());
        ASSERT_EQ(p.size(), 2u);
        EXPECT_TRUE(p[0].is_number() && p[1].is_number());
      }
    }
  }
  EXPECT_GT(j[0]["series"]["allocation_over_time"].size(), 900u);
  EXPECT_EQ(j[0]["series"]["allocation_over_time"][0][0], 0.0);
  EXPECT_TRUE(j[3]["series"]["allocation_over_time"].empty());
}

TEST(JsonReport, PointsOnePerLineAndStringsUntouched) {
  SimulateOutput out;
  PolicyResult r;
  r.policy = "odd [1, 2]\n\"name\"";
  r.mode = "fgd";
  r.allocation_over_time = {{0, 0}, {1.5, 2.25}};
  out.results.push_back(r);
  const std::string text = ResultsToJson(out);
  EXPECT_NE(text.find("[1.5, 2.25]"), std::string::npos) << text;
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j[0]["policy"], r.policy);
  EXPECT_EQ(j[0]["series"]["allocation_over_time"][1][1], 2.25);
  EXPECT_TRUE(j[0]["series"]["queue_length_over_time"].empty());
}

TEST(JsonReport, UnmeasuredFiguresAreNull) {
  SimulateOutput out;
  PolicyResult r;
  r.policy = "bestfit";
  r.mode = "fgd";  // nothing finishes: no JCT, no queueing delay
  out.results.push_back(r);
  const auto j = nlohmann::json::parse(ResultsToJson(out))[0];
  for (const char* key : {"jct_mean_s", "jct_p99_s", "queue_delay_mean_s", "queue_delay_p99_s"}) {
    ASSERT_TRUE(j.contains(key)) << key;  // contract keys stay, as null
    EXPECT_TRUE(j[key].is_null()) << key;
  }
  EXPECT_EQ(j["jct_s"]["count"], 0);
  EXPECT_TRUE(j["jct_s"]["mean"].is_null());
  EXPECT_TRUE(j["jct_s"]["p99"].is_null());
  // Measured figures stay numbers, zeros included.
  SimulateOutput replay = berth::testing::SyntheticReplayOutput();
  const auto k = nlohmann::json::parse(ResultsToJson(replay))[0];
  EXPECT_TRUE(k["jct_mean_s"].is_number());
  EXPECT_TRUE(k["jct_s"]["p50"].is_number());
}

TEST(JsonReport, RunInfo) {
  SimulateOutput out = berth::testing::SyntheticReplayOutput();
  out.run = {"0.1.0", "1a2b3c4d5e6f", "Release", "berth simulate --cluster c.yaml --policy fifo", "c.yaml"};
  out.cluster_summary = "4 nodes, 32 GPUs";
  const auto j = nlohmann::json::parse(ResultsToJson(out));
  for (const auto& o : j) {
    ASSERT_TRUE(o.contains("run"));
    EXPECT_EQ(o["run"]["berth_version"], "0.1.0");
    EXPECT_EQ(o["run"]["git_commit"], "1a2b3c4d5e6f");
    EXPECT_EQ(o["run"]["build_type"], "Release");
    EXPECT_EQ(o["run"]["command_line"], "berth simulate --cluster c.yaml --policy fifo");
    EXPECT_EQ(o["run"]["cluster"], "c.yaml");
    EXPECT_EQ(o["run"]["cluster_summary"], "4 nodes, 32 GPUs");
  }
  // Nothing known: an empty object, no empty strings.
  SimulateOutput bare;
  bare.results.emplace_back();
  EXPECT_TRUE(nlohmann::json::parse(ResultsToJson(bare))[0]["run"].empty());
}

}  // namespace
}  // namespace berth::sim
