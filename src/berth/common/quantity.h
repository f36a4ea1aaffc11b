// Integer resource quantities. GPUs are counted in milli-GPU (1 GPU = 1000),
// CPU in milli-cores, memory in MiB. Time in the core is integer microseconds.
#pragma once

#include <cstdint>

namespace berth {

using MilliGpu = int32_t;
using MilliCpu = int64_t;
using MiB = int64_t;
inline constexpr MilliGpu kMilliPerGpu = 1000;

// Time: microseconds since the epoch of the clock in use (trace start in the
// simulator, Unix epoch in the server).
using TimeUs = int64_t;
inline constexpr TimeUs kUsPerSecond = 1'000'000;
inline constexpr TimeUs SecondsToUs(double s) { return static_cast<TimeUs>(s * 1e6 + (s >= 0 ? 0.5 : -0.5)); }
inline constexpr double UsToSeconds(TimeUs t) { return static_cast<double>(t) / 1e6; }

}  // namespace berth
