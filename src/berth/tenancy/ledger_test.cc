// The ledger's quota rules on hand-made trees: borrowing, lending limits,
// limits, borrowing limits, several levels, GPU types, tentative gang charges.
#include "berth/tenancy/ledger.h"

#include <gtest/gtest.h>

#include "berth/cluster/loaders.h"

namespace berth::tenancy {
namespace {

constexpr int64_t G = kMilliPerGpu;

cluster::Cluster MakeCluster(const std::string& spec) {
  auto c = cluster::ParseClusterSpec(spec);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(c).value();
}

QueueSpec Q(std::string name, std::string parent, Quota all, std::vector<std::string> tenants = {}) {
  QueueSpec s;
  s.name = std::move(name);
  s.parent = std::move(parent);
  s.quotas["*"] = all;
  s.tenants = std::move(tenants);
  return s;
}

Quota Guarantee(int64_t gpus) { return Quota{.guarantee = gpus * G}; }

class LedgerTest : public ::testing::Test {
 protected:
  void Build(const std::vector<QueueSpec>& specs, const std::string& cluster_spec = "2x8:H100") {
    cluster_ = std::make_unique<cluster::Cluster>(MakeCluster(cluster_spec));
    auto tree = QueueTree::Create(specs, *cluster_);
    ASSERT_TRUE(tree.ok()) << tree.status().ToString();
    ledger_ = std::make_unique<Ledger>(std::move(tree).value(), *cluster_);
    ASSERT_TRUE(ledger_->CheckConsistency().ok());
  }
  int32_t Find(const std::string& name) const { return ledger_->tree().Find(name); }
  GpuTypeId Type(const std::string& name) const { return *cluster_->FindGpuType(name); }
  Status Fits(const std::string& queue, int64_t gpus, const std::string& type = "H100") const {
    return ledger_->CheckFits(Find(queue), Type(type), gpus * G);
  }
  void Charge(const std::string& queue, int64_t gpus, const std::string& type = "H100") {
    ledger_->Charge(Find(queue), Type(type), gpus * G, 0);
    ASSERT_TRUE(ledger_->CheckConsistency().ok()) << ledger_->CheckConsistency().ToString();
  }
  // The most GPUs `queue` may add now (whole GPUs).
  int64_t Room(const std::string& queue, const std::string& type = "H100") const {
    int64_t n = 0;
    while (n < 1000 && Fits(queue, n + 1, type).ok()) ++n;
    return n;
  }

  std::unique_ptr<cluster::Cluster> cluster_;
  std::unique_ptr<Ledger> ledger_;
};

TEST_F(LedgerTest, BorrowsIdleGuaranteeOfAnotherQueue) {
  Build({Q("a", "", Guarantee(8)), Q("b", "", Guarantee(8))});
  EXPECT_EQ(Room("a"), 16);  // its 8 and b's idle 8
  Charge("a", 12);
  EXPECT_EQ(ledger_->borrowed(Find("a"), ledger_->all_types_dim()), 4 * G);
  EXPECT_EQ(Room("a"), 4);
  // b is within its guarantee: always admitted (a's borrowing is reclaimed).
  EXPECT_EQ(Room("b"), 8);
  Charge("b", 8);
  EXPECT_LT(ledger_->unheld(ledger_->all_types_dim()), 0);  // over-committed: reclaim is due
  Status s = Fits("a", 1);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("queue 'a' (all GPU types): would borrow 5 GPUs beyond its guarantee of 8"),
            std::string::npos)
      << s.message();
  EXPECT_FALSE(Fits("b", 1).ok());  // b beyond its guarantee borrows too, and nothing is left
}

TEST_F(LedgerTest, LendingLimitCapsWhatOthersBorrow) {
  Quota b = Guarantee(8);
  b.lend_limit = 2 * G;
  Build({Q("a", "", Guarantee(8)), Q("b", "", b)});
  EXPECT_EQ(Room("a"), 10);
  Charge("a", 10);
  Status s = Fits("a", 1);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("only 0 GPUs are left to borrow"), std::string::npos) << s.message();
  // b within its guarantee is always admitted; the 6 it keeps back are free.
  EXPECT_EQ(Room("b"), 8);
  // b's own use comes out of the kept-back part first: it still lends 2.
  ledger_->Uncharge(Find("a"), Type("H100"), 10 * G, 0);
  Charge("b", 3);
  EXPECT_EQ(Room("a"), 10);
  Charge("b", 4);  // 7 of 8 used: only 1 idle left to lend
  EXPECT_EQ(Room("a"), 9);
}

