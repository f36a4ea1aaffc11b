// Names of the queue tree's units.
#include "berth/tenancy/units.h"

namespace berth::tenancy {

const char* UnitName(Unit u) { return u == Unit::kNormalized ? "normalized" : "gpus"; }

StatusOr<Unit> ParseUnit(std::string_view text) {
  if (text == "gpus") return Unit::kGpus;
  if (text == "normalized") return Unit::kNormalized;
  return InvalidArgument("expected gpus or normalized, got '" + std::string(text) + "'");
}

}  // namespace berth::tenancy
