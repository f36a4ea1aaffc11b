// The HTML report: well-formed, self-contained, escaped, every policy present,
// plots only where there is data, small.
#include "berth/sim/report/html_report.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "berth/sim/report/svg_plot.h"
#include "berth/testing/report_fixtures.h"

namespace berth::sim {
namespace {

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t i = s.find(what); i != std::string::npos; i = s.find(what, i + 1)) ++n;
  return n;
}

PolicyResult FgdResult(const std::string& name, double final_pct) {
  PolicyResult r;
  r.policy = name;
  r.mode = "fgd";
  r.seed = 42;
  r.load = 1.3;
  r.capacity_milli_gpu = 6212000;
  r.jobs_total = 10818;
  r.jobs_placed = 8000;
  r.jobs_failed = 2818;
  r.gpu_allocation_ratio = final_pct / 100;
  r.decision_log_hash = "6cfd677a1379daae";
  for (double x = 0; x <= 130; x += 0.25) r.allocation_over_time.push_back({x, std::min(x, final_pct)});
  return r;
}

SimulateOutput FgdOutput() {
  SimulateOutput out;
  out.cluster_summary = "1213 nodes, 6212 GPUs; G2 549/4392";
  out.trace_summary = "openb: 8152 jobs from 8152 lines";
  out.trace_name = "openb_pod_list_default.csv";
  out.results = {FgdResult("bestfit", 92.9), FgdResult("a<b&c>d", 94.5)};
  out.results[1].fragmentation_ratio = 0.25;
  out.results[1].fragmented_gpu_share = 0.02;
  return out;
}

TEST(HtmlReport, FgdModeWellFormedAndEscaped) {
  const std::string html = RenderHtmlReport(FgdOutput());
  EXPECT_EQ(testing::CheckTagBalance(html), "");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(Count(html, "<svg"), Count(html, "</svg>"));
  EXPECT_EQ(Count(html, "<svg"), 2u);  // allocation, plus its high-load detail
  EXPECT_NE(html.find("bestfit"), std::string::npos);
  EXPECT_EQ(html.find("a<b&c>d"), std::string::npos);
  EXPECT_NE(html.find("a&lt;b&amp;c&gt;d"), std::string::npos);
  EXPECT_NE(html.find("Arrived GPU demand"), std::string::npos);
  EXPECT_EQ(html.find("Queue length"), std::string::npos);  // no data: no plot
  EXPECT_EQ(html.find("completion time (CDF)"), std::string::npos);
  EXPECT_NE(html.find("% of idle"), std::string::npos);  // fragmentation computed for one policy
  EXPECT_NE(html.find("25.00"), std::string::npos);
  EXPECT_NE(html.find("6cfd677a1379daae"), std::string::npos);
  EXPECT_NE(html.find("94.50"), std::string::npos);
  // Self-contained: no scripts, nothing fetched.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));
  EXPECT_EQ(html.find("https://"), std::string::npos);
}

TEST(HtmlReport, ReplayModeHasAllPlotsAndStaysSmall) {
  const SimulateOutput out = berth::testing::SyntheticReplayOutput();
  const std::string html = RenderHtmlReport(out);
  EXPECT_EQ(testing::CheckTagBalance(html), "");
  EXPECT_EQ(Count(html, "<svg"), 3u);
  EXPECT_EQ(Count(html, "</svg>"), 3u);
  EXPECT_NE(html.find("GPU allocation over time"), std::string::npos);
  EXPECT_NE(html.find("Queue length over time"), std::string::npos);
  EXPECT_NE(html.find("Job completion time (CDF)"), std::string::npos);
  EXPECT_NE(html.find("log scale"), std::string::npos);
  for (const auto& r : out.results) EXPECT_NE(html.find(EscapeXml(r.policy)), std::string::npos) << r.policy;
  EXPECT_EQ(html.find("<b>&amp;"), std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;&amp;amp;&quot;odd&#39;&lt;/b&gt;"), std::string::npos);
  EXPECT_NE(html.find("Job completion time (h)"), std::string::npos);  // one unit per column group
  EXPECT_NE(html.find("Queueing delay (min)"), std::string::npos);
  EXPECT_NE(html.find("unfinished"), std::string::npos);
  // 3 x 6,000-point series thinned to ~1,000 points each.
  EXPECT_LT(html.size(), 400u * 1024);
}

TEST(HtmlReport, EmptyOutput) {
  const std::string html = RenderHtmlReport(SimulateOutput{});
  EXPECT_EQ(testing::CheckTagBalance(html), "");
  EXPECT_EQ(html.find("<svg"), std::string::npos);
}

TEST(HtmlReport, Deterministic) {
  EXPECT_EQ(RenderHtmlReport(FgdOutput()), RenderHtmlReport(FgdOutput()));
}

TEST(HtmlReport, WritesFile) {
  const std::string path = ::testing::TempDir() + "berth_replay_report.html";
  ASSERT_TRUE(WriteHtmlReport(berth::testing::SyntheticReplayOutput(), path).ok());
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(), RenderHtmlReport(berth::testing::SyntheticReplayOutput()));
  EXPECT_FALSE(WriteHtmlReport(FgdOutput(), "/nonexistent-dir/x.html").ok());
}

}  // namespace
}  // namespace berth::sim
