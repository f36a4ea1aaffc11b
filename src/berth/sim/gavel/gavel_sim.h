// `berth simulate --workload gavel`: Gavel's heterogeneity experiment as a
// library call. Loads the accelerator catalog and the measured throughputs,
// fits the throughput model, draws the workload (or, with --trace, maps a
// real trace's jobs onto the model's classes: trace_jobs.h), and runs each
// policy through the round-based driver.
//
// Policy names here are allocation policies (hetero/allocation_policy.h):
// las, fifo, gavel-las, gavel-fifo, gavel-maxmin, gavel-tput, gavel-makespan.
// In this workload `fifo` is Gavel's heterogeneity-blind FIFO baseline (a
// random type, kept until the job ends); elsewhere `fifo` keeps its meaning
// (strict first-come first-served with best-fit placement). The names are
// resolved in the workload's own registry, so neither meaning changes the other.
#pragma once

#include "berth/sim/simulate.h"

namespace berth::sim::gavel {

StatusOr<SimulateOutput> RunGavelSimulation(const SimulateOptions& options);

// "4000:5000" -> {4000, 5000}; "" -> {-1, -1}.
StatusOr<std::pair<int64_t, int64_t>> ParseMeasureWindow(const std::string& text);

}  // namespace berth::sim::gavel
