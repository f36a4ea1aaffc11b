// GET /v1/queues on a service with a queue tree: quotas enforced, the
// ledger's figures per queue and dimension, jobs counted up the tree.
#include <gtest/gtest.h>

#include "berth/server/service_test_util.h"
#include "berth/tenancy/queue_yaml.h"

namespace berth::server {
namespace {

using testing::ServiceHarness;
using testing::WaitFor;

// Service options holding the queue tree of `yaml` (a queue file) built for
// the cluster `spec`; no tree (and a test failure) when either is bad.
ServiceOptions WithQueues(const char* yaml, const std::string& spec) {
  ServiceOptions options;
  auto cluster = cluster::ParseClusterSpec(spec);
  auto file = tenancy::ParseQueueYaml(yaml, "q.yaml");
  EXPECT_TRUE(cluster.ok() && file.ok()) << (file.ok() ? cluster.status() : file.status()).ToString();
  if (!cluster.ok() || !file.ok()) return options;
  auto tree = tenancy::BuildQueueTree(*file, "q.yaml", *cluster);
  EXPECT_TRUE(tree.ok()) << tree.status().ToString();
  if (tree.ok()) options.queues = std::make_shared<const tenancy::QueueTree>(std::move(tree).value());
  return options;
}

const nlohmann::json* QueueNamed(const nlohmann::json& body, const std::string& name) {
  for (const auto& q : body["queues"])
    if (q["name"] == name) return &q;
  return nullptr;
}

TEST(ServiceQueuesTest, TreeQuotasAndFigures) {
  const char* yaml = R"(
queues:
  - name: lab
    quotas: {"*": {guarantee: 16}}
  - name: lab-a
    parent: lab
    tenants: [alice]
    quotas:
      "*": {guarantee: 8, limit: 16}
      H100: {guarantee: 8}
  - name: lab-b
    parent: lab
    tenants: [bob]
    quotas: {"*": {guarantee: 8}}
)";
  ServiceOptions options = WithQueues(yaml, "4x8:H100/leaf=2");
  ASSERT_TRUE(options.queues);
  ServiceHarness h("4x8:H100/leaf=2", options);
  ASSERT_TRUE(h.Start().ok());
  const int64_t a = h.Submit(R"({"name":"a","tenant":"alice","groups":[{"count":2,"gpus":8}]})");
  ASSERT_TRUE(WaitFor([&] { return h.State(a) == "running"; }));
  const int64_t b = h.Submit(R"({"name":"b","tenant":"alice","groups":[{"count":1,"gpus":1}]})");
  ASSERT_TRUE(WaitFor([&] { return !h.service().WhyJob(b).body["verdict"].is_null(); }));
  nlohmann::json why = h.service().WhyJob(b).body;
  EXPECT_EQ(why["state"], "pending");
  EXPECT_EQ(why["verdict"]["plugin"], "quota") << why.dump();
  EXPECT_EQ(why["why"], "queue 'lab-a' (all GPU types): would use 17 GPUs, over its limit of 16");

  // A job shows the leaf queue it is charged to (its tenant maps to lab-a),
  // its nodes while running and its reason while pending.
  const nlohmann::json ja = h.service().GetJob(a).body;
  EXPECT_EQ(ja["queue"], "lab-a");
  EXPECT_EQ(ja["tenant"], "alice");
  EXPECT_EQ(ja["nodes"].size(), 2u) << ja.dump();
  EXPECT_EQ(ja["why"], "");
  const nlohmann::json list = h.service().ListJobs("pending", -1, 100).body;
  ASSERT_EQ(list["jobs"].size(), 1u) << list.dump();
  EXPECT_EQ(list["jobs"][0]["queue"], "lab-a");
  EXPECT_EQ(list["jobs"][0]["why"], why["why"]);
  EXPECT_TRUE(list["jobs"][0]["nodes"].empty());

