// Tests of the exact allocation search: hand-checked cases and a comparison
// with brute force over every combination on small random instances.
#include "berth/elastic/allocation_search.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "berth/common/rng.h"

namespace berth::elastic {
namespace {

double Cost(const std::vector<AllocationOptions>& jobs, const std::vector<int32_t>& pick) {
  double c = 0;
  for (size_t k = 0; k < jobs.size(); ++k) c += 1.0 / jobs[k].speedup[pick[k]];
  return c;
}

TEST(AllocationSearch, GivesTheSpareGpusWhereTheyCutTheMost) {
  // Job 0 scales well, job 1 hardly at all: of 6 GPUs job 0 takes 4.
  std::vector<AllocationOptions> jobs = {{{1, 2, 4}, {1.0, 1.9, 3.6}}, {{1, 2, 4}, {1.0, 1.1, 1.15}}};
  auto pick = SearchAllocation(jobs, 6);
  ASSERT_TRUE(pick.ok()) << pick.status().message();
  EXPECT_EQ(jobs[0].gpus[(*pick)[0]], 4);
  EXPECT_EQ(jobs[1].gpus[(*pick)[1]], 2);
}

TEST(AllocationSearch, BeatsTheGreedyStepWhenASizeJumps) {
  // Sizes 1 or 8 for job 0 (a whole node), 1..2 for job 1, 9 GPUs: the
  // per-GPU greedy takes job 1's cheap step first and then cannot fit 8.
  std::vector<AllocationOptions> jobs = {{{1, 8}, {1.0, 7.0}}, {{1, 2}, {1.0, 1.9}}};
  auto pick = SearchAllocation(jobs, 9);
  ASSERT_TRUE(pick.ok());
  EXPECT_EQ(jobs[0].gpus[(*pick)[0]], 8);
  EXPECT_EQ(jobs[1].gpus[(*pick)[1]], 1);
}

TEST(AllocationSearch, SkipsUnusableOptionsAndFailsWhenNothingFits) {
  std::vector<AllocationOptions> jobs = {{{1, 2}, {0.0, 1.5}}, {{3}, {1.0}}};
  auto pick = SearchAllocation(jobs, 5);
  ASSERT_TRUE(pick.ok());
  EXPECT_EQ((*pick)[0], 1);
  EXPECT_FALSE(SearchAllocation(jobs, 4).ok());
  EXPECT_FALSE(SearchAllocation({{{1}, {0.0}}}, 4).ok());
  EXPECT_FALSE(SearchAllocation({{{1, 2}, {1.0}}}, 4).ok());
  auto none = SearchAllocation({}, 4);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(AllocationSearch, MatchesBruteForce) {
  Rng rng(7);
  for (int round = 0; round < 200; ++round) {
    const int n = 1 + static_cast<int>(rng.Uniform(4));
    std::vector<AllocationOptions> jobs(n);
    for (auto& j : jobs) {
      const int m = 1 + static_cast<int>(rng.Uniform(4));
      for (int i = 0; i < m; ++i) {
        j.gpus.push_back(1 + static_cast<int32_t>(rng.Uniform(6)));
        j.speedup.push_back(0.2 + 5 * rng.UniformReal());
      }
    }
    const int64_t cap = 1 + static_cast<int64_t>(rng.Uniform(14));
    // Brute force: every combination of options.
    double best = std::numeric_limits<double>::infinity();
    std::vector<int32_t> idx(n, 0);
    while (true) {
      int64_t used = 0;
      for (int k = 0; k < n; ++k) used += jobs[k].gpus[idx[k]];
      if (used <= cap) best = std::min(best, Cost(jobs, idx));
      int k = 0;
      while (k < n && ++idx[k] == static_cast<int32_t>(jobs[k].gpus.size())) idx[k++] = 0;
      if (k == n) break;
    }
    auto pick = SearchAllocation(jobs, cap);
    if (std::isinf(best)) {
      EXPECT_FALSE(pick.ok()) << "round " << round;
      continue;
    }
    ASSERT_TRUE(pick.ok()) << "round " << round << ": " << pick.status().message();
    int64_t used = 0;
    for (int k = 0; k < n; ++k) used += jobs[k].gpus[(*pick)[k]];
    EXPECT_LE(used, cap) << "round " << round;
    EXPECT_NEAR(Cost(jobs, *pick), best, 1e-9) << "round " << round;
  }
}

}  // namespace
}  // namespace berth::elastic
