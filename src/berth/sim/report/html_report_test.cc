// The HTML report: well-formed, self-contained, escaped, every policy present,
// plots only where there is data, small.
#include "berth/sim/report/html_report.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "berth/sim/report/html_table.h"
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
  EXPECT_EQ(Count(html, "<svg"), 3u);  // final-allocation bars, allocation, its high-load detail
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
  EXPECT_EQ(Count(html, "<svg"), 4u);
  EXPECT_EQ(Count(html, "</svg>"), 4u);
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

// The part of `html` from the element whose id is `id` to the end of its figure.
std::string FigureOf(const std::string& html, const std::string& svg_title) {
  const size_t at = html.find(">" + svg_title + "</title>");
  if (at == std::string::npos) return "";
  const size_t start = html.rfind("<figure>", at);
  return html.substr(start, html.find("</figure>", at) - start);
}

TEST(HtmlReport, DetailPlotFitsTheResults) {
  const std::string html = RenderHtmlReport(FgdOutput());  // final allocations 92.9% and 94.5%
  const std::string detail = FigureOf(html, "GPU allocation at high load (detail)");
  ASSERT_FALSE(detail.empty());
  // y from 1.6 points (the spread) below the lowest result to 0.8 above the highest.
  EXPECT_NE(detail.find("y from 91% to 96% allocated"), std::string::npos) << detail.substr(detail.size() - 400);
  EXPECT_NE(detail.find("final allocations 92.90% to 94.50%"), std::string::npos);
  for (const char* far : {">40%<", ">50%<", ">80%<"}) EXPECT_EQ(detail.find(far), std::string::npos) << far;
  EXPECT_NE(detail.find(">92%<"), std::string::npos);
}

TEST(HtmlReport, NamesCoincidingCurves) {
  SimulateOutput out = FgdOutput();
  out.results.push_back(FgdResult("firstfit", 92.9));  // the same curve as bestfit, other decisions
  out.results.back().decision_log_hash = "1cfd81248c6338d5";
  const std::string html = RenderHtmlReport(out);
  const std::string main = FigureOf(html, "GPU allocation as demand arrives");
  EXPECT_NE(main.find("Curves that coincide: bestfit and firstfit (within 0.05 points everywhere)"),
            std::string::npos);
  EXPECT_EQ(Count(main, "Curves that coincide"), 1u);
  EXPECT_EQ(RenderHtmlReport(FgdOutput()).find("Curves that coincide"), std::string::npos);
}

TEST(HtmlReport, FinalAllocationBars) {
  const std::string html = RenderHtmlReport(FgdOutput());
  const std::string bars = FigureOf(html, "GPU allocation by policy");
  ASSERT_FALSE(bars.empty());
  EXPECT_EQ(Count(bars, "<rect"), 2u);
  EXPECT_NE(bars.find(">92.90%<"), std::string::npos);
  EXPECT_NE(bars.find(">94.50%<"), std::string::npos);
  EXPECT_NE(bars.find(">bestfit<"), std::string::npos);
  EXPECT_NE(bars.find(">a&lt;b&amp;c&gt;d<"), std::string::npos);
}

TEST(HtmlReport, DefinesFragmentationColumns) {
  const std::string html = RenderHtmlReport(FgdOutput());
  EXPECT_NE(html.find("id=\"fragmentation-defs\""), std::string::npos);
  EXPECT_NE(html.find("<b>% of idle</b>: fragmented / idle GPU capacity"), std::string::npos);
  EXPECT_NE(html.find("<b>% of capacity</b>: fragmented / all GPU capacity"), std::string::npos);
  SimulateOutput none = FgdOutput();
  none.results[1].fragmentation_ratio = none.results[1].fragmented_gpu_share = -1;
  EXPECT_EQ(RenderHtmlReport(none).find("fragmentation-defs"), std::string::npos);
}

TEST(HtmlReport, RunInfoAndCommandLine) {
  SimulateOutput out = FgdOutput();
  out.run = {"0.1.0", "1a2b3c4d5e6f", "Release",
             "berth simulate --cluster examples/c.yaml --policy 'a b' --json out/r.json", "examples/c.yaml"};
  const std::string html = RenderHtmlReport(out);
  EXPECT_EQ(testing::CheckTagBalance(html), "");
  EXPECT_NE(html.find("<dt>Berth version</dt><dd>0.1.0</dd>"), std::string::npos);
  EXPECT_NE(html.find("<dt>Git commit</dt><dd><code>1a2b3c4d5e6f</code></dd>"), std::string::npos);
  EXPECT_NE(html.find("<dt>Cluster</dt><dd><code>examples/c.yaml</code></dd>"), std::string::npos);
  EXPECT_NE(html.find("<code>berth simulate --cluster examples/c.yaml --policy &#39;a b&#39; --json out/r.json</code>"),
            std::string::npos);
  EXPECT_NE(html.find("berth simulate</code> 0.1.0 (commit 1a2b3c4d5e6f)"), std::string::npos);
  EXPECT_EQ(RenderHtmlReport(FgdOutput()).find("id=\"run-info\""), std::string::npos);  // nothing to show
}

TEST(HtmlReport, TenantDurationsInTheirOwnUnits) {
  EXPECT_EQ(FormatSeconds(0), "0 s");
  EXPECT_EQ(FormatSeconds(42), "42.0 s");
  EXPECT_EQ(FormatSeconds(5400), "90.0 min");
  EXPECT_EQ(FormatSeconds(3.5 * 86400), "3.50 d");
  EXPECT_EQ(FormatSeconds(0.05), "0.050 s");
  SimulateOutput out = berth::testing::SyntheticReplayOutput();
  out.results.resize(1);
  PolicyResult& r = out.results[0];
  r.tenants.clear();
  TenantResult fast, slow;
  fast.tenant = "fast";
  fast.jobs = fast.jobs_finished = 10;
  fast.jct_s = Summarize({20, 30, 40});
  fast.queue_delay_s = Summarize({1, 2, 3});
  slow.tenant = "slow";
  slow.jobs = slow.jobs_finished = 5;
  slow.jct_s = Summarize({4 * 86400.0, 5 * 86400.0});
  slow.queue_delay_s = Summarize({3600.0 * 10});
  for (TenantResult* t : {&fast, &slow}) t->gpu_share = t->guarantee_share = 0.5;
  r.tenants = {fast, slow};
  const std::string html = RenderHtmlReport(out);
  const size_t at = html.find("Per tenant");
  ASSERT_NE(at, std::string::npos);
  const std::string table = html.substr(at, html.find("</table>", at) - at);
  EXPECT_NE(table.find(">30.0 s<"), std::string::npos);   // fast's JCT mean, in seconds
  EXPECT_NE(table.find(">2.00 s<"), std::string::npos);   // fast's queueing delay
  EXPECT_NE(table.find(">4.50 d<"), std::string::npos);   // slow's JCT mean, in days
  EXPECT_NE(table.find(">10.0 h<"), std::string::npos);   // slow's queueing delay, in hours
  EXPECT_EQ(table.find(">0.00<"), std::string::npos);     // no figure rounded away
  EXPECT_EQ(table.find("JCT mean ("), std::string::npos);  // no table-wide unit
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
