// Deterministic random numbers. The standard library's distributions differ
// between implementations, so Berth draws integers and reals itself from a
// SplitMix64-seeded xoshiro256** generator: the same seed gives the same
// sequence on every platform.
#pragma once

#include <cstdint>
#include <cstddef>
#include <utility>
#include <vector>

namespace berth {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { Seed(seed); }
  void Seed(uint64_t seed);

  uint64_t Next();
  // Uniform integer in [0, n). n > 0. Unbiased (Lemire's method).
  uint64_t Uniform(uint64_t n);
  // Uniform real in [0, 1).
  double UniformReal();
  // Exponential with the given mean.
  double Exponential(double mean);

  template <typename T>
  void Shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) {
      size_t j = Uniform(i);
      std::swap(v[i - 1], v[j]);
    }
  }

 private:
  uint64_t s_[4];
};

}  // namespace berth
