// A horizontal bar chart for the HTML report: one labelled bar per entry
// (e.g. the final GPU allocation of each policy), each in its series colour,
// with its value printed at the bar's end. The axis starts at zero so bar
// lengths compare honestly; values are printed so close results stay readable.
//
//   BarChart c;
//   c.id = "final-alloc";
//   c.title = "Final GPU allocation";
//   c.axis = {.label = "Allocated GPUs (% of capacity)", .min = 0, .max = 100, .suffix = "%"};
//   c.bars.push_back({"bestfit", 92.9, 0});
//   std::string svg = RenderBarChart(c);
#pragma once

#include <string>
#include <vector>

#include "berth/sim/report/svg_plot.h"

namespace berth::sim {

struct Bar {
  std::string name;
  double value = 0;  // non-finite: drawn as "no data"
  size_t color = 0;  // index into the palette (SeriesColor)
};

struct BarChart {
  std::string id = "bars";
  std::string title;
  PlotAxis axis;            // the value axis (linear; NaN bounds: 0 and the data's maximum)
  std::string value_format = "%.2f";  // printf format of the printed value
  std::vector<Bar> bars;
  int width = 900;
};

// The chart as an <svg> element (height grows with the number of bars).
std::string RenderBarChart(const BarChart& chart);

}  // namespace berth::sim
