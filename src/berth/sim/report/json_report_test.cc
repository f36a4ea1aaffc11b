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

}  // namespace
}  // namespace berth::sim
