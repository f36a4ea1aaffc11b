// Reference-equivalent conversion.
#include "berth/hetero/normalize.h"

#include <algorithm>
#include <cmath>

namespace berth::hetero {

StatusOr<Normalizer> Normalizer::Create(const ThroughputModel& model, std::string reference,
                                        const OnlineThroughput* online) {
  const AcceleratorSpec* r = model.catalog().Find(reference);
  if (!r) return InvalidArgument("reference type '" + reference + "' is not in the accelerator catalog");
  Normalizer n;
  n.model_ = &model;
  n.online_ = online;
  n.reference_ = r->name;
  return n;
}

double Normalizer::Factor(const JobClass& c, std::string_view type) const {
  if (online_) {
    Estimate t = online_->Throughput(c, std::string(type));
    Estimate r = online_->Throughput(c, reference_);
    if (t.source != Source::kUnknown && r.source != Source::kUnknown && r.steps_per_s > 0)
      return t.steps_per_s / r.steps_per_s;
  }
  return std::max(0.0, model_->Relative(c, type, reference_));
}

MilliRef Normalizer::Equivalents(const JobClass& c, std::string_view type, int64_t gpus) const {
  return std::llround(static_cast<double>(gpus) * kMilliPerRef * Factor(c, type));
}

MilliRef Normalizer::Demand(const JobClass& c, std::span<const std::string> accepted, int64_t gpus) const {
  MilliRef best = 0;
  for (const auto& t : accepted) best = std::max(best, Equivalents(c, t, gpus));
  return best;
}

}  // namespace berth::hetero
