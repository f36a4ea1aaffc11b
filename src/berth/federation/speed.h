// Card-type speeds of a federation's members from the hetero throughput model
// (M5): for each member and GPU type, how fast a job runs there relative to
// the type the trace's durations were measured on.
#pragma once

#include <vector>

#include "berth/federation/estimator.h"
#include "berth/hetero/throughput.h"

namespace berth::federation {

// speed[m][t] = model.Relative(class, type t, fed.trace_reference_type) for
// a job class the model has not measured (the spec-based estimate with the
// median fitted mix); 1 for a type the catalog does not know, and everywhere
// when the federation names no reference type or there is no model.
SpeedTable BuildSpeedTable(const Federation& fed, const hetero::ThroughputModel* model);

}  // namespace berth::federation
