// Card-type speeds of members (speed.h).
#include "berth/federation/speed.h"

namespace berth::federation {

SpeedTable BuildSpeedTable(const Federation& fed, const hetero::ThroughputModel* model) {
  SpeedTable t(fed.members.size());
  for (size_t m = 0; m < fed.members.size(); ++m) {
    for (const auto& type : fed.members[m].cluster->gpu_types()) {
      double s = 1;
      if (model != nullptr && !fed.trace_reference_type.empty()) {
        const double rel = model->Relative(hetero::JobClass{"", 1}, type.name, fed.trace_reference_type);
        if (rel > 0) s = rel;
      }
      t[m].push_back(s);
    }
  }
  return t;
}

}  // namespace berth::federation
