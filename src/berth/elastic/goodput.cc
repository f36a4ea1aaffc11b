// Goodput models and their catalog.
#include "berth/elastic/goodput.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <vector>

namespace berth::elastic {
namespace {

// The next point of the grid of step h after p (strictly), capped at end. A
// point reached by rounding may sit a hair below its grid value: step past it.
double NextGridPoint(double p, double h, double end) {
  double q = (std::floor(p / h) + 1) * h;
  if (q <= p * (1 + 1e-12)) q += h;
  return std::min(end, q);
}

}  // namespace

GoodputModel::GoodputModel(AppProfile app, ThroughputFit fit) : app_(std::move(app)), fit_(fit) {}

double GoodputModel::Efficiency(int32_t batch, double progress) const {
  const double phi = app_.NoiseScale(progress, batch);
  return (phi + app_.base_batch) / (phi + batch);
}

std::pair<int32_t, int32_t> GoodputModel::BatchRange(int32_t gpus) const {
  if (gpus <= 0) return {1, 0};
  const int64_t lo = std::max<int64_t>(app_.base_batch, int64_t{gpus} * app_.min_local_bsz);
  const int64_t hi = app_.max_batch;  // with gradient accumulation beyond the per-GPU limit
  return {static_cast<int32_t>(lo), static_cast<int32_t>(std::min<int64_t>(hi, INT32_MAX))};
}

double GoodputModel::Goodput(int32_t gpus, int32_t nodes, int32_t batch, double progress) const {
  if (gpus <= 0 || batch <= 0) return 0;
  // Beyond the largest profiled per-GPU batch (memory), gradients accumulate
  // over s + 1 micro-batches: T = s * T_grad(m) + T_iter(m) (Pollux, 3.2).
  double local = static_cast<double>(batch) / gpus;
  double accum = 0;
  if (local > app_.max_local_bsz) {
    const double steps = std::ceil(local / app_.max_local_bsz);
    local /= steps;
    accum = steps - 1;
  }
  const ThroughputParams& q = fit_.params;
  const double t = accum * (q.alpha_grad + q.beta_grad * local) + q.IterTime(gpus, std::max(nodes, 1), local);
  if (!(t > 0)) return 0;
  return static_cast<double>(batch) * Efficiency(batch, progress) / (app_.base_batch * t);
}

int32_t GoodputModel::BestBatch(int32_t gpus, int32_t nodes, double progress) const {
  const auto [lo, hi] = BatchRange(gpus);
  if (lo > hi) return 0;
  int32_t best = lo;
  double best_g = Goodput(gpus, nodes, lo, progress);
  constexpr int kGrid = 24;
  const double span = std::log(static_cast<double>(hi) / lo);
  for (int k = 1; k <= kGrid; ++k) {
    const int32_t m = k == kGrid ? hi : static_cast<int32_t>(std::lround(lo * std::exp(span * k / kGrid)));
    const double g = Goodput(gpus, nodes, m, progress);
    if (g > best_g * (1 + 1e-12)) {
      best_g = g;
      best = m;
    }
  }
  return best;
}

double GoodputModel::SecondsToFinish(double progress, int32_t gpus, int32_t nodes, int32_t batch) const {
  const double end = app_.target_progress;
  if (progress >= end) return 0;
  if (Goodput(gpus, nodes, batch, progress) <= 0) return std::numeric_limits<double>::infinity();
  // Midpoint rule over a fixed grid of the progress axis.
  const double h = Step();
  double secs = 0;
  for (double p = progress; p < end;) {
    const double q = NextGridPoint(p, h, end);
    secs += (q - p) / Goodput(gpus, nodes, batch, 0.5 * (p + q));
    p = q;
  }
  return secs;
}

double GoodputModel::ProgressAfter(double progress, int32_t gpus, int32_t nodes, int32_t batch, double seconds) const {
  const double end = app_.target_progress;
  const double h = Step();
  double p = progress;
  while (p < end && seconds > 0) {
    const double q = NextGridPoint(p, h, end);
    const double g = Goodput(gpus, nodes, batch, 0.5 * (p + q));
    if (g <= 0) return p;
    const double need = (q - p) / g;
    if (need >= seconds) return p + seconds * g;
    seconds -= need;
    p = q;
  }
  return std::min(p, end);
}

void GoodputCatalog::Add(std::unique_ptr<GoodputModel> m) {
  const std::string name = m->app().name;
  models_[name] = std::move(m);
}

const GoodputModel* GoodputCatalog::Find(const std::string& app) const {
  auto it = models_.find(app);
  return it == models_.end() ? nullptr : it->second.get();
}

StatusOr<std::shared_ptr<const GoodputCatalog>> LoadGoodputCatalog(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return NotFound(dir + ": no application profiles folder");
  std::vector<std::string> apps;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_directory()) apps.push_back(e.path().string());
  if (ec) return InvalidArgument(dir + ": " + ec.message());
  std::sort(apps.begin(), apps.end());
  auto cat = std::make_shared<GoodputCatalog>();
  cat->dir = dir;
  for (const std::string& a : apps) {
    BERTH_ASSIGN_OR_RETURN(AppProfile app, LoadAppProfile(a));
    ThroughputFit fit = FitThroughput(app.steps);
    cat->Add(std::make_unique<GoodputModel>(std::move(app), fit));
  }
  if (cat->all().empty()) return InvalidArgument(dir + ": no application folders");
  return std::shared_ptr<const GoodputCatalog>(std::move(cat));
}

}  // namespace berth::elastic