TEST_F(LedgerTest, LimitAndBorrowingLimit) {
  Quota a = Guarantee(4);
  a.limit = 10 * G;
  Quota b = Guarantee(4);
  b.borrow_limit = 3 * G;
  Build({Q("a", "", a), Q("b", "", b)});
  EXPECT_EQ(Room("a"), 10);
  Status s = Fits("a", 11);
  EXPECT_EQ(s.message(), "queue 'a' (all GPU types): would use 11 GPUs, over its limit of 10");
  EXPECT_EQ(Room("b"), 7);
  s = Fits("b", 8);
  EXPECT_EQ(s.message(), "queue 'b' (all GPU types): would borrow 4 GPUs, over its borrowing limit of 3");
  // A limit below the guarantee is refused when the tree is built.
  Quota bad = Guarantee(4);
  bad.limit = 2 * G;
  auto c = MakeCluster("2x8:H100");
  EXPECT_FALSE(QueueTree::Create({Q("x", "", bad)}, c).ok());
}

TEST_F(LedgerTest, FractionsOfGpus) {
  Quota a = Guarantee(1);
  a.limit = 1500;
  Build({Q("a", "", a)});
  EXPECT_TRUE(ledger_->CheckFits(Find("a"), Type("H100"), 1500).ok());
  Status s = ledger_->CheckFits(Find("a"), Type("H100"), 1250, 500);  // a gang: 500 already tentatively added
  EXPECT_EQ(s.message(), "queue 'a' (all GPU types): would use 1.75 GPUs, over its limit of 1.5");
}

// The worked example of ledger.h.
TEST_F(LedgerTest, ChildBorrowsThroughItsParent) {
  Quota b = Guarantee(10);
  b.lend_limit = 2 * G;
  Quota a2 = Guarantee(5);
  a2.lend_limit = 0;
  Build({Q("A", "", Guarantee(10)), Q("B", "", b), Q("A1", "A", Guarantee(5)), Q("A2", "A", a2)}, "5x4:H100");
  EXPECT_EQ(ledger_->held(Find("A"), ledger_->all_types_dim()), 5 * G);  // A2's kept-back guarantee
  EXPECT_EQ(ledger_->unheld(ledger_->all_types_dim()), 7 * G);           // 20 - 5 - 8
  EXPECT_EQ(Room("A1"), 7);
  Status s = Fits("A1", 8);
  EXPECT_NE(s.message().find("queue 'A1' (all GPU types): would borrow 3 GPUs beyond its guarantee of 5, but only 7"),
            std::string::npos)
      << s.message();
  // A2 borrows A1's idle 5 inside A (A1 lends all it does not use), then B's 2.
  EXPECT_EQ(Room("A2"), 12);
}

TEST_F(LedgerTest, MultiLevelBorrowingReachesOtherSubtrees) {
  // Nothing lent is kept back: A1 may use everything idle, in A and in B.
  Build({Q("A", "", Guarantee(8)), Q("B", "", Guarantee(8)), Q("A1", "A", Guarantee(4)), Q("A2", "A", Guarantee(4))});
  EXPECT_EQ(Room("A1"), 16);
  Charge("B", 6);
  EXPECT_EQ(Room("A1"), 10);
  Charge("A1", 10);
  EXPECT_EQ(ledger_->borrowed(Find("A1"), ledger_->all_types_dim()), 6 * G);
  EXPECT_EQ(ledger_->borrowed(Find("A"), ledger_->all_types_dim()), 2 * G);
  // A2 and B are within their guarantees: admitted, reclaim follows.
  EXPECT_EQ(Room("A2"), 4);
  EXPECT_EQ(Room("B"), 2);
}

TEST_F(LedgerTest, ParentBorrowingLimitBoundsItsChildren) {
  Quota a = Guarantee(8);
  a.borrow_limit = 2 * G;
  Build({Q("A", "", a), Q("B", "", Guarantee(8)), Q("A1", "A", Guarantee(4)), Q("A2", "A", Guarantee(4))});
  EXPECT_EQ(Room("A1"), 10);
  Status s = Fits("A1", 11);
  EXPECT_EQ(s.message(), "queue 'A' (all GPU types): would borrow 3 GPUs, over its borrowing limit of 2");
  // Within the child's guarantee no limit but the hard ones applies further up.
  Charge("A1", 10);
  EXPECT_EQ(Room("A2"), 4);
}

TEST_F(LedgerTest, UnconstrainedQueuesAndAutoLeaves) {
  // Without a tree every tenant gets an unconstrained leaf.
  cluster_ = std::make_unique<cluster::Cluster>(MakeCluster("2x8:H100"));
  ledger_ = std::make_unique<Ledger>(QueueTree(1), *cluster_);
  job::JobSpec j;
  j.tenant = "alice";
  const int32_t q = ledger_->QueueFor(j);
  ASSERT_GE(q, 0);
  EXPECT_EQ(ledger_->tree().node(q).name, "alice");
  j.queue = "research";  // a queue named by the job gets its own leaf
  EXPECT_EQ(ledger_->tree().node(ledger_->QueueFor(j)).name, "research");
  j.queue.clear();
  EXPECT_EQ(ledger_->QueueFor(j), q);
  j.tenant.clear();
  EXPECT_EQ(ledger_->tree().node(ledger_->QueueFor(j)).name, "default");
  EXPECT_TRUE(ledger_->CheckFits(q, Type("H100"), 100 * G).ok());
  ledger_->Charge(q, Type("H100"), 16 * G, 0);
  EXPECT_EQ(ledger_->borrowed(q, ledger_->all_types_dim()), 0);
  EXPECT_TRUE(ledger_->CheckConsistency().ok());
}