  ApiResult r = h.service().Queues();
  ASSERT_EQ(r.code, 200);
  const nlohmann::json* qa = QueueNamed(r.body, "lab-a");
  ASSERT_NE(qa, nullptr) << r.body.dump();
  EXPECT_EQ((*qa)["parent"], "lab");
  EXPECT_EQ((*qa)["leaf"], true);
  EXPECT_EQ((*qa)["running"], 1);
  EXPECT_EQ((*qa)["pending"], 1);
  EXPECT_EQ((*qa)["running_gpus"], 16);
  EXPECT_EQ((*qa)["usage_gpus"], 16.0);
  EXPECT_EQ((*qa)["borrowed_gpus"], 8.0);
  EXPECT_EQ((*qa)["dimensions"]["*"]["limit"], 16.0);
  EXPECT_TRUE((*qa)["dimensions"]["*"]["borrow_limit"].is_null());
  EXPECT_EQ((*qa)["dimensions"]["H100"]["guarantee"], 8.0);
  EXPECT_EQ((*qa)["dimensions"]["H100"]["borrowed"], 8.0);
  const nlohmann::json* lab = QueueNamed(r.body, "lab");
  ASSERT_NE(lab, nullptr);
  EXPECT_EQ((*lab)["leaf"], false);
  EXPECT_EQ((*lab)["running"], 1);  // jobs count up the tree
  EXPECT_EQ((*lab)["usage_gpus"], 16.0);
  EXPECT_EQ((*lab)["borrowed_gpus"], 0.0);
  const nlohmann::json* qb = QueueNamed(r.body, "lab-b");
  ASSERT_NE(qb, nullptr);
  EXPECT_EQ((*qb)["usage_gpus"], 0.0);
  EXPECT_FALSE((*qb)["dimensions"].contains("H100"));  // no quota and no use there

  // A tenant the tree does not know: refused at submission (no default queue), nothing stored.
  h.Submit(R"({"name":"c","tenant":"carol","groups":[{"count":1,"gpus":1}]})", 422);
  { Status tallies = h.service().CheckReadTallies(); EXPECT_TRUE(tallies.ok()) << tallies.ToString(); }
}

TEST(ServiceQueuesTest, WithoutATreeEveryTenantHasItsOwnQueue) {
  ServiceHarness h;
  ASSERT_TRUE(h.Start().ok());
  const int64_t a = h.Submit(R"({"name":"a","tenant":"alice","groups":[{"count":1,"gpus":8}]})");
  const int64_t b = h.Submit(R"({"name":"b","queue":"research","groups":[{"count":1,"gpus":4}]})");
  ASSERT_TRUE(WaitFor([&] { return h.State(a) == "running" && h.State(b) == "running"; }));
  ApiResult r = h.service().Queues();
  const nlohmann::json* alice = QueueNamed(r.body, "alice");
  const nlohmann::json* research = QueueNamed(r.body, "research");
  ASSERT_NE(alice, nullptr) << r.body.dump();
  ASSERT_NE(research, nullptr) << r.body.dump();
  EXPECT_EQ((*alice)["usage_gpus"], 8.0);
  EXPECT_EQ((*research)["usage_gpus"], 4.0);
  EXPECT_TRUE((*alice)["dimensions"]["*"]["guarantee"].is_null());
  EXPECT_EQ(r.body["unit"], "gpus");
  EXPECT_EQ((*alice)["unit"], "gpus");
  { Status tallies = h.service().CheckReadTallies(); EXPECT_TRUE(tallies.ok()) << tallies.ToString(); }
}

// unit: normalized: the queue figures are H100-equivalents, converted by the
// catalog's spec-based estimate (no measured table): 8 H100s are 8.
TEST(ServiceQueuesTest, NormalizedUnits) {
  const char* yaml = "unit: normalized\nreference: H100\nqueues:\n  - name: a\n    tenants: [alice]\n"
                     "    quotas: {\"*\": {guarantee: 4, limit: 8}}\n";
  ServiceOptions options = WithQueues(yaml, "4x8:H100/leaf=2");
  ASSERT_TRUE(options.queues);
  options.catalog = std::string(BERTH_SOURCE_DIR) + "/data/accelerators.yaml";
  options.throughputs = "";
  ServiceHarness h("4x8:H100/leaf=2", options);
  ASSERT_TRUE(h.Start().ok());
  const int64_t a = h.Submit(R"({"name":"a","tenant":"alice","groups":[{"count":1,"gpus":8}]})");
  ASSERT_TRUE(WaitFor([&] { return h.State(a) == "running"; }));
  const int64_t b = h.Submit(R"({"name":"b","tenant":"alice","groups":[{"count":1,"gpus":1}]})");
  ASSERT_TRUE(WaitFor([&] { return !h.service().WhyJob(b).body["verdict"].is_null(); }));
  EXPECT_EQ(h.service().WhyJob(b).body["why"],
            "queue 'a' (all GPU types): would use 9 H100-equivalents, over its limit of 8");
  ApiResult r = h.service().Queues();
  EXPECT_EQ(r.body["unit"], "normalized");
  EXPECT_EQ(r.body["reference"], "H100");
  const nlohmann::json* q = QueueNamed(r.body, "a");
  ASSERT_NE(q, nullptr) << r.body.dump();
  EXPECT_EQ((*q)["usage_gpus"], 8.0);
  EXPECT_EQ((*q)["guarantee_gpus"], 4.0);
  EXPECT_EQ((*q)["unit"], "normalized");
  { Status tallies = h.service().CheckReadTallies(); EXPECT_TRUE(tallies.ok()) << tallies.ToString(); }
}

}  // namespace
}  // namespace berth::server

