// Helpers shared by score plugins.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>

#include "berth/framework/registry.h"

namespace berth::plugins {

// The largest machine of the FGD paper's cluster, used by its scores to bring
// CPU and GPU amounts to a common 0..1 scale.
inline constexpr double kMaxSpecCpu = 128000.0;  // milli-CPU
inline constexpr double kMaxSpecGpu = 8000.0;    // milli-GPU

// Min-max normalization to 0..100 in integer arithmetic, as kube-scheduler's
// score normalizers do: (s - min) * 100 / (max - min); all 0 when all equal.
inline void MinMaxNormalize(std::span<int64_t> scores) {
  if (scores.empty()) return;
  auto [lo, hi] = std::minmax_element(scores.begin(), scores.end());
  const int64_t min = *lo, max = *hi;
  for (auto& s : scores) s = max == min ? 0 : (s - min) * 100 / (max - min);
}

template <typename T>
framework::PluginRegistry::Factory SimpleFactory() {
  return [](const framework::PluginArgs&) -> StatusOr<std::unique_ptr<framework::Plugin>> {
    return std::unique_ptr<framework::Plugin>(std::make_unique<T>());
  };
}

}  // namespace berth::plugins
