// The profiled performance of one training application, as Pollux's
// simulator data gives it (../shared/data/pollux-philly/apps/<app>/):
//
//   placements.csv   placement,local_bsz,step_time,sync_time   ("22" = 2 nodes x 2 GPUs)
//   scalability.csv  num_nodes,num_replicas,local_bsz,step_time,sync_time
//   validation-<M>.csv progress,iteration,metric,grad_sqr,grad_var   (training at global batch M)
//
// Progress is measured in iterations at the application's base batch size
// (its smallest validation batch, M0) weighted by statistical efficiency: an
// iteration at batch M adds (M / M0) * E(M) where E(M) = (phi + M0) / (phi + M)
// and phi = M0 * grad_var / grad_sqr is the gradient noise scale (the files
// agree with this to the first digits; docs/results/pollux.md). A job is done
// when its progress reaches the end of the validation curves.
//
//   BERTH_ASSIGN_OR_RETURN(AppProfile cifar, LoadAppProfile(".../apps/cifar10"));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "berth/common/status.h"

namespace berth::elastic {

// One measured step: `gpus` GPUs over `nodes` nodes, `local_bsz` samples per GPU.
struct StepSample {
  int32_t nodes = 1;
  int32_t gpus = 1;
  int32_t local_bsz = 1;
  double step_time_s = 0;
  double sync_time_s = 0;
};

// The gradient noise scale along training at one global batch size.
struct NoiseCurve {
  int32_t batch = 0;
  std::vector<double> progress;  // increasing
  std::vector<double> phi;       // noise scale (samples) at each progress point
};

struct AppProfile {
  std::string name;
  std::vector<StepSample> steps;
  std::vector<NoiseCurve> curves;  // by batch, increasing
  int32_t base_batch = 0;          // M0: the smallest validation batch
  int32_t max_batch = 0;           // the largest validation batch
  int32_t min_local_bsz = 0;       // smallest / largest profiled per-GPU batch
  int32_t max_local_bsz = 0;
  double target_progress = 0;      // the end of the shortest validation curve

  // phi at `progress` for global batch `batch`: the curve of the nearest batch
  // (in log scale; ties to the smaller), linear in progress between points,
  // held constant beyond the ends.
  double NoiseScale(double progress, int32_t batch) const;
};

// Reads one application folder (its name is the folder's last component).
// Errors name the file and line.
StatusOr<AppProfile> LoadAppProfile(const std::string& dir);

}  // namespace berth::elastic
