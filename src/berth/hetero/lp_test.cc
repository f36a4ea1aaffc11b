#include "berth/hetero/lp.h"

#include <gtest/gtest.h>

#include "berth/hetero/allocation_policy.h"

namespace berth::hetero {
namespace {

TEST(AllocationLpTest, MaxMinSendsEachJobWhereItIsRelativelyFast) {
  // Two types of 1 GPU each; job A is 4x faster on type 0, job B equal on both.
  std::vector<LpJob> jobs{{{4.0, 1.0}, 1, 1}, {{1.0, 1.0}, 1, 1}};
  std::vector<double> cap{1, 1};
  auto s = SolveAllocationLp(jobs, cap);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_NEAR(s->x[0][0], 1.0, 1e-6);
  EXPECT_NEAR(s->x[1][1], 1.0, 1e-6);
  EXPECT_NEAR(s->objective, 1.0, 1e-6);
}

TEST(AllocationLpTest, CapacityAndScaleAreRespected) {
  std::vector<LpJob> jobs(10, LpJob{{1.0, 2.0}, 2, 1});
  std::vector<double> cap{4, 4};
  for (bool agg : {true, false}) {
    LpOptions o;
    o.aggregate = agg;
    auto s = SolveAllocationLp(jobs, cap, o);
    ASSERT_TRUE(s.ok());
    double used0 = 0, used1 = 0;
    for (const auto& x : s->x) {
      EXPECT_LE(x[0] + x[1], 1.0 + 1e-9);
      used0 += 2 * x[0], used1 += 2 * x[1];
    }
    EXPECT_LE(used0, 4 + 1e-6);
    EXPECT_LE(used1, 4 + 1e-6);
    EXPECT_NEAR(used0 + used1, 8, 1e-6);  // second phase leaves nothing idle
    EXPECT_EQ(s->rows_solved, agg ? 1 : 10);
  }
}

TEST(AllocationPolicyTest, BlindSharesWaterFill) {
  std::vector<PolicyJob> jobs(3);
  jobs[0].scale = 1, jobs[1].scale = 2, jobs[2].scale = 8;
  auto share = BlindShares(jobs, 4);
  // Equal GPU-time, capped at a whole share: the 1-GPU job gets 1 GPU, the
  // others split the remaining 3 GPUs evenly.
  EXPECT_NEAR(share[0], 1.0, 1e-9);
  EXPECT_NEAR(jobs[1].scale * share[1], 1.5, 1e-9);
  EXPECT_NEAR(jobs[2].scale * share[2], 1.5, 1e-9);
}

TEST(AllocationPolicyTest, RegistryHasTheNamedPolicies) {
  AllocationPolicyRegistry r;
  ASSERT_TRUE(RegisterAllocationPolicies(r).ok());
  for (const char* n : {"las", "fifo", "gavel-las", "gavel-fifo", "gavel-maxmin", "gavel-tput", "gavel-makespan"})
    EXPECT_TRUE(r.Has(n)) << n;
  EXPECT_FALSE(r.Create("nope", {}).ok());
}

TEST(AllocationPolicyTest, GavelLasBeatsBlindOnNormalizedThroughput) {
  // 2 V100-like + 2 K80-like GPUs; half the jobs gain 10x on the fast type, half nothing.
  std::vector<PolicyJob> jobs(4);
  for (int i = 0; i < 4; ++i) {
    jobs[i].id = JobId(i);
    jobs[i].steps_per_s = i % 2 == 0 ? std::vector<double>{10, 1} : std::vector<double>{1, 1};
    jobs[i].ref_factor = jobs[i].steps_per_s;
  }
  std::vector<double> cap{2, 2};
  AllocationPolicyRegistry r;
  ASSERT_TRUE(RegisterAllocationPolicies(r).ok());
  auto rates = [&](const char* name) {
    auto p = r.Create(name, {});
    auto a = (*p)->Allocate({jobs, cap});
    EXPECT_TRUE(a.ok());
    std::vector<double> out;
    for (int j = 0; j < 4; ++j) out.push_back(a->x[j][0] * jobs[j].steps_per_s[0] + a->x[j][1] * jobs[j].steps_per_s[1]);
    return out;
  };
  auto blind = rates("las");
  auto aware = rates("gavel-las");
  double tb = 0, ta = 0;
  for (int j = 0; j < 4; ++j) {
    EXPECT_GE(aware[j], blind[j] - 1e-6) << j;  // nobody is worse off than under the blind split
    tb += blind[j], ta += aware[j];
  }
  EXPECT_GT(ta, 1.5 * tb);
}

}  // namespace
}  // namespace berth::hetero
