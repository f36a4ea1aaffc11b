// The round mechanisms of the Gavel driver (see mechanism.h).
#include "berth/sim/gavel/mechanism.h"

#include <algorithm>
#include <utility>

namespace berth::sim::gavel {
namespace {

// Pops candidates best first (a heap: O(n + k log n), not a full sort) and
// gives type `ty` to each that still fits its free GPUs.
template <typename Worse>
void TakeBest(std::vector<int64_t>& cand, Worse worse, const std::vector<int32_t>& scale, double& free, int16_t ty,
              std::vector<int16_t>& chosen) {
  std::make_heap(cand.begin(), cand.end(), worse);
  while (!cand.empty() && free > 0) {
    std::pop_heap(cand.begin(), cand.end(), worse);
    const int64_t j = cand.back();
    cand.pop_back();
    if (scale[j] > free) continue;
    chosen[j] = ty;
    free -= scale[j];
  }
}

}  // namespace

RoundMechanism::RoundMechanism(Mechanism kind, MechanismInput in) : kind_(kind), in_(std::move(in)) {
  worker_time_.assign(in_.types, 0.0);
}

void RoundMechanism::Grow(size_t jobs) {
  const size_t cells = jobs * in_.types;
  if (kind_ == Mechanism::kGavel) {
    job_time_.resize(cells, 0.0);
    deficit_.resize(cells, 0.0);
    in_allocation_.resize(jobs, 0);
  } else {
    expected_.resize(cells, 0.0);
    received_.resize(cells, 0.0);
  }
  key_.resize(jobs, 0.0);
}

void RoundMechanism::Arrive(int64_t j) {
  if (kind_ != Mechanism::kGavel) return;
  for (size_t t = 0; t < in_.types; ++t) job_time_[j * in_.types + t] = in_.round_s / 2;
}

bool RoundMechanism::WantsAllocation(bool changed, double now) const {
  if (!changed) return false;
  if (kind_ != Mechanism::kGavel) return true;
  // As in Gavel, a reset time of 0 counts as "never reset".
  return last_reset_ == 0 || now - last_reset_ >= in_.reset_interval_s;
}

void RoundMechanism::Reset(std::span<const int64_t> active, std::span<const double> x, double now) {
  if (kind_ != Mechanism::kGavel) return;
  const size_t nt = in_.types;
  const double elapsed = now - last_reset_;
  std::fill(worker_time_.begin(), worker_time_.end(), 0.0);
  for (int64_t j : active) {
    for (size_t t = 0; t < nt; ++t) {
      const size_t c = j * nt + t;
      const double received = job_time_[c] - in_.round_s / 2;
      const double owed = in_allocation_[j] ? x[c] * elapsed : 0.0;
      deficit_[c] += owed - received;
      job_time_[c] = in_.round_s / 2;
      worker_time_[t] += job_time_[c];
    }
    in_allocation_[j] = 1;
  }
  last_reset_ = now;
}

double RoundMechanism::Priority(int64_t j, int ty, std::span<const double> x) const {
  const size_t c = j * in_.types + ty;
  if (!in_allocation_[j] || x[c] <= 0 || (*in_.steps_per_s)[c] <= 0) return 0.0;
  const double fraction = worker_time_[ty] > 0 ? job_time_[c] / worker_time_[ty] : 0.0;
  return fraction > 0 ? x[c] / fraction : x[c] * 1e9;
}

void RoundMechanism::Choose(std::span<const int64_t> active, std::span<const double> x,
                            std::span<const int> type_order, std::vector<int16_t>& chosen) {
  free_.assign(in_.capacity.begin(), in_.capacity.end());
  if (kind_ == Mechanism::kGavel) {
    ChooseGavel(active, x, type_order, chosen);
  } else {
    ChooseDeficit(active, x, type_order, chosen);
  }
}

void RoundMechanism::ChooseGavel(std::span<const int64_t> active, std::span<const double> x,
                                 std::span<const int> type_order, std::vector<int16_t>& chosen) {
  const size_t nt = in_.types;
  for (int ty : type_order) {
    if (free_[ty] <= 0) continue;
    cand_.clear();
    for (int64_t j : active) {
      if (chosen[j] >= 0 || (*in_.steps_per_s)[j * nt + ty] <= 0) continue;
      key_[j] = Priority(j, ty, x);
      if (!in_.time_sliced && key_[j] <= 0) continue;  // FIFO never runs jobs without a share
      cand_.push_back(j);
    }
    // Best first: priority, then deficit, then share, then the lower id. A
    // heap pops only as many as needed (O(n + k log n), not a full sort).
    auto worse = [&](int64_t a, int64_t b) {
      if (key_[a] != key_[b]) return key_[a] < key_[b];
      const double da = deficit_[a * nt + ty], db = deficit_[b * nt + ty];
      if (da != db) return da < db;
      if (x[a * nt + ty] != x[b * nt + ty]) return x[a * nt + ty] < x[b * nt + ty];
      return a > b;
    };
    TakeBest(cand_, worse, *in_.scale, free_[ty], static_cast<int16_t>(ty), chosen);
  }
}

void RoundMechanism::ChooseDeficit(std::span<const int64_t> active, std::span<const double> x,
                                   std::span<const int> type_order, std::vector<int16_t>& chosen) {
  const size_t nt = in_.types;
  for (int64_t j : active)
    for (size_t t = 0; t < nt; ++t) expected_[j * nt + t] += x[j * nt + t] * in_.round_s;
  for (int pass = 0; pass < (in_.time_sliced ? 2 : 1); ++pass) {
    for (int ty : type_order) {
      if (free_[ty] <= 0) continue;
      cand_.clear();
      for (int64_t j : active) {
        if (chosen[j] >= 0 || (*in_.steps_per_s)[j * nt + ty] <= 0 || (*in_.scale)[j] > free_[ty]) continue;
        if (pass == 0 && x[j * nt + ty] <= 1e-9) continue;
        cand_.push_back(j);
        key_[j] = pass == 0 ? expected_[j * nt + ty] - received_[j * nt + ty] : 0.0;
        if (pass == 1)
          for (size_t t = 0; t < nt; ++t) key_[j] += expected_[j * nt + t] - received_[j * nt + t];
      }
      auto worse = [&](int64_t a, int64_t b) {
        if (key_[a] != key_[b]) return key_[a] < key_[b];
        if (x[a * nt + ty] != x[b * nt + ty]) return x[a * nt + ty] < x[b * nt + ty];
        return a > b;
      };
      TakeBest(cand_, worse, *in_.scale, free_[ty], static_cast<int16_t>(ty), chosen);
    }
  }
}

void RoundMechanism::Ran(int64_t j, int ty, double dt) {
  const size_t c = j * in_.types + ty;
  if (kind_ == Mechanism::kGavel) {
    job_time_[c] += dt;
    worker_time_[ty] += dt;
  } else {
    received_[c] += dt;
  }
}

}  // namespace berth::sim::gavel
