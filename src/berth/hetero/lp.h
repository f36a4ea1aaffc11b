// The allocation linear program of heterogeneity-aware policies (Gavel-style),
// solved with GLPK's simplex.
//
// Variables x[j][t] in [0, 1]: the share of time job j spends on type t.
//   sum_t x[j][t] <= 1                            (a job runs on one type at a time)
//   sum_j count_j * scale_j * x[j][t] <= cap[t]   (GPUs of each type)
//   x[j][t] = 0 where coef[j][t] <= 0             (cannot run there)
// Objectives over the per-job rate r_j = sum_t coef[j][t] * x[j][t]:
//   kMaxMin: maximize min_j r_j, then (second phase, keeping the minimum)
//            maximize sum_j count_j * r_j so no capacity is left idle for nothing;
//   kMaxSum: maximize sum_j count_j * r_j.
// Rows with identical (scale, coef) are merged first when `aggregate` is set:
// identical jobs get identical shares in some optimum of either objective, so
// the answer is the same and the program is much smaller.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "berth/common/status.h"

namespace berth::hetero {

struct LpJob {
  std::vector<double> coef;  // per type
  int32_t scale = 1;         // GPUs per job
  int32_t count = 1;         // identical jobs this row stands for
};

enum class LpObjective { kMaxMin, kMaxSum };

struct LpOptions {
  LpObjective objective = LpObjective::kMaxMin;
  bool aggregate = true;
  bool second_phase = true;  // kMaxMin only
};

struct LpSolution {
  std::vector<std::vector<double>> x;  // per input job, per type
  double objective = 0;                // min rate (kMaxMin) or total rate (kMaxSum)
  int32_t rows_solved = 0;             // job rows after aggregation
  int32_t simplex_iterations = 0;
};

// Solves the program. Error (Internal) if GLPK fails; an empty job list gives
// an empty solution.
StatusOr<LpSolution> SolveAllocationLp(std::span<const LpJob> jobs, std::span<const double> capacity,
                                       const LpOptions& options = {});

}  // namespace berth::hetero
