// SVG charts on awkward input: empty, one point, all-equal values, NaN,
// log axes with zeros, hostile names; and the tick and CDF helpers.
#include "berth/sim/report/svg_plot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "berth/testing/report_fixtures.h"

namespace berth::sim {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t i = s.find(what); i != std::string::npos; i = s.find(what, i + 1)) ++n;
  return n;
}

// Well-formed, free of NaN/inf text, one <svg> element.
void ExpectSaneSvg(const std::string& svg) {
  EXPECT_EQ(testing::CheckTagBalance(svg), "");
  EXPECT_EQ(Count(svg, "<svg"), 1u);
  EXPECT_EQ(Count(svg, "</svg>"), 1u);
  EXPECT_EQ(svg.find("nan"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("inf"), std::string::npos) << svg;
}

LineChart Chart(std::vector<PlotSeries> series) {
  LineChart c;
  c.id = "t";
  c.title = "Test";
  c.x.label = "x";
  c.y.label = "y";
  c.series = std::move(series);
  return c;
}

TEST(SvgPlot, EmptyChartSaysNoData) {
  const std::string svg = RenderLineChart(Chart({}));
  ExpectSaneSvg(svg);
  EXPECT_NE(svg.find("No data"), std::string::npos);
}

TEST(SvgPlot, EmptySeriesStillInLegendWithoutPath) {
  const std::string svg = RenderLineChart(Chart({{"a", {}, 0}}));
  ExpectSaneSvg(svg);
  EXPECT_NE(svg.find(">a</text>"), std::string::npos);
  EXPECT_EQ(Count(svg, "<path d=\"M"), 1u);  // the axes only
  EXPECT_NE(svg.find("No data"), std::string::npos);
}

TEST(SvgPlot, SinglePointIsADot) {
  const std::string svg = RenderLineChart(Chart({{"a", {{3, 7}}, 0}}));
  ExpectSaneSvg(svg);
  EXPECT_EQ(Count(svg, "<circle"), 1u);
  EXPECT_EQ(svg.find("No data"), std::string::npos);
}

TEST(SvgPlot, AllEqualValuesGetARange) {
  const std::string svg = RenderLineChart(Chart({{"flat", {{0, 5}, {1, 5}, {2, 5}}, 0}}));
  ExpectSaneSvg(svg);
  // The widened y range has several ticks around 5.
  EXPECT_NE(svg.find(">5</text>"), std::string::npos);
  EXPECT_GE(Count(svg, "text-anchor=\"end\""), 3u);
  const std::string zero = RenderLineChart(Chart({{"zero", {{0, 0}, {0, 0}}, 0}}));
  ExpectSaneSvg(zero);
}

TEST(SvgPlot, NonFiniteValuesBreakTheLine) {
  const std::string svg =
      RenderLineChart(Chart({{"a", {{0, 1}, {1, 2}, {2, kNaN}, {3, 4}, {4, 5}, {kInf, 1}, {5, -kInf}}, 0}}));
  ExpectSaneSvg(svg);
  // Two segments in one path: two move-tos.
  const size_t at = svg.find("stroke=\"" + SeriesColor(0) + "\"");
  ASSERT_NE(at, std::string::npos);
  const size_t path = svg.rfind("<path d=\"", at);
  EXPECT_EQ(Count(svg.substr(path, at - path), "M"), 2u);
}

TEST(SvgPlot, OnlyNonFiniteIsNoData) {
  const std::string svg = RenderLineChart(Chart({{"a", {{kNaN, kNaN}, {kInf, 1}}, 0}}));
  ExpectSaneSvg(svg);
  EXPECT_NE(svg.find("No data"), std::string::npos);
}

TEST(SvgPlot, LogAxisToleratesZeroAndNegative) {
  LineChart c = Chart({{"a", {{0, 1}, {-5, 2}, {10, 3}, {1e5, 4}}, 0}});
  c.x.log_scale = true;
  const std::string svg = RenderLineChart(c);
  ExpectSaneSvg(svg);
  EXPECT_NE(svg.find(">100k</text>"), std::string::npos);
  c.series = {{"only-zero", {{0, 1}}, 0}};
  ExpectSaneSvg(RenderLineChart(c));
}

TEST(SvgPlot, NamesAndLabelsAreEscaped) {
  LineChart c = Chart({{"<script>&\"'", {{0, 1}, {1, 2}}, 0}});
  c.title = "a < b & c > d";
  c.id = "bad id\"><x";
  const std::string svg = RenderLineChart(c);
  ExpectSaneSvg(svg);
  EXPECT_EQ(svg.find("<script>"), std::string::npos);
  EXPECT_NE(svg.find("&lt;script&gt;&amp;&quot;&#39;"), std::string::npos);
  EXPECT_NE(svg.find("a &lt; b &amp; c &gt; d"), std::string::npos);
  EXPECT_NE(svg.find("url(#bad_id___x-clip)"), std::string::npos);
}

TEST(SvgPlot, LongNamesAreShortenedInTheLegendOnly) {
  const std::string name(60, 'n');
  const std::string svg = RenderLineChart(Chart({{name, {{0, 1}, {1, 2}}, 0}}));
  ExpectSaneSvg(svg);
  EXPECT_NE(svg.find("<title>" + name + "</title>"), std::string::npos);
  EXPECT_NE(svg.find(">" + std::string(28, 'n') + "\xE2\x80\xA6</text>"), std::string::npos);
}

TEST(SvgPlot, StepChartAndGuides) {
  LineChart c = Chart({{"q", {{0, 0}, {1, 3}, {2, 1}}, 11}});
  c.step = true;
  c.guides.push_back({"ceiling", {{0, 0}, {2, 3}}});
  const std::string svg = RenderLineChart(c);
  ExpectSaneSvg(svg);
  EXPECT_NE(svg.find("ceiling"), std::string::npos);
  EXPECT_NE(svg.find("stroke-dasharray=\"7 3\""), std::string::npos);  // palette wrapped: dashed
}

TEST(SvgPlot, Deterministic) {
  const LineChart c = Chart({{"a", {{0, 1}, {1, 2}}, 0}, {"b", {{0, 2}, {1, 1}}, 1}});
  EXPECT_EQ(RenderLineChart(c), RenderLineChart(c));
}

TEST(SvgPlot, NiceTicks) {
  EXPECT_EQ(NiceTicks(0, 100, 6), (std::vector<double>{0, 20, 40, 60, 80, 100}));
  EXPECT_EQ(NiceTicks(0, 1, 3), (std::vector<double>{0, 0.5, 1}));
  EXPECT_EQ(NiceTicks(-10, 10, 5), (std::vector<double>{-10, -5, 0, 5, 10}));
  EXPECT_TRUE(NiceTicks(1, 1, 5).empty());
  EXPECT_TRUE(NiceTicks(kNaN, 1, 5).empty());
  for (double t : NiceTicks(0.1, 0.7, 7)) EXPECT_EQ(FormatTick(t).size() <= 4, true) << FormatTick(t);
}

TEST(SvgPlot, LogTicks) {
  EXPECT_EQ(LogTicks(1, 1000), (std::vector<double>{1, 10, 100, 1000}));
  EXPECT_EQ(LogTicks(1, 10), (std::vector<double>{1, 2, 5, 10}));
  EXPECT_TRUE(LogTicks(0, 10).empty());
}

TEST(SvgPlot, FormatTick) {
  EXPECT_EQ(FormatTick(0), "0");
  EXPECT_EQ(FormatTick(0.25), "0.25");
  EXPECT_EQ(FormatTick(12), "12");
  EXPECT_EQ(FormatTick(1500), "1.5k");
  EXPECT_EQ(FormatTick(2e6), "2M");
  EXPECT_EQ(FormatTick(-3000), "-3k");
  EXPECT_EQ(FormatTick(0.1 + 0.2), "0.3");
  EXPECT_EQ(FormatTick(kNaN), "");
}

TEST(SvgPlot, EmpiricalCdf) {
  EXPECT_TRUE(EmpiricalCdf({}, 10).empty());
  const std::vector<double> one = {5};
  EXPECT_EQ(EmpiricalCdf(one, 10).size(), 2u);  // (5, 0), (5, 100)
  const std::vector<double> v = {3, 1, 2, 2, kNaN, 4};
  const auto cdf = EmpiricalCdf(v, 100);
  ASSERT_EQ(cdf.size(), 5u);
  EXPECT_EQ(cdf[0].x, 1);
  EXPECT_EQ(cdf[0].y, 0);
  EXPECT_EQ(cdf[1].x, 1);
  EXPECT_DOUBLE_EQ(cdf[1].y, 20);
  EXPECT_EQ(cdf[2].x, 2);  // ties: one corner at the higher rank
  EXPECT_DOUBLE_EQ(cdf[2].y, 60);
  EXPECT_DOUBLE_EQ(cdf.back().y, 100);

  std::vector<double> many;
  for (int i = 0; i < 100000; ++i) many.push_back(i % 977);
  const auto thin = EmpiricalCdf(many, 1000);
  EXPECT_LE(thin.size(), 1001u);
  EXPECT_DOUBLE_EQ(thin.back().y, 100);
  for (size_t i = 1; i < thin.size(); ++i) {
    EXPECT_GE(thin[i].x, thin[i - 1].x);
    EXPECT_GE(thin[i].y, thin[i - 1].y);
  }
}

TEST(SvgPlot, CdfChart) {
  const std::vector<double> a = {1, 10, 100, 1000}, empty;
  const std::vector<CdfSample> samples = {{"a", a, 0}, {"none", empty, 1}};
  PlotAxis x;
  x.log_scale = true;
  const std::string svg = RenderCdfChart("cdf", "JCT", x, samples);
  ExpectSaneSvg(svg);
  EXPECT_NE(svg.find(">100%</text>"), std::string::npos);
}

}  // namespace
}  // namespace berth::sim
