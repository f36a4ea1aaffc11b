// `berth simulate --federation FILE`: the federation simulator behind the
// simulate command (docs/federation.md). simulate_cmd.cc parses the flags and
// hands them here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "berth/sim/simulate.h"
#include "cluster_flags.h"

namespace berth::apps {

struct FederationFlags {
  std::string federation;      // the federation file
  double rate_scale = 1;       // arrival rate multiplier (submit gaps divided by it)
  std::string member_policy = "bestfit";  // every member scheduler's policy
  int32_t batch_min = 8;       // arrivals at one instant dispatched as an assignment problem
  double deadline_factor = 0;  // > 0: a job without a deadline gets factor x its duration
  std::string member_failures; // a file of member failures (in place of the federation file's `failures`)
};

// Runs every policy of `sim.policies` (dispatch policies) on the federation
// and writes `json` ("" none, "-" standard output). Returns the exit code.
int RunFederationSimulate(const FederationFlags& ff, const sim::SimulateOptions& sim, const ClusterLoader& load,
                          const std::string& json, bool quiet);

}  // namespace berth::apps
