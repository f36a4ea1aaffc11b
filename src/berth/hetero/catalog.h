// The accelerator catalog: published peak specifications of each accelerator
// type (dense BF16/FP16/FP32 TFLOP/s, memory size and bandwidth, intra-node
// link bandwidth, an indicative price), read from a YAML data file such as
// data/accelerators.yaml. Types are found by name or alias, case-insensitively
// ("v100" finds V100-16).
//
//   StatusOr<Catalog> c = LoadCatalog("data/accelerators.yaml");
//   const AcceleratorSpec* h100 = c->Find("H100");
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "berth/common/status.h"

namespace berth::hetero {

// Numeric precision a job class computes in; picks the compute peak.
enum class Precision { kFp32, kFp16, kBf16 };
StatusOr<Precision> ParsePrecision(std::string_view s);

struct AcceleratorSpec {
  std::string name;
  std::vector<std::string> aliases;
  std::string vendor;
  std::string generation;
  double bf16_tflops = 0;  // 0 when the chip has no BF16
  double fp16_tflops = 0;
  double fp32_tflops = 0;
  double memory_gib = 0;
  double memory_bw_gbs = 0;
  double link_gbs = 0;
  double price_per_hour = 0;  // 0 when unknown
  std::string source;         // key into the file's list of sources

  // Peak TFLOP/s at a precision; BF16 falls back to FP16, FP16 to FP32.
  double PeakTflops(Precision p) const;
};

class Catalog {
 public:
  // Adds a type. Error if its name or an alias is already taken.
  Status Add(AcceleratorSpec spec);
  // By name or alias, case-insensitive; nullptr when unknown.
  const AcceleratorSpec* Find(std::string_view name) const;
  const std::vector<AcceleratorSpec>& types() const { return types_; }
  size_t size() const { return types_.size(); }

 private:
  std::vector<AcceleratorSpec> types_;
  std::map<std::string, size_t> by_key_;  // lower-cased name or alias -> index
};

// Parses the YAML text of a catalog; `origin` names it in errors
// ("data/accelerators.yaml:42: fp32_tflops must be a positive number").
StatusOr<Catalog> ParseCatalog(const std::string& yaml_text, const std::string& origin);
StatusOr<Catalog> LoadCatalog(const std::string& path);

// Lower-cased copy, for lookups.
std::string Lower(std::string_view s);

}  // namespace berth::hetero
