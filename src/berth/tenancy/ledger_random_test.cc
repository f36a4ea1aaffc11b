// Randomized checks of the ledger: random trees and quotas, random charges and
// releases; after each step the incremental figures match a recomputation
// (CheckConsistency), and CheckFits agrees with a brute-force model that
// recomputes every queue's usage and held capacity from scratch and applies
// the rules of ledger.h literally.
#include <gtest/gtest.h>

#include <optional>

#include "berth/cluster/loaders.h"
#include "berth/common/rng.h"
#include "berth/tenancy/ledger.h"

namespace berth::tenancy {
namespace {

constexpr int64_t G = kMilliPerGpu;

// The rules of ledger.h, evaluated from the queues' own charges.
class Model {
 public:
  Model(const QueueTree& tree, std::vector<int64_t> capacity)
      : tree_(tree), dims_(tree.num_dims()), capacity_(std::move(capacity)), own_(tree.size() * dims_, 0) {}

  void Charge(int32_t q, int32_t type_dim, int64_t milli) {
    if (type_dim >= 0) own_[q * dims_ + type_dim] += milli;
    own_[q * dims_ + tree_.all_types_dim()] += milli;
  }
  bool Fits(int32_t q, int32_t type_dim, int64_t milli) const {
    return (type_dim < 0 || FitsDim(q, type_dim, milli)) && FitsDim(q, tree_.all_types_dim(), milli);
  }
  int64_t Usage(const std::vector<int64_t>& own, int32_t q, int32_t d) const {
    int64_t u = own[q * dims_ + d];
    for (int32_t c : tree_.node(q).children) u += Usage(own, c, d);
    return u;
  }

 private:
  const Quota* QuotaOf(int32_t q, int32_t d) const {
    return tree_.node(q).has_quota[d] ? &tree_.node(q).quota[d] : nullptr;
  }
  int64_t Held(const std::vector<int64_t>& own, int32_t q, int32_t d) const {
    int64_t h = own[q * dims_ + d];
    for (int32_t c : tree_.node(q).children) h += Taken(own, c, d);
    return h;
  }
  int64_t Taken(const std::vector<int64_t>& own, int32_t q, int32_t d) const {
    const int64_t h = Held(own, q, d);
    const Quota* quota = QuotaOf(q, d);
    if (!quota || quota->lend_limit == kUnlimited) return h;
    return std::max(h, quota->guarantee - quota->lend_limit);
  }
  bool FitsDim(int32_t q, int32_t d, int64_t x) const {
    if (x <= 0) return true;
    std::vector<int64_t> own = own_;
    own[q * dims_ + d] += x;
    for (int32_t a = q; a >= 0; a = tree_.node(a).parent) {
      const Quota* quota = QuotaOf(a, d);
      if (quota && quota->limit != kUnlimited && Usage(own, a, d) > quota->limit) return false;
    }
    bool constrained = false;
    for (int32_t a = q; a >= 0; a = tree_.node(a).parent) {
      const Quota* quota = QuotaOf(a, d);
      if (!quota) continue;
      constrained = true;
      const int64_t excess = Held(own, a, d) - quota->guarantee;
      if (excess <= 0) return true;
      if (quota->borrow_limit != kUnlimited && excess > quota->borrow_limit) return false;
    }
    if (!constrained) return true;
    int64_t top = 0;
    for (int32_t r = 0; r < tree_.size(); ++r)
      if (tree_.node(r).parent < 0) top += Taken(own, r, d);
    return top <= capacity_[d];
  }

