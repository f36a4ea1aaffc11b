// Goodput of a training job (Pollux, OSDI'21, section 3): system throughput
// times statistical efficiency, in progress units per second, and the time a
// job needs to reach its target progress on a fixed allocation.
//
//   goodput(K, N, M, p) = M * E_p(M) / (M0 * T_iter(K, N, M / K))
//   E_p(M)              = (phi(p) + M0) / (phi(p) + M)
// where M is the global batch size, M0 the application's base batch, phi(p)
// the gradient noise scale at progress p (app_profile.h) and T_iter the fitted
// throughput model (throughput_model.h). Progress is in base-batch
// iterations, so goodput at M = M0 on one GPU is 1 / T_iter. A per-GPU batch
// above the largest profiled one runs as accumulated micro-batches.
//
// A catalog holds one model per application, loaded and fitted from a folder
// of application profiles:
//
//   BERTH_ASSIGN_OR_RETURN(auto cat, LoadGoodputCatalog(".../pollux-philly/apps"));
//   const GoodputModel* m = cat->Find("cifar10");
//   double s = m->SecondsToFinish(0, 4, 1, 512);
#pragma once

#include <map>
#include <memory>
#include <string>

#include "berth/elastic/app_profile.h"
#include "berth/elastic/throughput_model.h"

namespace berth::elastic {

class GoodputModel {
 public:
  GoodputModel(AppProfile app, ThroughputFit fit);

  const AppProfile& app() const { return app_; }
  const ThroughputFit& fit() const { return fit_; }
  double target() const { return app_.target_progress; }

  double Efficiency(int32_t batch, double progress) const;
  // Progress per second; 0 when the allocation cannot run the batch.
  double Goodput(int32_t gpus, int32_t nodes, int32_t batch, double progress) const;
  // The batch sizes this many GPUs can run: [lo, hi] (lo > hi: none).
  std::pair<int32_t, int32_t> BatchRange(int32_t gpus) const;
  // The batch in BatchRange that maximises goodput at `progress` (a grid of
  // 24 log-spaced sizes plus both ends; ties to the smaller); 0 if none.
  int32_t BestBatch(int32_t gpus, int32_t nodes, double progress) const;

  // Seconds of work from `progress` to the target on a fixed allocation and
  // batch (exact for the piecewise-linear noise scale up to the integration
  // grid); +inf if the allocation cannot run.
  double SecondsToFinish(double progress, int32_t gpus, int32_t nodes, int32_t batch) const;
  // Progress reached after `seconds` of work from `progress` (capped at the target).
  double ProgressAfter(double progress, int32_t gpus, int32_t nodes, int32_t batch, double seconds) const;

 private:
  // Integration grid: the curve's progress points, subdivided.
  double Step() const { return app_.target_progress / 400.0; }
  AppProfile app_;
  ThroughputFit fit_;
};

class GoodputCatalog {
 public:
  void Add(std::unique_ptr<GoodputModel> m);
  const GoodputModel* Find(const std::string& app) const;
  const std::map<std::string, std::unique_ptr<GoodputModel>>& all() const { return models_; }
  std::string dir;  // where the profiles were read

 private:
  std::map<std::string, std::unique_ptr<GoodputModel>> models_;
};

// Every subfolder of `dir` with profiles is one application.
StatusOr<std::shared_ptr<const GoodputCatalog>> LoadGoodputCatalog(const std::string& dir);

}  // namespace berth::elastic
