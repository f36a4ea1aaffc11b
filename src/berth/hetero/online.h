// Online refinement of throughput estimates from the observed speed of
// running jobs, with the ThroughputModel as the prior.
//
// For a (class, type, consolidated) that has been observed, the estimate is
// the prior rate blended with what was seen, the prior counting as
// `prior_seconds` of observation:
//
//   rate = (prior_rate * prior_seconds + observed_steps) / (prior_seconds + observed_seconds)
//
// Types of the class not yet observed get the prior times the class's
// correction: how much faster or slower than its prior the class has run
// wherever it ran, shrunk the same way:
//
//   correction = (prior_seconds + sum observed_steps / prior_rate) / (prior_seconds + sum observed_seconds)
//
// Example: prior 10 steps/s, prior_seconds 600; a job runs 1,800 s at 8
// steps/s -> (6,000 + 14,400) / 2,400 = 8.5 steps/s; the class's other types
// are scaled by 0.85.
#pragma once

#include <map>
#include <string>

#include "berth/hetero/throughput.h"

namespace berth::hetero {

class OnlineThroughput {
 public:
  // `prior` is borrowed and must outlive this object.
  explicit OnlineThroughput(const ThroughputModel& prior, double prior_seconds = 600.0);

  // Records that a job of class `c` did `steps` in `seconds` on `type`.
  // Ignored when the prior has no rate for it or seconds <= 0.
  void Observe(const JobClass& c, const std::string& type, bool consolidated, double steps, double seconds);
  // The refined estimate (source of the prior; kMeasured stays kMeasured).
  Estimate Throughput(const JobClass& c, const std::string& type, bool consolidated = true) const;
  // The class's correction factor (1 with no observation).
  double Correction(const JobClass& c) const;
  double observed_seconds(const JobClass& c, const std::string& type, bool consolidated) const;

 private:
  struct Obs { double steps = 0, seconds = 0; };
  struct ClassObs { double prior_equiv_seconds = 0, seconds = 0; };
  using Key = std::tuple<JobClass, std::string, bool>;
  std::string Canonical(const std::string& type) const;

  const ThroughputModel& prior_;
  double prior_seconds_;
  std::map<Key, Obs> obs_;
  std::map<JobClass, ClassObs> class_obs_;
};

}  // namespace berth::hetero
