// SVG line and CDF charts.
#include "berth/sim/report/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace berth::sim {
namespace {

constexpr const char* kFont = "system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif";
constexpr const char* kAxisColor = "#4b5563";
constexpr const char* kGridColor = "#e5e7eb";
constexpr const char* kMinorGridColor = "#f3f4f6";
constexpr const char* kTextColor = "#374151";
constexpr const char* kGuideColor = "#9ca3af";
constexpr size_t kLegendNameChars = 28;

// A pixel coordinate with one decimal.
std::string Px(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// Keeps [A-Za-z0-9_-] so the id is safe in url(#...) references.
std::string SafeId(std::string_view id) {
  std::string out;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    out.push_back(ok ? c : '_');
  }
  return out.empty() ? "chart" : out;
}

// The first `max_chars` code points of a UTF-8 string, with an ellipsis when cut.
std::string Truncate(std::string_view s, size_t max_chars) {
  size_t chars = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) continue;  // continuation byte
    if (chars == max_chars) return std::string(s.substr(0, i)) + "\xE2\x80\xA6";
    ++chars;
  }
  return std::string(s);
}

double NiceStep(double range, int target) {
  const double raw = range / std::max(target - 1, 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  const double nice = f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10;
  return nice * mag;
}

// One axis: its data range mapped to a pixel range.
struct Scale {
  bool log = false;
  double lo = 0, hi = 1;
  std::vector<double> ticks;  // labelled, with a grid line
  std::vector<double> minor;  // grid line only (log axes)

  double Map(double v, double p0, double p1) const {
    double t;
    if (log) {
      v = std::max(v, lo);
      t = (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
    } else {
      t = (v - lo) / (hi - lo);
    }
    return p0 + t * (p1 - p0);
  }
};

// Multiples of `step` in [lo, hi].
std::vector<double> TicksWithStep(double lo, double hi, double step) {
  std::vector<double> ticks;
  const double first = std::ceil(lo / step - 1e-9);
  const double last = std::floor(hi / step + 1e-9);
  for (double k = first; k <= last && ticks.size() < 100; ++k) ticks.push_back(k == 0 ? 0.0 : k * step);
  return ticks;
}

// `target`: about how many ticks fit the axis length.
Scale MakeScale(const PlotAxis& axis, const std::vector<double>& values, int target) {
  Scale s;
  s.log = axis.log_scale;
  const bool fixed_lo = std::isfinite(axis.min) && (!s.log || axis.min > 0);
  const bool fixed_hi = std::isfinite(axis.max) && (!s.log || axis.max > 0);
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double v : values) {
    if (!std::isfinite(v) || (s.log && v <= 0)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (lo > hi) {  // no usable data
    lo = s.log ? 1 : 0;
    hi = s.log ? 10 : 1;
  }
  if (fixed_lo) lo = axis.min;
  if (fixed_hi) hi = axis.max;
  if (lo > hi) std::swap(lo, hi);
  if (s.log) {
    if (!fixed_lo) lo = std::pow(10.0, std::floor(std::log10(lo)));
    if (!fixed_hi) hi = std::pow(10.0, std::ceil(std::log10(hi)));
    if (hi <= lo * (1 + 1e-12)) hi = lo * 10;
    s.lo = lo;
    s.hi = hi;
    s.ticks = LogTicks(lo, hi);
    for (double d = std::pow(10.0, std::floor(std::log10(lo))); d < hi; d *= 10)
      for (int m = 2; m <= 9; ++m)
        if (d * m > lo && d * m < hi) s.minor.push_back(d * m);
    return s;
  }
  if (hi - lo <= 1e-12 * std::max(1.0, std::fabs(hi))) {  // all equal: widen
    const double pad = hi != 0 ? std::fabs(hi) * 0.1 : 1;
    if (!fixed_lo || fixed_hi) lo -= pad;
    if (!fixed_hi || fixed_lo) hi += pad;
  }
  const double step = NiceStep(hi - lo, target);
  if (!fixed_lo) lo = std::floor(lo / step + 1e-9) * step;
  if (!fixed_hi) hi = std::ceil(hi / step - 1e-9) * step;
  s.lo = lo;
  s.hi = hi;
  s.ticks = TicksWithStep(lo, hi, step);
  return s;
}

struct Frame {
  double left, top, right, bottom;
};

void AppendPath(std::string& svg, const std::vector<Point>& pts, const Scale& xs, const Scale& ys, const Frame& f,
                bool step, const std::string& color, const char* extra) {
  std::string d;
  std::vector<std::pair<double, double>> dots;  // segments of a single point
  double seg_x = 0, seg_y = 0, prev_y = 0;
  int seg_len = 0;
  auto end_segment = [&] {
    if (seg_len == 1) dots.emplace_back(seg_x, seg_y);
    seg_len = 0;
  };
  for (const Point& p : pts) {
    if (!std::isfinite(p.x) || !std::isfinite(p.y)) {
      end_segment();
      continue;
    }
    const double px = xs.Map(p.x, f.left, f.right);
    const double py = ys.Map(p.y, f.bottom, f.top);
    if (seg_len == 0) {
      d += "M" + Px(px) + " " + Px(py);
      seg_x = px;
      seg_y = py;
    } else {
      if (step) d += "L" + Px(px) + " " + Px(prev_y);
      d += "L" + Px(px) + " " + Px(py);
    }
    prev_y = py;
    ++seg_len;
  }
  end_segment();
  if (!d.empty()) {
    svg += "<path d=\"" + d + "\" fill=\"none\" stroke=\"" + color +
           "\" stroke-width=\"1.8\" stroke-linejoin=\"round\" stroke-linecap=\"round\"" + extra + "/>";
  }
  for (const auto& [x, y] : dots)
    svg += "<circle cx=\"" + Px(x) + "\" cy=\"" + Px(y) + "\" r=\"3\" fill=\"" + color + "\"/>";
}

}  // namespace

std::string SeriesColor(size_t i) {
  // Tableau 10.
  static constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                             "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return kPalette[i % 10];
}

std::string EscapeXml(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

std::vector<double> NiceTicks(double lo, double hi, int target) {
  if (!(lo < hi) || !std::isfinite(lo) || !std::isfinite(hi)) return {};
  return TicksWithStep(lo, hi, NiceStep(hi - lo, target));
}

std::vector<double> LogTicks(double lo, double hi) {
  std::vector<double> ticks;
  if (!(lo > 0 && lo < hi) || !std::isfinite(hi)) return ticks;
  const bool dense = std::log10(hi) - std::log10(lo) < 2;
  for (double d = std::pow(10.0, std::floor(std::log10(lo))); d <= hi * (1 + 1e-9) && ticks.size() < 100; d *= 10) {
    for (double m : {1.0, 2.0, 5.0}) {
      if (m != 1 && !dense) continue;
      const double v = d * m;
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) ticks.push_back(v);
    }
  }
  return ticks;
}

std::string FormatTick(double v) {
  if (!std::isfinite(v)) return "";
  const char* suffix = "";
  const double a = std::fabs(v);
  if (a >= 1e9) {
    v /= 1e9;
    suffix = "G";
  } else if (a >= 1e6) {
    v /= 1e6;
    suffix = "M";
  } else if (a >= 1e3) {
    v /= 1e3;
    suffix = "k";
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g%s", v, suffix);
  return buf;
}

std::vector<Point> EmpiricalCdf(std::span<const double> values, size_t max_points) {
  std::vector<double> v;
  v.reserve(values.size());
  for (double x : values)
    if (std::isfinite(x)) v.push_back(x);
  std::vector<Point> out;
  if (v.empty()) return out;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  max_points = std::max<size_t>(max_points, 1);
  out.push_back({v.front(), 0});
  // Corners at ranks k (1-based): the CDF reaches k/n at v[k-1]. Ties keep
  // the last rank only.
  const size_t m = std::min(n, max_points);
  for (size_t j = 1; j <= m; ++j) {
    const size_t k = (j * n + m - 1) / m;  // ceil(j * n / m), k in [1, n], rising
    if (k < n && v[k] == v[k - 1]) continue;
    const Point p{v[k - 1], 100.0 * static_cast<double>(k) / static_cast<double>(n)};
    if (out.size() > 1 && out.back().x == p.x) out.back() = p;
    else out.push_back(p);
  }
  return out;
}

std::string RenderCdfChart(std::string id, std::string title, PlotAxis x, std::span<const CdfSample> samples,
                           size_t max_points) {
  LineChart c;
  c.id = std::move(id);
  c.title = std::move(title);
  c.x = std::move(x);
  c.y.label = "Share of jobs at or below (%)";
  c.y.min = 0;
  c.y.max = 100;
  c.y.suffix = "%";
  c.step = true;
  for (const CdfSample& s : samples) c.series.push_back({s.name, EmpiricalCdf(s.values, max_points), s.color});
  return RenderLineChart(c);
}

std::string RenderLineChart(const LineChart& chart) {
  const std::string id = SafeId(chart.id);
  const double w = std::max(chart.width, 200), h = std::max(chart.height, 150);

  std::vector<double> xs_data, ys_data;
  bool any = false;
  for (const auto& s : chart.series) {
    for (const Point& p : s.points) {
      if (!std::isfinite(p.x) || !std::isfinite(p.y)) continue;
      xs_data.push_back(p.x);
      ys_data.push_back(p.y);
      any = true;
    }
  }
  size_t name_chars = 0;
  for (const auto& s : chart.series) name_chars = std::max(name_chars, std::min(s.name.size(), kLegendNameChars));
  for (const auto& g : chart.guides) name_chars = std::max(name_chars, std::min(g.name.size(), kLegendNameChars));
  const double legend_w = name_chars == 0 ? 16 : std::clamp(48.0 + 7.2 * name_chars, 96.0, 260.0);
  const Frame f{64, chart.title.empty() ? 16.0 : 40.0, w - legend_w - 12, h - 52};
  // About one labelled tick per 90 px across, per 50 px up.
  const Scale xs = MakeScale(chart.x, xs_data, std::max(3, static_cast<int>((f.right - f.left) / 90)));
  const Scale ys = MakeScale(chart.y, ys_data, std::max(3, static_cast<int>((f.bottom - f.top) / 50)));

  std::string svg;
  svg.reserve(4096);
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + Px(w) + " " + Px(h) + "\" width=\"" + Px(w) +
         "\" height=\"" + Px(h) + "\" role=\"img\" font-family=\"" + kFont + "\" font-size=\"12\" fill=\"" +
         kTextColor + "\"";
  if (!chart.title.empty()) svg += " aria-labelledby=\"" + id + "-title\"";
  svg += ">";
  if (!chart.title.empty()) {
    svg += "<title id=\"" + id + "-title\">" + EscapeXml(chart.title) + "</title>";
    svg += "<text x=\"" + Px(f.left) + "\" y=\"22\" font-size=\"15\" font-weight=\"600\" fill=\"#111827\">" +
           EscapeXml(chart.title) + "</text>";
  }
  svg += "<defs><clipPath id=\"" + id + "-clip\"><rect x=\"" + Px(f.left) + "\" y=\"" + Px(f.top - 2) +
         "\" width=\"" + Px(f.right - f.left) + "\" height=\"" + Px(f.bottom - f.top + 4) +
         "\"/></clipPath></defs>";

  // Grid and ticks.
  svg += "<g stroke-width=\"1\">";
  for (double v : xs.minor) {
    const std::string x = Px(xs.Map(v, f.left, f.right));
    svg += "<line x1=\"" + x + "\" y1=\"" + Px(f.top) + "\" x2=\"" + x + "\" y2=\"" + Px(f.bottom) + "\" stroke=\"" +
           kMinorGridColor + "\"/>";
  }
  for (double v : ys.minor) {
    const std::string y = Px(ys.Map(v, f.bottom, f.top));
    svg += "<line x1=\"" + Px(f.left) + "\" y1=\"" + y + "\" x2=\"" + Px(f.right) + "\" y2=\"" + y + "\" stroke=\"" +
           kMinorGridColor + "\"/>";
  }
  for (double v : xs.ticks) {
    const std::string x = Px(xs.Map(v, f.left, f.right));
    svg += "<line x1=\"" + x + "\" y1=\"" + Px(f.top) + "\" x2=\"" + x + "\" y2=\"" + Px(f.bottom + 4) +
           "\" stroke=\"" + kGridColor + "\"/>";
  }
  for (double v : ys.ticks) {
    const std::string y = Px(ys.Map(v, f.bottom, f.top));
    svg += "<line x1=\"" + Px(f.left - 4) + "\" y1=\"" + y + "\" x2=\"" + Px(f.right) + "\" y2=\"" + y +
           "\" stroke=\"" + kGridColor + "\"/>";
  }
  svg += "</g>";
  svg += "<g font-size=\"11\">";
  for (double v : xs.ticks) {
    svg += "<text x=\"" + Px(xs.Map(v, f.left, f.right)) + "\" y=\"" + Px(f.bottom + 17) +
           "\" text-anchor=\"middle\">" + EscapeXml(FormatTick(v) + chart.x.suffix) + "</text>";
  }
  for (double v : ys.ticks) {
    svg += "<text x=\"" + Px(f.left - 8) + "\" y=\"" + Px(ys.Map(v, f.bottom, f.top) + 4) +
           "\" text-anchor=\"end\">" + EscapeXml(FormatTick(v) + chart.y.suffix) + "</text>";
  }
  svg += "</g>";
  // Axes.
  svg += "<path d=\"M" + Px(f.left) + " " + Px(f.top) + "V" + Px(f.bottom) + "H" + Px(f.right) +
         "\" fill=\"none\" stroke=\"" + kAxisColor + "\" stroke-width=\"1\"/>";
  if (!chart.x.label.empty()) {
    svg += "<text x=\"" + Px((f.left + f.right) / 2) + "\" y=\"" + Px(h - 12) + "\" text-anchor=\"middle\">" +
           EscapeXml(chart.x.label) + "</text>";
  }
  if (!chart.y.label.empty()) {
    const std::string cy = Px((f.top + f.bottom) / 2);
    svg += "<text x=\"16\" y=\"" + cy + "\" text-anchor=\"middle\" transform=\"rotate(-90 16 " + cy + ")\">" +
           EscapeXml(chart.y.label) + "</text>";
  }

  // Data.
  svg += "<g clip-path=\"url(#" + id + "-clip)\">";
  for (const auto& g : chart.guides) {
    svg += "<g><title>" + EscapeXml(g.name) + "</title>";
    AppendPath(svg, g.points, xs, ys, f, false, kGuideColor, " stroke-dasharray=\"5 4\"");
    svg += "</g>";
  }
  for (const auto& s : chart.series) {
    svg += "<g><title>" + EscapeXml(s.name) + "</title>";
    AppendPath(svg, s.points, xs, ys, f, chart.step, SeriesColor(s.color),
               s.color >= 10 ? " stroke-dasharray=\"7 3\"" : "");
    svg += "</g>";
  }
  svg += "</g>";
  if (!any) {
    svg += "<text x=\"" + Px((f.left + f.right) / 2) + "\" y=\"" + Px((f.top + f.bottom) / 2) +
           "\" text-anchor=\"middle\" font-size=\"14\" fill=\"#9ca3af\">No data</text>";
  }

  // Legend, right of the plot.
  double ly = f.top + 8;
  const double lx = f.right + 16;
  auto legend_entry = [&](const std::string& name, const std::string& color, const char* dash) {
    svg += "<g><title>" + EscapeXml(name) + "</title><line x1=\"" + Px(lx) + "\" y1=\"" + Px(ly) + "\" x2=\"" +
           Px(lx + 20) + "\" y2=\"" + Px(ly) + "\" stroke=\"" + color + "\" stroke-width=\"2.5\"" + dash +
           "/><text x=\"" + Px(lx + 26) + "\" y=\"" + Px(ly + 4) + "\">" +
           EscapeXml(Truncate(name, kLegendNameChars)) + "</text></g>";
    ly += 18;
  };
  for (const auto& s : chart.series)
    legend_entry(s.name, SeriesColor(s.color), s.color >= 10 ? " stroke-dasharray=\"7 3\"" : "");
  for (const auto& g : chart.guides) legend_entry(g.name, kGuideColor, " stroke-dasharray=\"5 4\"");
  svg += "</svg>";
  return svg;
}

}  // namespace berth::sim
