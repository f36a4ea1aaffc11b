// The Pollux throughput model and its Nelder-Mead fit.
#include "berth/elastic/throughput_model.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace berth::elastic {
namespace {

constexpr int kDim = 7;
using Point = std::array<double, kDim>;

// Log-parameters (all positive), gamma = 1 + exp(x[6]) so gamma > 1.
ThroughputParams FromPoint(const Point& x) {
  ThroughputParams p;
  p.alpha_grad = std::exp(x[0]);
  p.beta_grad = std::exp(x[1]);
  p.alpha_local = std::exp(x[2]);
  p.beta_local = std::exp(x[3]);
  p.alpha_node = std::exp(x[4]);
  p.beta_node = std::exp(x[5]);
  p.gamma = 1.0 + std::exp(x[6]);
  return p;
}

double Loss(const Point& x, std::span<const StepSample> steps) {
  const ThroughputParams p = FromPoint(x);
  double sum = 0;
  for (const StepSample& s : steps) {
    const double d = std::log(p.IterTime(s.gpus, s.nodes, s.local_bsz)) - std::log(s.step_time_s);
    sum += d * d;
  }
  return sum / static_cast<double>(steps.size());
}

// Plain Nelder-Mead (reflection 1, expansion 2, contraction 0.5, shrink 0.5).
Point Minimise(Point start, std::span<const StepSample> steps, int iterations) {
  std::array<Point, kDim + 1> s;
  std::array<double, kDim + 1> f;
  for (int i = 0; i <= kDim; ++i) {
    s[i] = start;
    if (i > 0) s[i][i - 1] += 1.0;
    f[i] = Loss(s[i], steps);
  }
  for (int it = 0; it < iterations; ++it) {
    std::array<int, kDim + 1> order;
    for (int i = 0; i <= kDim; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](int a, int b) { return f[a] < f[b] || (f[a] == f[b] && a < b); });
    const int best = order[0], worst = order[kDim], second = order[kDim - 1];
    if (f[worst] - f[best] < 1e-12) break;
    Point c{};
    for (int i = 0; i <= kDim; ++i)
      if (i != worst)
        for (int d = 0; d < kDim; ++d) c[d] += s[i][d] / kDim;
    auto along = [&](double t) {
      Point p;
      for (int d = 0; d < kDim; ++d) p[d] = c[d] + t * (s[worst][d] - c[d]);
      return p;
    };
    const Point r = along(-1.0);
    const double fr = Loss(r, steps);
    if (fr < f[best]) {
      const Point e = along(-2.0);
      const double fe = Loss(e, steps);
      if (fe < fr) { s[worst] = e; f[worst] = fe; } else { s[worst] = r; f[worst] = fr; }
    } else if (fr < f[second]) {
      s[worst] = r;
      f[worst] = fr;
    } else {
      const Point k = fr < f[worst] ? along(-0.5) : along(0.5);
      const double fk = Loss(k, steps);
      if (fk < std::min(fr, f[worst])) {
        s[worst] = k;
        f[worst] = fk;
      } else {
        for (int i = 0; i <= kDim; ++i) {
          if (i == best) continue;
          for (int d = 0; d < kDim; ++d) s[i][d] = s[best][d] + 0.5 * (s[i][d] - s[best][d]);
          f[i] = Loss(s[i], steps);
        }
      }
    }
  }
  int best = 0;
  for (int i = 1; i <= kDim; ++i)
    if (f[i] < f[best]) best = i;
  return s[best];
}

}  // namespace

double ThroughputParams::IterTime(int32_t gpus, int32_t nodes, double local_bsz) const {
  const double grad = alpha_grad + beta_grad * local_bsz;
  if (gpus <= 1) return grad;
  const double k2 = static_cast<double>(gpus - 2);
  const double sync = nodes <= 1 ? alpha_local + beta_local * k2 : alpha_node + beta_node * k2;
  return std::pow(std::pow(grad, gamma) + std::pow(std::max(sync, 0.0), gamma), 1.0 / gamma);
}

ThroughputFit FitThroughput(std::span<const StepSample> steps) {
  ThroughputFit out;
  out.samples = static_cast<int32_t>(steps.size());
  if (steps.empty()) return out;
  // Start: compute from the single-GPU samples' scale, sync a tenth of it.
  double mean_step = 0;
  for (const StepSample& s : steps) mean_step += s.step_time_s;
  mean_step /= static_cast<double>(steps.size());
  Point x{std::log(mean_step * 0.2), std::log(mean_step * 0.005), std::log(mean_step * 0.1), std::log(mean_step * 0.001),
          std::log(mean_step * 0.3), std::log(mean_step * 0.005), std::log(0.5)};
  // Restarts from the best point escape early collapse of the simplex.
  for (int round = 0; round < 3; ++round) x = Minimise(x, steps, 1000);
  out.params = FromPoint(x);
  double sq = 0, rel = 0;
  for (const StepSample& s : steps) {
    const double m = out.params.IterTime(s.gpus, s.nodes, s.local_bsz);
    const double d = std::log(m) - std::log(s.step_time_s);
    sq += d * d;
    const double e = std::fabs(m - s.step_time_s) / s.step_time_s;
    rel += e;
    out.max_abs_rel_error = std::max(out.max_abs_rel_error, e);
  }
  out.rmsle = std::sqrt(sq / static_cast<double>(steps.size()));
  out.mean_abs_rel_error = rel / static_cast<double>(steps.size());
  return out;
}

}  // namespace berth::elastic
