// Histogram and label escaping.
#include "berth/server/metrics.h"

#include <cmath>
#include <cstdlib>

#include <algorithm>
#include <cstdio>

namespace berth::server {
namespace {
std::vector<double> LatencyBounds() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}
// Scheduling passes: exponential buckets (factor sqrt 2) from 1 us to about
// 16 s, fine enough to tell a 2x change in a quantile apart.
std::vector<double> PassBounds() {
  std::vector<double> b;
  for (int k = 0; k < 48; ++k) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", 1e-6 * std::pow(2.0, k / 2.0));  // 1e-06, 1.41e-06, 2e-06, ...
    b.push_back(std::strtod(buf, nullptr));
  }
  return b;
}
std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}
}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  const size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[i];
  sum_ += value;
  ++count_;
}

uint64_t Histogram::count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return count_;
}

double Histogram::Quantile(double q) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (count_ == 0) return 0;
  const double target = q * static_cast<double>(count_);
  uint64_t cum = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    cum += counts_[i];
    if (static_cast<double>(cum) >= target) return i < bounds_.size() ? bounds_[i] : bounds_.back();
  }
  return bounds_.back();
}

void Histogram::Render(const std::string& name, const std::string& help, std::string& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  uint64_t cum = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    out += name + "_bucket{le=\"" + Num(bounds_[i]) + "\"} " + std::to_string(cum) + "\n";
  }
  cum += counts_.back();
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(cum) + "\n";
  out += name + "_sum " + Num(sum_) + "\n";
  out += name + "_count " + std::to_string(count_) + "\n";
}

Metrics::Metrics()
    : decision_latency(LatencyBounds()),
      pass_latency(PassBounds()),
      commit_latency(LatencyBounds()),
      commit_batch({1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096}),
      submit_latency(LatencyBounds()) {}

std::string PromLabel(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace berth::server
