// GPU types and sets of them. A GpuTypeId is a dense index into the cluster's
// type table; a GpuTypeSet is a bitset over those ids ("any of V100M16|V100M32").
// An empty set means "any GPU type".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "berth/common/ids.h"
#include "berth/common/quantity.h"

namespace berth::cluster {

inline constexpr int kMaxGpuTypes = 64;

struct GpuType {
  std::string name;
  MiB memory_mib = 0;  // 0 when unknown
  // Free-form facts from a cluster file (e.g. {"bf16_tflops", "989"}), in file
  // order; informational, read by runtime models and reports.
  std::vector<std::pair<std::string, std::string>> specs;
};

class GpuTypeSet {
 public:
  GpuTypeSet() = default;
  static GpuTypeSet Of(GpuTypeId t) { GpuTypeSet s; s.Add(t); return s; }
  void Add(GpuTypeId t) { bits_ |= (uint64_t{1} << t.value()); }
  bool empty() const { return bits_ == 0; }
  // True when the set is empty (any type) or holds t.
  bool Accepts(GpuTypeId t) const { return bits_ == 0 || (t.valid() && (bits_ >> t.value()) & 1); }
  bool Contains(GpuTypeId t) const { return t.valid() && (bits_ >> t.value()) & 1; }
  uint64_t bits() const { return bits_; }
  bool operator==(const GpuTypeSet&) const = default;

 private:
  uint64_t bits_ = 0;
};

// Memory of well-known accelerator types (MiB), or 0 if unknown.
MiB KnownGpuMemoryMib(std::string_view type_name);

}  // namespace berth::cluster