namespace berth::server {
namespace {

// Budgets: a run's class in the job document, the budget's figures in GET
// /v1/queues and /metrics, and new work waiting with a why naming the budget.
TEST(ServiceQueuesTest, BudgetsAndClasses) {
  const char* yaml = R"(
queues:
  - name: a
    tenants: [alice]
    quotas: {"*": {guarantee: 8}}
    budget: {gpu_hours: 0.001, period: day}
)";
  ServiceOptions options = WithQueues(yaml, "4x8:H100");
  ASSERT_TRUE(options.queues);
  ServiceHarness h("4x8:H100", options);
  ASSERT_TRUE(h.Start().ok());
  const int64_t j1 = h.Submit(R"({"name":"j1","tenant":"alice","groups":[{"count":1,"gpus":8}]})");
  const int64_t j2 = h.Submit(R"({"name":"j2","tenant":"alice","groups":[{"count":1,"gpus":8}]})");
  ASSERT_TRUE(WaitFor([&] { return h.State(j1) == "running" && h.State(j2) == "running"; }));
  EXPECT_EQ(h.service().GetJob(j1).body["class"], "guaranteed");
  const nlohmann::json d2 = h.service().GetJob(j2).body;
  EXPECT_EQ(d2["class"], "best-effort") << d2.dump();
  EXPECT_EQ(d2["class_reason"], "beyond guarantee");
  // 16 GPUs spend 0.001 GPU-hours in 0.225 s.
  ASSERT_TRUE(WaitFor([&] {
    const nlohmann::json queues = h.service().Queues().body;  // QueueNamed points into it
    const nlohmann::json* q = QueueNamed(queues, "a");
    return q && q->contains("budget") && (*q)["budget"].value("exhausted", false);
  }));
  const nlohmann::json* q = nullptr;
  nlohmann::json body = h.service().Queues().body;
  q = QueueNamed(body, "a");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ((*q)["budget"]["unit"], "GPU-hours");
  EXPECT_EQ((*q)["budget"]["period"], "day");
  EXPECT_EQ((*q)["budget"]["when_spent"], "wait");
  EXPECT_DOUBLE_EQ((*q)["budget"]["amount"].get<double>(), 0.001);
  EXPECT_DOUBLE_EQ((*q)["budget"]["rate_per_hour"].get<double>(), 16.0);
  EXPECT_EQ((*q)["running_best_effort"], 1);
  const int64_t j3 = h.Submit(R"({"name":"j3","tenant":"alice","groups":[{"count":1,"gpus":1}]})");
  ASSERT_TRUE(WaitFor([&] { return !h.service().WhyJob(j3).body["verdict"].is_null(); }));
  const nlohmann::json why = h.service().WhyJob(j3).body;
  EXPECT_EQ(why["verdict"]["plugin"], "budget") << why.dump();
  EXPECT_NE(why["why"].get<std::string>().find("queue 'a': budget of 0.001 GPU-hours per day spent"),
            std::string::npos)
      << why.dump();
  const std::string m = h.service().MetricsText();
  EXPECT_NE(m.find("berth_queue_budget{queue=\"a\",unit=\"GPU-hours\"} 0.001"), std::string::npos) << m;
  EXPECT_NE(m.find("berth_queue_budget_exhausted{queue=\"a\"} 1"), std::string::npos);
  EXPECT_NE(m.find("berth_queue_running_best_effort_jobs{queue=\"a\"} 1"), std::string::npos);
  { Status tallies = h.service().CheckReadTallies(); EXPECT_TRUE(tallies.ok()) << tallies.ToString(); }
}

}  // namespace
}  // namespace berth::server
