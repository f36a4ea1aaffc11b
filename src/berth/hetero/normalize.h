// Normalized compute units: a job's GPUs expressed as reference-equivalents
// for its class ("H100-equivalents"). n GPUs of type t for class c are worth
// n * speed(c, t) / speed(c, ref) reference GPUs. Quantities are integers in
// milli-reference-GPUs (MilliRef), like MilliGpu.
//
//   StatusOr<Normalizer> n = Normalizer::Create(model, "H100");
//   MilliRef eq = n->Equivalents({"ResNet-50 (batch size 64)", 1}, "K80", 8);  // ~8 * 0.04 H100s
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "berth/common/status.h"
#include "berth/hetero/online.h"
#include "berth/hetero/throughput.h"

namespace berth::hetero {

using MilliRef = int64_t;  // 1000 = one reference GPU
inline constexpr MilliRef kMilliPerRef = 1000;

class Normalizer {
 public:
  // `model` (and `online`, if given) are borrowed. Error if `reference` is
  // not in the model's catalog.
  static StatusOr<Normalizer> Create(const ThroughputModel& model, std::string reference = "H100",
                                     const OnlineThroughput* online = nullptr);

  const std::string& reference() const { return reference_; }
  const ThroughputModel& model() const { return *model_; }
  // The catalog entry of a type name or alias; nullptr when unknown.
  const AcceleratorSpec* model_catalog_find(std::string_view type) const { return model_->catalog().Find(type); }
  // Reference GPUs per GPU of `type` for class `c` (0: cannot run there;
  // unknown types count as 0).
  double Factor(const JobClass& c, std::string_view type) const;
  // n GPUs of `type` in milli-reference-GPUs (rounded to nearest).
  MilliRef Equivalents(const JobClass& c, std::string_view type, int64_t gpus) const;
  // Demand of a job that accepts several types, before it is placed: its
  // GPUs valued on the fastest accepted type (the most it can consume).
  MilliRef Demand(const JobClass& c, std::span<const std::string> accepted_types, int64_t gpus) const;

 private:
  Normalizer() = default;
  const ThroughputModel* model_ = nullptr;
  const OnlineThroughput* online_ = nullptr;
  std::string reference_;
};

}  // namespace berth::hetero