TEST_F(LedgerTest, AQueueWithoutQuotaUsesTheUnguaranteedPool) {
  // "free" has no quota: unconstrained itself, but what it uses is not left
  // for others to borrow.
  QueueSpec free;
  free.name = "free";
  Build({Q("a", "", Guarantee(8)), free});
  Charge("free", 6);
  EXPECT_EQ(Room("a"), 10);
  EXPECT_TRUE(Fits("free", 10).ok());
}

TEST_F(LedgerTest, GpuTypeAndAllTypesAreCheckedApart) {
  QueueSpec s;
  s.name = "a";
  s.quotas["H100"] = Quota{.guarantee = 4 * G, .limit = 6 * G};
  s.quotas["*"] = Quota{.guarantee = 8 * G, .limit = 10 * G};
  QueueSpec t;
  t.name = "b";
  Build({s, t}, "2x8:H100+2x8:A100");
  EXPECT_EQ(Room("a", "H100"), 6);
  EXPECT_EQ(Room("a", "A100"), 10);
  EXPECT_EQ(Fits("a", 7, "H100").message(), "queue 'a' (H100): would use 7 GPUs, over its limit of 6");
  Charge("a", 6, "H100");
  EXPECT_EQ(ledger_->usage(Find("a"), Type("H100").value()), 6 * G);
  EXPECT_EQ(ledger_->borrowed(Find("a"), Type("H100").value()), 2 * G);
  EXPECT_EQ(ledger_->usage(Find("a"), ledger_->all_types_dim()), 6 * G);
  EXPECT_EQ(Room("a", "A100"), 4);
  // A gang spread over types: 3 H100 GPUs tentatively taken, then 2 A100s.
  EXPECT_TRUE(ledger_->CheckFits(Find("a"), Type("A100"), 2 * G, 0, 2 * G).ok());
  EXPECT_FALSE(ledger_->CheckFits(Find("a"), Type("A100"), 2 * G, 0, 3 * G).ok());
}

TEST_F(LedgerTest, NothingAddedAlwaysFits) {
  Quota a = Guarantee(1);
  a.limit = 1 * G;
  Build({Q("a", "", a)});
  Charge("a", 1);
  EXPECT_TRUE(ledger_->CheckFits(Find("a"), Type("H100"), 0).ok());
  EXPECT_FALSE(ledger_->CheckFits(Find("a"), Type("H100"), 1).ok());
  EXPECT_FALSE(ledger_->CheckFits(-1, Type("H100"), 1).ok());
}

TEST(QueueTreeTest, ChildrenGuaranteesFitTheParents) {
  auto c = MakeCluster("2x8:H100");
  auto t = QueueTree::Create({Q("p", "", Guarantee(8)), Q("c1", "p", Guarantee(5)), Q("c2", "p", Guarantee(4))}, c);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(),
            "queue 'p' quota '*': guarantee: its children are guaranteed 9 GPUs, more than its 8");
  t = QueueTree::Create({Q("c1", "p", Guarantee(4)), Q("p", "", Guarantee(8)), Q("c2", "p", Guarantee(4))}, c);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->node(t->Find("c1")).parent, t->Find("p"));
}

TEST(QueueTreeTest, ErrorsNameTheQueueAndField) {
  auto c = MakeCluster("2x8:H100");
  QueueSpec bad_type;
  bad_type.name = "x";
  bad_type.quotas["B200"] = Guarantee(1);
  EXPECT_EQ(QueueTree::Create({bad_type}, c).status().message(),
            "queue 'x': quota for GPU type 'B200', which the cluster lacks");
  EXPECT_EQ(QueueTree::Create({Q("x", "y", {})}, c).status().message(), "queue 'x': parent 'y' is not defined");
  EXPECT_EQ(QueueTree::Create({Q("x", "y", {}), Q("y", "x", {})}, c).status().message(),
            "queue 'x': its parents form a cycle");
  EXPECT_EQ(QueueTree::Create({Q("p", "", {}, {"t"}), Q("c", "p", {})}, c).status().message(),
            "queue 'p': tenant 't' maps to a queue that has children");
  EXPECT_EQ(QueueTree::Create({Q("a", "", {}, {"t"}), Q("b", "", {}, {"t"})}, c).status().message(),
            "queue 'b': tenant 't' is already in queue 'a'");
}

}  // namespace
}  // namespace berth::tenancy
