// Queue files: the documented example, and errors that name file, line and field.
#include "berth/tenancy/queue_yaml.h"

#include <gtest/gtest.h>

#include "berth/cluster/loaders.h"
#include "berth/testing/paths.h"

namespace berth::tenancy {
namespace {

constexpr int64_t G = kMilliPerGpu;

cluster::Cluster H100s() { return std::move(cluster::ParseClusterSpec("4x8:H100").value()); }

std::string ErrorOf(const std::string& text) {
  auto f = ParseQueueYaml(text, "q.yaml");
  if (!f.ok()) return f.status().message();
  auto c = H100s();
  auto t = BuildQueueTree(*f, "q.yaml", c);
  return t.ok() ? "" : t.status().message();
}

TEST(QueueYamlTest, ReadsTheDocumentedForm) {
  const char* text = R"(
half_life: 6h
queues:
  - name: research
    weight: 2
    quotas:
      "*":  {guarantee: 512, limit: 1024, borrow_limit: 256, lend_limit: 128}
      H100: {guarantee: 256}
  - name: research-nlp
    parent: research
    tenants: [alice, "vc-6214e9"]
    quotas:
      "*": {guarantee: 0.5}
)";
  auto f = ParseQueueYaml(text, "q.yaml");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_TRUE(f->has_half_life);
  EXPECT_EQ(f->half_life, SecondsToUs(6 * 3600));
  ASSERT_EQ(f->queues.size(), 2u);
  EXPECT_EQ(f->lines[0], 4);
  const QueueSpec& r = f->queues[0];
  EXPECT_EQ(r.weight, 2);
  EXPECT_EQ(r.quotas.at("*").guarantee, 512 * G);
  EXPECT_EQ(r.quotas.at("*").limit, 1024 * G);
  EXPECT_EQ(r.quotas.at("*").borrow_limit, 256 * G);
  EXPECT_EQ(r.quotas.at("*").lend_limit, 128 * G);
  EXPECT_EQ(r.quotas.at("H100").guarantee, 256 * G);
  EXPECT_EQ(r.quotas.at("H100").limit, kUnlimited);
  EXPECT_EQ(f->queues[1].parent, "research");
  EXPECT_EQ(f->queues[1].tenants, (std::vector<std::string>{"alice", "vc-6214e9"}));
  EXPECT_EQ(f->queues[1].quotas.at("*").guarantee, 500);

