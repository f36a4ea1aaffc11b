// Min/max bucket downsampling.
#include "berth/sim/report/downsample.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace berth::sim {
namespace {

bool Finite(const Point& p) { return std::isfinite(p.x) && std::isfinite(p.y); }

}  // namespace

std::vector<Point> Downsample(std::span<const Point> points, size_t max_points) {
  const size_t n = points.size();
  max_points = std::max<size_t>(max_points, 2);
  if (n <= max_points) return {points.begin(), points.end()};
  std::vector<Point> out;
  out.reserve(max_points);
  out.push_back(points.front());
  // Interior points [1, n-1) go into buckets of equal index span; each bucket
  // yields up to two points, plus a break marker if it holds a non-finite
  // point. With b buckets and k non-finite points that is at most
  // 2b + min(k, b) points between the ends.
  const size_t budget = max_points - 2;
  const size_t breaks = static_cast<size_t>(std::count_if(points.begin(), points.end(), [](const Point& p) {
    return !Finite(p);
  }));
  const size_t buckets = breaks == 0 ? budget / 2
                                     : std::max(budget >= breaks ? (budget - breaks) / 2 : 0, budget / 3);
  const size_t interior = n - 2;
  if (buckets == 0) {
    out.push_back(points.back());
    return out;
  }
  for (size_t b = 0; b < buckets; ++b) {
    const size_t lo = 1 + b * interior / buckets;
    const size_t hi = 1 + (b + 1) * interior / buckets;
    if (lo >= hi) continue;
    size_t min_i = hi, max_i = hi;
    bool broken = false;
    for (size_t i = lo; i < hi; ++i) {
      if (!Finite(points[i])) {
        broken = true;
        continue;
      }
      if (min_i == hi || points[i].y < points[min_i].y) min_i = i;
      if (max_i == hi || points[i].y > points[max_i].y) max_i = i;
    }
    if (min_i != hi) {
      out.push_back(points[std::min(min_i, max_i)]);
      if (min_i != max_i) out.push_back(points[std::max(min_i, max_i)]);
    }
    if (broken) out.push_back({points[hi - 1].x, std::numeric_limits<double>::quiet_NaN()});
  }
  out.push_back(points.back());
  return out;
}

std::vector<Point> FinitePoints(std::span<const Point> points) {
  std::vector<Point> out;
  out.reserve(points.size());
  for (const Point& p : points)
    if (Finite(p)) out.push_back(p);
  return out;
}

}  // namespace berth::sim