  const QueueTree& tree_;
  int32_t dims_;
  std::vector<int64_t> capacity_;
  std::vector<int64_t> own_;
};

// A random tree over the types of the cluster: each queue's parent is an
// earlier queue or the root; quotas in some dimensions, children's guarantees
// within their parent's.
std::vector<QueueSpec> RandomTree(Rng& rng, const cluster::Cluster& c) {
  const std::vector<std::string> types = {"H100", "A100", "*"};
  const int32_t n = 2 + static_cast<int32_t>(rng.Uniform(7));
  std::vector<QueueSpec> specs(n);
  // Guarantee left to give to children, per queue and type (nullopt: no quota).
  std::vector<std::map<std::string, std::optional<int64_t>>> left(n);
  auto maybe = [&](int64_t max) -> int64_t {  // unlimited half the time, else 0..max
    return rng.Uniform(2) ? kUnlimited : static_cast<int64_t>(rng.Uniform(max + 1)) * (G / 2);
  };
  for (int32_t i = 0; i < n; ++i) {
    QueueSpec& s = specs[i];
    s.name = "q" + std::to_string(i);
    const int32_t parent = rng.Uniform(3) == 0 || i == 0 ? -1 : static_cast<int32_t>(rng.Uniform(i));
    if (parent >= 0) s.parent = specs[parent].name;
    for (const auto& t : types) {
      if (rng.Uniform(5) < 2) continue;  // no quota in this dimension
      const int64_t room = parent >= 0 && left[parent][t] ? *left[parent][t] : (t == "*" ? 32 : 16) * G;
      Quota q;
      q.guarantee = static_cast<int64_t>(rng.Uniform(room / (G / 2) + 1)) * (G / 2);
      if (parent >= 0 && left[parent][t]) *left[parent][t] -= q.guarantee;
      const int64_t limit = maybe(24);
      q.limit = limit == kUnlimited ? kUnlimited : q.guarantee + limit;
      q.borrow_limit = maybe(12);
      q.lend_limit = maybe(12);
      s.quotas[t] = q;
      left[i][t] = q.guarantee;
    }
  }
  (void)c;
  return specs;
}

// Runs 40 random trees; counts the checks admitted and refused.
void RunRandom(uint64_t seed, bool force_some, int& admitted, int& refused) {
  auto cluster = cluster::ParseClusterSpec("2x8:H100+2x8:A100");
  ASSERT_TRUE(cluster.ok());
  Rng rng(seed);
  for (int trial = 0; trial < 40; ++trial) {
    const std::vector<QueueSpec> specs = RandomTree(rng, *cluster);
    auto tree = QueueTree::Create(specs, *cluster);
    ASSERT_TRUE(tree.ok()) << tree.status().ToString();
    Ledger ledger(*tree, *cluster);
    ASSERT_TRUE(ledger.CheckConsistency().ok()) << ledger.CheckConsistency().ToString();
    std::vector<int64_t> capacity(tree->num_dims());
    for (int32_t d = 0; d < tree->num_dims(); ++d) capacity[d] = ledger.capacity(d);
    Model model(*tree, capacity);
    const std::vector<int32_t> leaves = tree->Leaves();
    struct Charge {
      int32_t queue;
      GpuTypeId type;
      int64_t milli;
    };
    std::vector<Charge> charges;
    for (int step = 0; step < 150; ++step) {
      if (!charges.empty() && rng.Uniform(10) < 3) {
        const size_t k = rng.Uniform(charges.size());
        const Charge c = charges[k];
        charges.erase(charges.begin() + static_cast<std::ptrdiff_t>(k));
        ledger.Uncharge(c.queue, c.type, c.milli, step);
        model.Charge(c.queue, c.type.value(), -c.milli);
      } else {
        const int32_t q = leaves[rng.Uniform(leaves.size())];
        const GpuTypeId type(static_cast<int16_t>(rng.Uniform(2)));
        const int64_t milli = static_cast<int64_t>(1 + rng.Uniform(12)) * (G / 2);
        const bool fits = ledger.CheckFits(q, type, milli).ok();
        ++(fits ? admitted : refused);
        ASSERT_EQ(fits, model.Fits(q, type.value(), milli))
            << "seed " << seed << " trial " << trial << " step " << step << ": queue " << tree->node(q).name
            << " type " << type.value() << " milli " << milli << ": "
            << ledger.CheckFits(q, type, milli).ToString();
        if (fits || (force_some && rng.Uniform(4) == 0)) {
          ledger.Charge(q, type, milli, step);
          model.Charge(q, type.value(), milli);
          charges.push_back({q, type, milli});
        }
      }
      ASSERT_TRUE(ledger.CheckConsistency().ok()) << ledger.CheckConsistency().ToString();
      if (force_some) continue;
      // Only admitted charges: no queue over its limit, no leaf over its borrowing limit.
      for (int32_t q = 0; q < tree->size(); ++q) {
        for (int32_t d = 0; d < tree->num_dims(); ++d) {
          if (!tree->node(q).has_quota[d]) continue;
          const Quota& quota = tree->node(q).quota[d];
          if (quota.limit != kUnlimited) ASSERT_LE(ledger.usage(q, d), quota.limit);
          if (tree->node(q).is_leaf() && quota.borrow_limit != kUnlimited)
            ASSERT_LE(ledger.borrowed(q, d), quota.borrow_limit);
        }
      }
    }
    // Every figure comes back to zero when everything is released.
    for (const Charge& c : charges) ledger.Uncharge(c.queue, c.type, c.milli, 1000);
    ASSERT_TRUE(ledger.CheckConsistency().ok());
    for (int32_t q = 0; q < tree->size(); ++q)
      for (int32_t d = 0; d < tree->num_dims(); ++d) EXPECT_EQ(ledger.usage(q, d), 0);
  }
}

TEST(LedgerRandomTest, AdmittedChargesAgreeWithTheModel) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    int admitted = 0, refused = 0;
    RunRandom(seed, /*force_some=*/false, admitted, refused);
    EXPECT_GT(admitted, 500);  // both answers are exercised
    EXPECT_GT(refused, 500);
  }
}

TEST(LedgerRandomTest, OverCommittedStatesAgreeWithTheModel) {
  for (uint64_t seed = 11; seed <= 15; ++seed) {
    int admitted = 0, refused = 0;
    RunRandom(seed, /*force_some=*/true, admitted, refused);
    EXPECT_GT(admitted, 500);
    EXPECT_GT(refused, 500);
  }
}

}  // namespace
}  // namespace berth::tenancy
