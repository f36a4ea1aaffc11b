// The text summary: the contract columns, aligned, "-" for unmeasured figures.
#include "berth/sim/report/text_report.h"

#include <gtest/gtest.h>

#include <sstream>

#include "berth/testing/report_fixtures.h"

namespace berth::sim {
namespace {

TEST(TextReport, ColumnsAlignedAndBestNamed) {
  const SimulateOutput out = berth::testing::SyntheticReplayOutput();
  const std::string s = FormatTextSummary(out);
  for (const char* col : {"policy", "seed", "alloc%", "placed", "failed", "jct_mean_s", "decision_log_hash"})
    EXPECT_NE(s.find(col), std::string::npos) << col;
  EXPECT_NE(s.find("trace replay, seed 42"), std::string::npos);
  // Header, rule and rows share one width up to the hash column.
  std::istringstream in(s);
  std::string line;
  size_t hash_col = std::string::npos;
  int rows = 0;
  while (std::getline(in, line)) {
    if (line.rfind("policy", 0) == 0) hash_col = line.find("decision_log_hash");
    else if (hash_col != std::string::npos && !line.empty() && rows < 5) {
      ASSERT_GE(line.size(), hash_col) << line;
      EXPECT_EQ(line.substr(hash_col - 2, 2), "  ") << line;
      EXPECT_NE(line[hash_col - 3], ' ') << line;  // wall_s is right-aligned against the gap
      ++rows;
    }
  }
  EXPECT_EQ(rows, 5);  // rule + 4 policies
  EXPECT_NE(s.find("highest allocation: fifo (71.00%)"), std::string::npos) << s;
  EXPECT_NE(s.find("lowest mean JCT:    fifo"), std::string::npos) << s;
}

TEST(TextReport, UnmeasuredIsDash) {
  SimulateOutput out;
  PolicyResult r;
  r.policy = "bestfit";
  r.mode = "fgd";
  r.load = 1.3;
  r.seed = 42;
  r.gpu_allocation_ratio = 0.929;
  r.decision_log_hash = "6cfd677a1379daae";
  out.results = {r};
  const std::string s = FormatTextSummary(out);
  EXPECT_NE(s.find("FGD protocol, load 1.30, seed 42"), std::string::npos);
  EXPECT_NE(s.find("92.90"), std::string::npos);
  EXPECT_NE(s.find(" -  "), std::string::npos) << s;
  EXPECT_EQ(s.find("unfinished"), std::string::npos);
  EXPECT_EQ(s.find("highest"), std::string::npos);  // one policy: nothing to compare
}

}  // namespace
}  // namespace berth::sim
