// Quota in normalized units: the same GPU count costs less quota on slow
// cards than on fast ones.
#include "berth/hetero/accounting.h"

#include <gtest/gtest.h>

#include "berth/hetero/hetero_test_util.h"

namespace berth::hetero {
namespace {

class AccountingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = ThroughputModel::Fit(testutil::RepoCatalog(), testutil::GavelTable());
    ASSERT_TRUE(m.ok());
    model_ = std::make_unique<ThroughputModel>(std::move(*m));
    auto n = Normalizer::Create(*model_, "H100");
    ASSERT_TRUE(n.ok());
    norm_ = std::make_unique<Normalizer>(*n);
  }
  std::unique_ptr<ThroughputModel> model_;
  std::unique_ptr<Normalizer> norm_;
  const JobClass r50_{"ResNet-50 (batch size 64)", 1};
};

TEST_F(AccountingTest, SlowCardsAreChargedLessThanFastCardsForTheSameGpuCount) {
  QuotaLedger ledger(*norm_);
  // Two tenants with the same fungible pool (8 H100-equivalents) and no type quota.
  ASSERT_TRUE(ledger.SetQuota("slow-tenant", {.fungible = 8 * kMilliPerRef}).ok());
  ASSERT_TRUE(ledger.SetQuota("fast-tenant", {.fungible = 8 * kMilliPerRef}).ok());
  auto slow = ledger.Admit("slow-tenant", JobId(1), r50_, "K80", 8);
  auto fast = ledger.Admit("fast-tenant", JobId(2), r50_, "V100", 8);
  ASSERT_TRUE(slow.ok()) << slow.status().message();
  ASSERT_TRUE(fast.ok()) << fast.status().message();
  EXPECT_EQ(slow->gpus, fast->gpus);
  EXPECT_GT(slow->from_fungible, 0);
  EXPECT_LT(slow->from_fungible * 5, fast->from_fungible);  // K80 is ~7x slower than V100 for ResNet-50
  // The charge is the class's speed ratio to the reference, times the GPUs.
  EXPECT_EQ(slow->from_fungible, norm_->Equivalents(r50_, "K80", 8));
  EXPECT_NEAR(static_cast<double>(fast->from_fungible) / slow->from_fungible, 4.395 / 0.619, 0.05);
  // Usage accrues in reference-GPU-seconds: the slow tenant has used less.
  ledger.Accrue(3600);
  EXPECT_LT(ledger.usage("slow-tenant")->ref_gpu_seconds, ledger.usage("fast-tenant")->ref_gpu_seconds);
  EXPECT_DOUBLE_EQ(ledger.usage("slow-tenant")->raw_gpu_seconds, ledger.usage("fast-tenant")->raw_gpu_seconds);
  EXPECT_EQ(ledger.FairShareOrder().front(), "slow-tenant");
  // The slow tenant can still add more K80 work than the fast tenant V100 work.
  EXPECT_TRUE(ledger.Plan("slow-tenant", r50_, "K80", 8).ok());
  ASSERT_TRUE(ledger.Release(JobId(1)).ok());
  EXPECT_EQ(ledger.usage("slow-tenant")->fungible_in_use, 0);
}

TEST_F(AccountingTest, TypeQuotaFirstThenFungiblePool) {
  QuotaLedger ledger(*norm_);
  ASSERT_TRUE(ledger.SetQuota("q", {.type_gpus = {{"v100", 4}}, .fungible = 1 * kMilliPerRef}).ok());
  auto a = ledger.Admit("q", JobId(1), r50_, "V100", 4);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->gpus_from_type_quota, 4);
  EXPECT_EQ(a->from_fungible, 0);
  // The type quota is used up; the next V100s come from the pool at their equivalents.
  const MilliRef one_v100 = norm_->Equivalents(r50_, "V100", 1);
  ASSERT_LT(one_v100, kMilliPerRef);
  auto b = ledger.Admit("q", JobId(2), r50_, "V100", 1);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->from_fungible, one_v100);
  // Beyond the pool: refused, with a reason naming the queue.
  auto c = ledger.Plan("q", r50_, "V100", 64);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("queue 'q'"), std::string::npos);
  EXPECT_FALSE(ledger.SetQuota("q", {.type_gpus = {{"nosuchgpu", 1}}}).ok());
  EXPECT_FALSE(ledger.Admit("q", JobId(2), r50_, "V100", 1).ok());  // already holds a charge
}

}  // namespace
}  // namespace berth::hetero
