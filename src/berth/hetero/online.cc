// Online throughput refinement (see online.h for the update rule).
#include "berth/hetero/online.h"

namespace berth::hetero {

OnlineThroughput::OnlineThroughput(const ThroughputModel& prior, double prior_seconds)
    : prior_(prior), prior_seconds_(prior_seconds > 0 ? prior_seconds : 1.0) {}

std::string OnlineThroughput::Canonical(const std::string& type) const {
  const AcceleratorSpec* s = prior_.catalog().Find(type);
  return s ? s->name : type;
}

void OnlineThroughput::Observe(const JobClass& c, const std::string& type, bool consolidated, double steps,
                               double seconds) {
  if (seconds <= 0 || steps < 0) return;
  Estimate p = prior_.Throughput(c, type, consolidated);
  if (p.source == Source::kUnknown || p.steps_per_s <= 0) return;
  Obs& o = obs_[Key{c, Canonical(type), consolidated}];
  o.steps += steps;
  o.seconds += seconds;
  ClassObs& co = class_obs_[c];
  co.prior_equiv_seconds += steps / p.steps_per_s;
  co.seconds += seconds;
}

double OnlineThroughput::Correction(const JobClass& c) const {
  auto it = class_obs_.find(c);
  if (it == class_obs_.end()) return 1.0;
  return (prior_seconds_ + it->second.prior_equiv_seconds) / (prior_seconds_ + it->second.seconds);
}

double OnlineThroughput::observed_seconds(const JobClass& c, const std::string& type, bool consolidated) const {
  auto it = obs_.find(Key{c, Canonical(type), consolidated});
  return it == obs_.end() ? 0 : it->second.seconds;
}

Estimate OnlineThroughput::Throughput(const JobClass& c, const std::string& type, bool consolidated) const {
  Estimate p = prior_.Throughput(c, type, consolidated);
  if (p.source == Source::kUnknown) return p;
  auto it = obs_.find(Key{c, Canonical(type), consolidated});
  if (it != obs_.end()) {
    p.steps_per_s = (p.steps_per_s * prior_seconds_ + it->second.steps) / (prior_seconds_ + it->second.seconds);
    return p;
  }
  p.steps_per_s *= Correction(c);
  return p;
}

}  // namespace berth::hetero
