// The system-throughput model of a data-parallel training job, in the form
// the Pollux paper (Qiao et al., OSDI'21, section 3.2) gives it, and its fit
// to measured step times.
//
// Time of one iteration on K GPUs over N nodes with m samples per GPU:
//   T_grad(m)  = alpha_grad + beta_grad * m                 (compute the local gradient)
//   T_sync(K,N) = 0                                          if K == 1
//              = alpha_local + beta_local * (K - 2)          if N == 1 (all-reduce inside a node)
//              = alpha_node  + beta_node  * (K - 2)          if N > 1  (across nodes)
//   T_iter     = (T_grad^gamma + T_sync^gamma)^(1 / gamma)   (gamma >= 1: overlap of the two)
// Throughput = K * m / T_iter samples per second.
//
// Fit: the seven parameters minimise the root mean squared log error between
// T_iter and the measured step times (Nelder-Mead on log-parameters, from a
// fixed start; deterministic).
//
//   ThroughputFit f = FitThroughput(app.steps);   // f.params, f.rmsle
#pragma once

#include <span>

#include "berth/elastic/app_profile.h"

namespace berth::elastic {

struct ThroughputParams {
  double alpha_grad = 0.1, beta_grad = 0.01;
  double alpha_local = 0.01, beta_local = 0.001;
  double alpha_node = 0.1, beta_node = 0.01;
  double gamma = 1.5;

  double IterTime(int32_t gpus, int32_t nodes, double local_bsz) const;
};

struct ThroughputFit {
  ThroughputParams params;
  double rmsle = 0;            // root mean squared log error over the samples
  double mean_abs_rel_error = 0;  // mean |model - measured| / measured
  double max_abs_rel_error = 0;
  int32_t samples = 0;
};

ThroughputFit FitThroughput(std::span<const StepSample> steps);

}  // namespace berth::elastic