  auto c = H100s();
  auto t = BuildQueueTree(*f, "q.yaml", c);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const int32_t nlp = t->Find("research-nlp");
  EXPECT_EQ(t->node(nlp).parent, t->Find("research"));
  job::JobSpec j;
  j.tenant = "vc-6214e9";
  EXPECT_EQ(t->LeafFor(j), nlp);
  j.tenant = "bob";
  EXPECT_EQ(t->LeafFor(j), -1);  // no default leaf: a job of bob is refused at submission
}

TEST(QueueYamlTest, TheExampleFileLoads) {
  auto c = H100s();
  auto t = LoadQueueTree(testing::SourceDir() + "/examples/queues/research.yaml", c);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_GE(t->Find("production"), 0);
}

TEST(QueueYamlTest, ErrorsNameFileLineAndField) {
  EXPECT_EQ(ErrorOf(""), "q.yaml:1: empty queue file (expected queues:)");
  EXPECT_EQ(ErrorOf("queues:\n  - name: a\n    wieght: 2\n"),
            "q.yaml:3: queues[0].wieght: unknown key (expected one of: name, parent, weight, quotas, tenants, budget, "
            "overcommit)");
  EXPECT_EQ(ErrorOf("queues:\n  - name: a\n    quotas:\n      '*': {guarantee: lots}\n"),
            "q.yaml:4: queues[0].quotas.*.guarantee: expected a number of GPUs, got 'lots'");
  EXPECT_EQ(ErrorOf("queues:\n  - name: a\n    quotas:\n      '*': {guarantee: -1}\n"),
            "q.yaml:4: queues[0].quotas.*.guarantee: must not be negative");
  EXPECT_EQ(ErrorOf("queues:\n  - name: a\n    quotas:\n      '*': {guarantee: 0.0001}\n"),
            "q.yaml:4: queues[0].quotas.*.guarantee: at most three decimals (a thousandth of a GPU), got '0.0001'");
  EXPECT_EQ(ErrorOf("queues:\n  - name: a\n    quotas:\n      '*': {guarantee: 4, limit: 2}\n"),
            "q.yaml:4: queues[0].quotas.*.limit: is below the guarantee");
  EXPECT_EQ(ErrorOf("queues:\n  - name: a\n  - name: a\n"), "q.yaml:3: queues[1].name: queue 'a' defined twice");
  EXPECT_EQ(ErrorOf("queues:\n  - name: a\n    parent: b\n"), "q.yaml:3: queues[0].parent: queue 'b' is not defined");
  EXPECT_EQ(ErrorOf("queues:\n  - name: a\n    weight: 0\n"), "q.yaml:3: queues[0].weight: must be positive");
  EXPECT_EQ(ErrorOf("half_life: soon\nqueues:\n  - name: a\n"),
            "q.yaml:1: half_life: expected a duration such as 90s, 30m, 6h or 2d, got 'soon'");
  EXPECT_EQ(ErrorOf("queues:\n  - name: a\n    quotas:\n      B200: {guarantee: 1}\n"),
            "q.yaml:4: queues[0].quotas.B200: the cluster has no GPU type 'B200' (it has: H100; or use \"*\")");
  // Tree errors found when the tree is built point at the queue's entry.
  EXPECT_EQ(ErrorOf("queues:\n  - name: p\n    quotas: {'*': {guarantee: 1}}\n  - name: c\n    parent: p\n"
                    "    quotas: {'*': {guarantee: 2}}\n"),
            "q.yaml:2: queue 'p' quota '*': guarantee: its children are guaranteed 2 GPUs, more than its 1");
  EXPECT_EQ(ErrorOf("queues:\n  - name: a\n    tenants: [t]\n  - name: b\n    tenants: [t]\n"),
            "q.yaml:4: queue 'b': tenant 't' is already in queue 'a'");
  // yaml-cpp's own errors are caught and carry the line.
  EXPECT_EQ(ErrorOf("queues:\n  - name: [a\n").rfind("q.yaml:", 0), 0u);
  auto missing = LoadQueueTree("/nonexistent/q.yaml", H100s());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(QueueYamlOvercommit, ReadsRatiosAndNamesTheLineOfBadOnes) {
  auto f = ParseQueueYaml("queues:\n  - name: batch\n    overcommit: 0.4\n  - name: research\n", "q.yaml");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->overcommit, (std::map<std::string, double>{{"batch", 0.4}}));
  EXPECT_EQ(ErrorOf("queues:\n  - name: a\n  - name: b\n    overcommit: 1.5\n"),
            "q.yaml:4: queues[1].overcommit: must be a ratio in 0..1, got '1.5'");
  EXPECT_EQ(ErrorOf("queues:\n  - name: a\n    overcommit: half\n"),
            "q.yaml:3: queues[0].overcommit: expected a ratio in 0..1, got 'half'");
  EXPECT_EQ(ErrorOf("queues:\n  - name: a\n    overcommit: [0.5]\n"),
            "q.yaml:3: queues[0].overcommit: expected a single value");
}

TEST(QueueYamlTest, Durations) {
  EXPECT_EQ(*ParseQueueDuration("90s"), SecondsToUs(90));
  EXPECT_EQ(*ParseQueueDuration("30m"), SecondsToUs(1800));
  EXPECT_EQ(*ParseQueueDuration("1.5d"), SecondsToUs(1.5 * 86400));
  EXPECT_EQ(*ParseQueueDuration("600"), SecondsToUs(600));
  EXPECT_FALSE(ParseQueueDuration("").ok());
  EXPECT_FALSE(ParseQueueDuration("-1h").ok());
  EXPECT_FALSE(ParseQueueDuration("h").ok());
}

// Node agents: the file resolved against the nodes registered so far.
TEST(QueueYamlTest, QuotasOfAbsentTypesWaitForANodeOfTheType) {
  auto f = ParseQueueYaml(R"(
queues:
  - name: a
    quotas:
      "*": {guarantee: 8}
      H100: {guarantee: 4}
      A100: {guarantee: 2}
  - name: b
    quotas:
      "NVIDIA-A100-SXM4-80GB": {limit: 1}
      B200: {limit: 3}
)",
                          "q.yaml");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  cluster::Cluster h100 = H100s();
  EXPECT_FALSE(BuildQueueTree(*f, "q.yaml", h100).ok());  // A100 and B200 unknown
  std::vector<std::string> dropped;
  QueueFile only = QuotasForCluster(*f, h100, &dropped);
  EXPECT_EQ(dropped, (std::vector<std::string>{"A100", "B200", "NVIDIA-A100-SXM4-80GB"}));
  EXPECT_EQ(only.queues[0].quotas.size(), 2u);  // "*" and H100
  EXPECT_TRUE(only.queues[1].quotas.empty());
  auto t = BuildQueueTree(only, "q.yaml", h100);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->node(0).quota[t->all_types_dim()].guarantee, 8 * G);

  // No nodes yet: only "*" quotas; the product name resolves once an A100 node exists.
  cluster::Cluster none;
  EXPECT_TRUE(BuildQueueTree(QuotasForCluster(*f, none, nullptr), "q.yaml", none).ok());
  cluster::Cluster a100 = std::move(cluster::ParseClusterSpec("1x8:A100").value());
  dropped.clear();
  QueueFile with_a100 = QuotasForCluster(*f, a100, &dropped);
  EXPECT_EQ(dropped, (std::vector<std::string>{"H100", "B200"}));
  EXPECT_EQ(with_a100.queues[1].quotas.count("NVIDIA-A100-SXM4-80GB"), 1u);
  EXPECT_TRUE(BuildQueueTree(with_a100, "q.yaml", a100).ok());
}

}  // namespace
}  // namespace berth::tenancy

