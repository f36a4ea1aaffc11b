// The JSON of a federation simulation: an array with one object per policy
// (docs/federation.md lists every key).
#pragma once

#include <string>
#include <vector>

#include "berth/federation/fed_sim.h"

namespace berth::federation {

std::string FedResultsToJson(const std::vector<FedResult>& results);
// A fixed-width table, one line per policy, for the terminal.
std::string FedResultsTable(const std::vector<FedResult>& results);

}  // namespace berth::federation
