// Known accelerator memory sizes, used when a cluster file does not state them.
#include "berth/cluster/gpu_type.h"

#include <utility>

namespace berth::cluster {

MiB KnownGpuMemoryMib(std::string_view name) {
  static constexpr std::pair<std::string_view, int> kGiB[] = {
      {"H100", 80}, {"H800", 80}, {"H20", 96},   {"H200", 141}, {"B200", 192}, {"A100", 80},
      {"A100-40", 40}, {"A100-80", 80}, {"A800", 80}, {"V100", 32}, {"V100M16", 16}, {"V100M32", 32},
      {"V100-16", 16}, {"V100-32", 32}, {"P100", 16}, {"K80", 12},  {"T4", 16},   {"A10", 24},
      {"L40S", 48}, {"L4", 24}, {"910B", 64}, {"Ascend910B", 64},
  };
  for (const auto& [n, gib] : kGiB)
    if (n == name) return MiB{gib} * 1024;
  return 0;
}

}  // namespace berth::cluster
