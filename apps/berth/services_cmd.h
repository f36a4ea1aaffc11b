// `berth simulate --services FILE`: services with autoscaling beside the
// trace's batch jobs on one cluster (sim/service_sim.h, docs/services.md).
// simulate_cmd.cc parses the flags and hands them here.
#pragma once

#include <string>

#include "berth/sim/simulate.h"

namespace berth::apps {

struct ServiceSimFlags {
  std::string services;                          // the services file (YAML)
  std::string autoscale = "static,reactive,predictive";  // scaling modes to compare
  double rate_scale = 1;  // batch arrivals: submit gaps divided by this (--rate-scale)
  // Co-location modes to compare (none, colocate, static, unbounded) and
  // overrides of the file's colocation settings ("" / < 0: the file's).
  std::string colocation = "none";
  double overcommit = -1;
  std::string yield_best_effort;
  std::string yield_training_grace;
};

// Runs every scaling mode once per policy of `sim.policies` (default
// `services`) and writes `json` ("" none, "-" standard output). Returns the exit code.
int RunServicesSimulate(const ServiceSimFlags& flags, const sim::SimulateOptions& sim, const std::string& json);

}  // namespace berth::apps
