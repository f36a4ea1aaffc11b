// The ledger in normalized units: charges converted by a speed model, the
// capacity in reference GPUs, messages in the unit, and the incremental
// figures against a full recomputation over random starts and ends.
#include <gtest/gtest.h>

#include <map>

#include "berth/cluster/loaders.h"
#include "berth/common/rng.h"
#include "berth/tenancy/ledger.h"
#include "berth/tenancy/queue_yaml.h"

namespace berth::tenancy {
namespace {

constexpr int64_t G = kMilliPerGpu;

// Type t is worth factor[t] reference GPUs; a job of class "x2" twice that.
class FakeSpeeds final : public SpeedModel {
 public:
  explicit FakeSpeeds(std::vector<int64_t> per_million) : per_million_(std::move(per_million)) {}
  int64_t PerMillion(const job::JobSpec& job, GpuTypeId type) const override {
    return CapacityPerMillion(type) * (job.job_class == "x2" ? 2 : 1);
  }
  int64_t CapacityPerMillion(GpuTypeId type) const override { return per_million_[type.value()]; }
  const std::string& reference() const override { return ref_; }

 private:
  std::vector<int64_t> per_million_;
  std::string ref_ = "H100";
};

cluster::Cluster MakeCluster(const std::string& spec) { return std::move(cluster::ParseClusterSpec(spec).value()); }

QueueTree NormalizedTree(const std::vector<QueueSpec>& specs, const cluster::Cluster& c) {
  auto tree = QueueTree::Create(specs, c);
  EXPECT_TRUE(tree.ok()) << tree.status().ToString();
  tree->set_unit(Unit::kNormalized, "H100");
  return std::move(tree).value();
}

job::JobSpec Job(const std::string& cls, GpuTypeId type) {
  job::JobSpec j;
  j.job_class = cls;
  job::TaskGroup g;
  g.gpus = 1;
  g.gpu_types.Add(type);
  j.groups.push_back(g);
  return j;
}

TEST(LedgerUnitsTest, ChargesAndCapacityAreInReferenceGpus) {
  const cluster::Cluster c = MakeCluster("1x8:H100+1x8:K80");
  const GpuTypeId h100 = *c.FindGpuType("H100"), k80 = *c.FindGpuType("K80");
  std::vector<int64_t> f(2);
  f[h100.value()] = kPerMillion;
  f[k80.value()] = 62'500;  // a K80 is 1/16 of an H100
  QueueSpec a{.name = "a", .tenants = {"alice"}};
  a.quotas["*"] = Quota{.guarantee = 0, .limit = 1 * G};
  Ledger ledger(NormalizedTree({a}, c), c, 0, std::make_shared<FakeSpeeds>(f));
  EXPECT_TRUE(ledger.normalized());
  EXPECT_EQ(ledger.unit_word(), "H100-equivalents");
  EXPECT_EQ(ledger.capacity(ledger.all_types_dim()), 8 * G + 500);
  EXPECT_EQ(ledger.capacity(k80.value()), 500);
  const job::JobSpec j = Job("", k80);
  EXPECT_EQ(ledger.Amount(j, k80, 8 * G), 500);
  EXPECT_EQ(ledger.Amount(j, h100, 8 * G), 8 * G);
  EXPECT_EQ(ledger.Amount(Job("x2", k80), k80, 8 * G), 1000);
  const int32_t q = ledger.tree().Find("a");
  // Eight K80s fit a limit of one H100-equivalent; eight H100s do not.
  EXPECT_TRUE(ledger.CheckFits(q, k80, ledger.Amount(j, k80, 8 * G)).ok());
  Status s = ledger.CheckFits(q, h100, ledger.Amount(j, h100, 8 * G));
  EXPECT_EQ(s.message(), "queue 'a' (all GPU types): would use 8 H100-equivalents, over its limit of 1");
  ledger.ChargeJob(q, j, k80, 8 * G, 0);
  EXPECT_EQ(ledger.usage(q, ledger.all_types_dim()), 500);
  // The least it could be charged over the types it accepts.
  job::JobSpec both = Job("", k80);
  both.groups[0].gpu_types.Add(h100);
  EXPECT_EQ(ledger.LeastAmount(both, 4 * G), 250);
  EXPECT_TRUE(ledger.CheckConsistency().ok());
}

TEST(LedgerUnitsTest, GpusTreeIgnoresTheModel) {
  const cluster::Cluster c = MakeCluster("1x8:K80");
  auto tree = QueueTree::Create({}, c);
  ASSERT_TRUE(tree.ok());
  Ledger ledger(std::move(tree).value(), c, 0, std::make_shared<FakeSpeeds>(std::vector<int64_t>{62'500}));
  EXPECT_FALSE(ledger.normalized());
  EXPECT_EQ(ledger.Amount(Job("", GpuTypeId(0)), GpuTypeId(0), 8 * G), 8 * G);
  EXPECT_EQ(ledger.capacity(ledger.all_types_dim()), 8 * G);
}

TEST(LedgerUnitsTest, ScaleMilliRounds) {
  EXPECT_EQ(ScaleMilli(1000, 499'499), 499);
  EXPECT_EQ(ScaleMilli(1000, 499'500), 500);
  EXPECT_EQ(ScaleMilli(-1000, 499'500), -500);
  EXPECT_EQ(ScaleMilli(100'000'000'000, 2 * kPerMillion), 200'000'000'000);
}

// Random starts and ends of jobs on random types with random classes: the
// incremental usage and held capacity match a recomputation, and each
// queue's usage is the sum of its live jobs' converted charges.
TEST(LedgerUnitsTest, RandomChargesMatchFullRecompute) {
  const cluster::Cluster c = MakeCluster("4x8:H100+4x8:V100+4x8:K80");
  std::vector<int64_t> f(3);
  f[c.FindGpuType("H100")->value()] = kPerMillion;
  f[c.FindGpuType("V100")->value()] = 333'333;
  f[c.FindGpuType("K80")->value()] = 41'667;
  std::vector<QueueSpec> specs;
  specs.push_back({.name = "top"});
  specs.back().quotas["*"] = Quota{.guarantee = 20 * G, .lend_limit = 3 * G};
  specs.push_back({.name = "a", .parent = "top", .tenants = {"a"}});
  specs.back().quotas["*"] = Quota{.guarantee = 10 * G, .lend_limit = 2 * G};
  specs.push_back({.name = "b", .parent = "top", .tenants = {"b"}});
  specs.back().quotas["V100"] = Quota{.guarantee = 3 * G};
  specs.push_back({.name = "c", .tenants = {"c"}});
  Ledger ledger(NormalizedTree(specs, c), c, 3600 * kUsPerSecond, std::make_shared<FakeSpeeds>(f));
  struct Live {
    int32_t queue;
    job::JobSpec spec;
    GpuTypeId type;
    int64_t milli;
  };
  std::map<int64_t, Live> live;
  Rng rng(7);
  auto U = [&](int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(rng.Uniform(static_cast<uint64_t>(hi - lo + 1))); };
  const char* leaves[] = {"a", "b", "c"};
  int64_t next = 0;
  for (int step = 0; step < 2000; ++step) {
    const TimeUs now = step * kUsPerSecond;
    if (live.empty() || U(0, 2) > 0) {
      const int32_t q = ledger.tree().Find(leaves[U(0, 2)]);
      const GpuTypeId t(static_cast<int16_t>(U(0, 2)));
      Live l{q, Job(U(0, 1) ? "x2" : "", t), t, U(1, 8) * G / (U(0, 1) ? 2 : 1)};
      ledger.ChargeJob(l.queue, l.spec, l.type, l.milli, now);
      live.emplace(next++, std::move(l));
    } else {
      auto it = live.begin();
      std::advance(it, U(0, static_cast<int64_t>(live.size()) - 1));
      ledger.Uncharge(it->second.queue, it->second.type, ledger.Amount(it->second.spec, it->second.type, it->second.milli),
                      now);
      live.erase(it);
    }
    ASSERT_TRUE(ledger.CheckConsistency().ok()) << ledger.CheckConsistency().ToString();
    std::vector<int64_t> want(ledger.tree().size(), 0);
    for (const auto& [id, l] : live)
      for (int32_t a = l.queue; a >= 0; a = ledger.tree().node(a).parent) want[a] += ledger.Amount(l.spec, l.type, l.milli);
    for (int32_t q = 0; q < ledger.tree().size(); ++q)
      ASSERT_EQ(ledger.usage(q, ledger.all_types_dim()), want[q]) << "queue " << q << " step " << step;
  }
}

TEST(LedgerUnitsTest, QueueFileUnitAndReference) {
  const cluster::Cluster c = MakeCluster("2x8:H100");
  auto f = ParseQueueYaml("unit: normalized\nreference: A100-80\nqueues:\n  - name: a\n    quotas: {\"*\": {guarantee: 1.5}}\n",
                          "q.yaml");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->unit, Unit::kNormalized);
  EXPECT_EQ(f->reference, "A100-80");
  auto t = BuildQueueTree(*f, "q.yaml", c);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->unit(), Unit::kNormalized);
  EXPECT_EQ(t->reference(), "A100-80");
  EXPECT_EQ(t->node(0).quota[t->all_types_dim()].guarantee, 1500);
  auto d = ParseQueueYaml("unit: normalized\nqueues:\n  - name: a\n", "q.yaml");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->reference, "H100");  // the default reference
  auto g = ParseQueueYaml("queues:\n  - name: a\n", "q.yaml");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->unit, Unit::kGpus);
  auto bad = ParseQueueYaml("half_life: 1h\nunit: h100\nqueues:\n  - name: a\n", "q.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "q.yaml:2: unit: expected gpus or normalized, got 'h100'");
  auto empty = ParseQueueYaml("unit: normalized\nreference: \"\"\nqueues:\n  - name: a\n", "q.yaml");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("q.yaml:2: reference"), std::string::npos) << empty.status().message();
}

}  // namespace
}  // namespace berth::tenancy
