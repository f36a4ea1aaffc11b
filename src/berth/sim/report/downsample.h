// Thinning of long series for reports: a plot or a JSON file needs ~1,000
// points, not one per event. The shape is kept: each bucket keeps its lowest
// and highest point, so peaks and dips survive.
//
//   std::vector<Point> small = Downsample(r.allocation_over_time, 1000);
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "berth/sim/result.h"

namespace berth::sim {

// At most `max_points` points (at least 2 are kept when the input has 2),
// in input order. The first and last points are always kept. Input no longer
// than `max_points` comes back unchanged. A bucket that holds a non-finite y
// contributes one point with y = NaN, so a plot can break its line there.
std::vector<Point> Downsample(std::span<const Point> points, size_t max_points);

// The finite points only (for writers that cannot represent NaN, like JSON).
std::vector<Point> FinitePoints(std::span<const Point> points);

}  // namespace berth::sim
