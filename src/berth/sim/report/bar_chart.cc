// SVG horizontal bar chart.
#include "berth/sim/report/bar_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace berth::sim {
namespace {

constexpr const char* kFont = "system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif";
constexpr const char* kGridColor = "#e5e7eb";
constexpr const char* kTextColor = "#374151";
constexpr double kBarHeight = 22, kGap = 8;

std::string Px(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string Fmt(const std::string& f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f.c_str(), v);
  return buf;
}

}  // namespace

std::string RenderBarChart(const BarChart& chart) {
  double hi = std::isfinite(chart.axis.max) ? chart.axis.max : 0;
  if (!std::isfinite(chart.axis.max))
    for (const Bar& b : chart.bars)
      if (std::isfinite(b.value)) hi = std::max(hi, b.value);
  const double lo = std::isfinite(chart.axis.min) ? chart.axis.min : 0;
  if (!(hi > lo)) hi = lo + 1;
  std::vector<double> ticks = NiceTicks(lo, hi, 6);
  std::erase_if(ticks, [&](double t) { return t < lo - 1e-9 || t > hi + 1e-9; });

  size_t name_chars = 4;
  for (const Bar& b : chart.bars) name_chars = std::max(name_chars, std::min<size_t>(b.name.size(), 28));
  const double w = std::max(chart.width, 300);
  const double left = 16 + 7.2 * static_cast<double>(name_chars), right = w - 70;
  const double top = chart.title.empty() ? 12 : 40;
  const double bottom = top + static_cast<double>(chart.bars.size()) * (kBarHeight + kGap) + kGap;
  const double h = bottom + 48;
  auto map = [&](double v) { return left + (std::clamp(v, lo, hi) - lo) / (hi - lo) * (right - left); };

  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + Px(w) + " " + Px(h) + "\" width=\"" +
                    Px(w) + "\" height=\"" + Px(h) + "\" role=\"img\" font-family=\"" + kFont +
                    "\" font-size=\"12\" fill=\"" + kTextColor + "\">";
  if (!chart.title.empty()) {
    svg += "<title>" + EscapeXml(chart.title) + "</title>";
    svg += "<text x=\"" + Px(left) + "\" y=\"22\" font-size=\"15\" font-weight=\"600\" fill=\"#111827\">" +
           EscapeXml(chart.title) + "</text>";
  }
  for (double t : ticks) {
    const std::string x = Px(map(t));
    svg += "<line x1=\"" + x + "\" y1=\"" + Px(top) + "\" x2=\"" + x + "\" y2=\"" + Px(bottom + 4) + "\" stroke=\"" +
           kGridColor + "\"/>";
    svg += "<text x=\"" + x + "\" y=\"" + Px(bottom + 18) + "\" text-anchor=\"middle\">" +
           EscapeXml(FormatTick(t) + chart.axis.suffix) + "</text>";
  }
  if (!chart.axis.label.empty())
    svg += "<text x=\"" + Px((left + right) / 2) + "\" y=\"" + Px(bottom + 38) + "\" text-anchor=\"middle\">" +
           EscapeXml(chart.axis.label) + "</text>";
  for (size_t i = 0; i < chart.bars.size(); ++i) {
    const Bar& b = chart.bars[i];
    const double y = top + kGap + static_cast<double>(i) * (kBarHeight + kGap);
    svg += "<text x=\"" + Px(left - 8) + "\" y=\"" + Px(y + kBarHeight / 2 + 4) + "\" text-anchor=\"end\">" +
           EscapeXml(b.name) + "</text>";
    if (!std::isfinite(b.value)) {
      svg += "<text x=\"" + Px(left + 4) + "\" y=\"" + Px(y + kBarHeight / 2 + 4) + "\" fill=\"#9ca3af\">no data</text>";
      continue;
    }
    const double x1 = map(b.value);
    svg += "<rect x=\"" + Px(left) + "\" y=\"" + Px(y) + "\" width=\"" + Px(std::max(x1 - left, 0.5)) +
           "\" height=\"" + Px(kBarHeight) + "\" rx=\"2\" fill=\"" + SeriesColor(b.color) + "\"/>";
    svg += "<text x=\"" + Px(x1 + 6) + "\" y=\"" + Px(y + kBarHeight / 2 + 4) + "\" font-weight=\"600\">" +
           EscapeXml(Fmt(chart.value_format, b.value) + chart.axis.suffix) + "</text>";
  }
  svg += "<line x1=\"" + Px(left) + "\" y1=\"" + Px(top) + "\" x2=\"" + Px(left) + "\" y2=\"" + Px(bottom) +
         "\" stroke=\"#4b5563\"/>";
  svg += "</svg>";
  return svg;
}

}  // namespace berth::sim