namespace berth::tenancy {
namespace {

TEST(QueueYamlBudgets, ReadsBudgetsAndPrices) {
  const char* text = R"(prices: {H100: 4.25}
queues:
  - name: a
    budget: {gpu_hours: 500, period: week}
  - name: b
    budget: {money: 12.5, period: 36h, when_spent: idle}
  - name: c
)";
  auto f = ParseQueueYaml(text, "q.yaml");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto c = H100s();
  auto t = BuildQueueTree(*f, "q.yaml", c);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const QueueNode& a = t->node(t->Find("a"));
  ASSERT_TRUE(a.budget.has_value());
  EXPECT_FALSE(a.budget->money);
  EXPECT_EQ(a.budget->amount, 500'000'000);
  EXPECT_EQ(a.budget->period, BudgetPeriod::kWeek);
  EXPECT_EQ(a.budget->when_spent, WhenSpent::kWait);
  const QueueNode& b = t->node(t->Find("b"));
  ASSERT_TRUE(b.budget.has_value());
  EXPECT_TRUE(b.budget->money);
  EXPECT_EQ(b.budget->amount, 12'500'000);
  EXPECT_EQ(b.budget->period, BudgetPeriod::kRolling);
  EXPECT_EQ(b.budget->window, 36 * 3600 * kUsPerSecond);
  EXPECT_EQ(b.budget->when_spent, WhenSpent::kIdle);
  EXPECT_EQ(PeriodName(*b.budget), "rolling 36h");
  EXPECT_FALSE(t->node(t->Find("c")).budget.has_value());
  EXPECT_EQ(t->PriceOf(GpuTypeId(0), c), 4250);
  EXPECT_TRUE(t->has_money_budget());
}

TEST(QueueYamlBudgets, ErrorsNameTheLineAndField) {
  const struct {
    const char* text;
    const char* error;
  } cases[] = {
      {"queues:\n  - name: a\n    budget: {period: day}\n", "q.yaml:3: queues[0].budget: give one of gpu_hours or money"},
      {"queues:\n  - name: a\n    budget: {gpu_hours: 1, money: 2, period: day}\n", "give one of gpu_hours or money"},
      {"queues:\n  - name: a\n    budget: {gpu_hours: -1, period: day}\n", "queues[0].budget.gpu_hours: must not be negative"},
      {"queues:\n  - name: a\n    budget: {gpu_hours: lots, period: day}\n",
       "queues[0].budget.gpu_hours: expected a number of GPU-hours, got 'lots'"},
      {"queues:\n  - name: a\n    budget: {money: 1.2345, period: day}\n", "queues[0].budget.money: at most three decimals"},
      {"queues:\n  - name: a\n    budget: {gpu_hours: 1}\n", "queues[0].budget.period: missing"},
      {"queues:\n  - name: a\n    budget: {gpu_hours: 1, period: fortnight}\n",
       "q.yaml:3: queues[0].budget.period: expected day, week, month or a rolling window such as 24h, got 'fortnight'"},
      {"queues:\n  - name: a\n    budget: {gpu_hours: 1, period: 30m}\n", "a rolling window must be between 1h and 366d"},
      {"queues:\n  - name: a\n    budget: {gpu_hours: 1, period: day, when_spent: later}\n",
       "queues[0].budget.when_spent: expected wait or idle, got 'later'"},
      {"queues:\n  - name: a\n    budget: {gpu_hours: 1, period: day, cap: 2}\n", "queues[0].budget.cap: unknown key"},
      {"prices: {H200: 3}\nqueues:\n  - name: a\n", "q.yaml:1: prices.H200: the cluster has no GPU type 'H200'"},
      {"prices: {H100: free}\nqueues:\n  - name: a\n", "prices.H100: expected a price per GPU-hour, got 'free'"},
  };
  for (const auto& c : cases) {
    const std::string e = ErrorOf(c.text);
    EXPECT_NE(e.find(c.error), std::string::npos) << c.text << "\n=> " << e;
  }
}

}  // namespace
}  // namespace berth::tenancy
