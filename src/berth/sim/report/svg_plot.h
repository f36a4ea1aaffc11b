// Hand-written SVG charts for the HTML report: line charts with axes, ticks,
// grid, legend and a fixed colour palette, and an empirical-CDF chart built on
// them. Output is a standalone <svg> element (no scripts, no external fonts),
// deterministic for the same input.
//
//   LineChart c;
//   c.id = "alloc";
//   c.title = "GPU allocation";
//   c.x.label = "Arrived GPU demand (% of capacity)";
//   c.y = {.label = "Allocated (%)", .min = 0, .max = 100};
//   c.series.push_back({"bestfit", r.allocation_over_time, 0});
//   std::string svg = RenderLineChart(c);
//
// Robust to awkward data: empty series, a single point (drawn as a dot),
// all-equal values (the range is widened), and NaN or infinite values (the
// line breaks there). On a log axis, values <= 0 sit at the axis minimum.
#pragma once

#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "berth/sim/result.h"

namespace berth::sim {

struct PlotSeries {
  std::string name;
  std::vector<Point> points;
  size_t color = 0;  // index into the palette (SeriesColor)
};

struct PlotAxis {
  std::string label;
  bool log_scale = false;
  // Fixed bounds; NaN means "from the data, widened to round ticks".
  double min = std::numeric_limits<double>::quiet_NaN();
  double max = std::numeric_limits<double>::quiet_NaN();
  std::string suffix;  // appended to tick labels, e.g. "%"
};

// A reference line (e.g. "all demand placed"), drawn dashed and grey.
struct PlotGuide {
  std::string name;
  std::vector<Point> points;
};

struct LineChart {
  std::string id = "chart";  // unique per document: prefixes the clip-path id
  std::string title;
  PlotAxis x, y;
  std::vector<PlotSeries> series;
  std::vector<PlotGuide> guides;
  bool step = false;  // draw as a step function: y holds until the next x
  int width = 900;
  int height = 380;
};

// The chart as an <svg> element. With no finite point in any series the
// frame is drawn with a "No data" note.
std::string RenderLineChart(const LineChart& chart);

// A chart of empirical CDFs, one per sample: x = value, y = % of the sample
// at or below it. Samples are thinned to `max_points` steps each.
struct CdfSample {
  std::string name;
  std::span<const double> values;
  size_t color = 0;
};
std::string RenderCdfChart(std::string id, std::string title, PlotAxis x, std::span<const CdfSample> samples,
                           size_t max_points = 1000);

// The CDF of `values` as step corners (x ascending, y in (0, 100]), starting
// with (min, 0); non-finite values are dropped; at most max_points + 1 points.
std::vector<Point> EmpiricalCdf(std::span<const double> values, size_t max_points);

// Palette (colour-blind-aware, 10 colours, then repeats).
std::string SeriesColor(size_t i);

// Text and attribute escaping for XML/HTML: & < > " '.
std::string EscapeXml(std::string_view s);

// Round ticks ("nice numbers": 1, 2, 2.5, 5 x 10^k) covering [lo, hi], about
// `target` of them. lo < hi required.
std::vector<double> NiceTicks(double lo, double hi, int target);
// Decade ticks (1, 10, 100 ...) in [lo, hi]; adds 2 and 5 multiples when the
// range spans fewer than two decades. 0 < lo < hi required.
std::vector<double> LogTicks(double lo, double hi);
// A short tick label: 0.25, 12, 1.5k, 2M.
std::string FormatTick(double v);

}  // namespace berth::sim
