// `berth simulate` flags of the failure model (docs/failures.md), kept apart
// from simulate_cmd.cc: --failures, --spares, --repair, --lend-spares,
// --best-effort-tenants, --restart-cost, --repair-cost, --until.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "berth/common/status.h"
#include "berth/sim/simulate.h"

namespace berth::apps {

struct FailureFlags {
  std::string restart_cost;
  std::string repair_cost;
  std::string until;
};

void AddFailureOptions(CLI::App* cmd, sim::SimulateOptions& sim, FailureFlags& flags);
// Parses the durations into `sim`; errors name the flag.
Status ParseFailureFlags(const FailureFlags& flags, sim::SimulateOptions& sim);

}  // namespace berth::apps
