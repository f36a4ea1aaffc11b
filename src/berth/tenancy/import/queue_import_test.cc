// Importing Kueue, Volcano and KAI queue objects: the mapping of each field,
// the notes for what is not mapped, and errors that name the object.
#include "berth/tenancy/import/queue_import.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "berth/cluster/loaders.h"
#include "berth/testing/paths.h"

namespace berth::tenancy {
namespace {

const QueueSpec* Find(const QueueFile& f, const std::string& name) {
  for (const auto& q : f.queues)
    if (q.name == name) return &q;
  return nullptr;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(QueueImport, KueueClusterQueuesCohortsAndLocalQueues) {
  const std::string text = ReadFile(berth::testing::SourceDir() + "/examples/queues/kueue.yaml");
  ASSERT_TRUE(IsKubernetesObjects(text));
  auto r = ImportQueues(text, "kueue.yaml");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->dialect, QueueDialect::kKueue);
  const QueueSpec* research = Find(r->file, "research");
  ASSERT_NE(research, nullptr);
  EXPECT_EQ(research->parent, "ai");
  const Quota& h100 = research->quotas.at("NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(h100.guarantee, 16'000);
  EXPECT_EQ(h100.borrow_limit, 8'000);
  EXPECT_EQ(research->quotas.at("*").limit, 24'000);  // nominal + borrowing across its flavors
  const QueueSpec* production = Find(r->file, "production");
  ASSERT_NE(production, nullptr);
  EXPECT_EQ(production->quotas.at("NVIDIA-H100-80GB-HBM3").lend_limit, 4'000);
  EXPECT_EQ(production->quotas.count("*"), 0u);  // may borrow without bound inside the cohort
  // The cohort holds its members' nominal quotas and borrows nothing beyond.
  const QueueSpec* ai = Find(r->file, "ai");
  ASSERT_NE(ai, nullptr);
  EXPECT_EQ(ai->quotas.at("NVIDIA-H100-80GB-HBM3").guarantee, 32'000);
  EXPECT_EQ(ai->quotas.at("NVIDIA-H100-80GB-HBM3").borrow_limit, 0);
  // No cohort: no borrowing.
  const QueueSpec* batch = Find(r->file, "batch");
  ASSERT_NE(batch, nullptr);
  EXPECT_EQ(batch->quotas.at("NVIDIA-A100-SXM4-80GB").borrow_limit, 0);
  EXPECT_EQ(batch->quotas.at("*").limit, 8'000);
  // LocalQueues: leaves NAMESPACE.NAME, the namespace as tenant.
  const QueueSpec* train = Find(r->file, "team-nlp.train");
  ASSERT_NE(train, nullptr);
  EXPECT_EQ(train->parent, "research");
  EXPECT_EQ(train->tenants, std::vector<std::string>{"team-nlp"});
  // CPU quotas and namespaceSelector are noted, not mapped.
  bool cpu_note = false;
  for (const auto& n : r->notes) cpu_note |= n.find("(cpu) is not mapped") != std::string::npos;
  EXPECT_TRUE(cpu_note);
  // The product names resolve to the cluster's types when the tree is built.
  auto cluster = cluster::ParseClusterSpec("4x8:H100+2x4:A100");
  ASSERT_TRUE(cluster.ok());
  auto tree = BuildQueueTree(r->file, "kueue.yaml", *cluster);
  EXPECT_TRUE(tree.ok()) << tree.status().message();
  // And the YAML written reads back the same.
  auto again = ParseQueueYaml(QueueFileToYaml(r->file), "again");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->queues.size(), r->file.queues.size());
}

TEST(QueueImport, VolcanoQueues) {
  auto r = ImportQueues(ReadFile(berth::testing::SourceDir() + "/examples/queues/volcano.yaml"), "volcano.yaml");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const QueueSpec* ml = Find(r->file, "ml");
  ASSERT_NE(ml, nullptr);
  EXPECT_EQ(ml->weight, 2);
  EXPECT_EQ(ml->quotas.at("*").guarantee, 16'000);
  EXPECT_EQ(ml->quotas.at("*").limit, 24'000);
  EXPECT_EQ(Find(r->file, "ml-train")->parent, "ml");
  EXPECT_EQ(Find(r->file, "infra")->quotas.at("*").lend_limit, 0);  // reclaimable: false
}

TEST(QueueImport, KaiQueues) {
  auto r = ImportQueues(ReadFile(berth::testing::SourceDir() + "/examples/queues/kai.yaml"), "kai.yaml");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const QueueSpec* a = Find(r->file, "department-a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->quotas.at("*").guarantee, 16'000);
  EXPECT_EQ(a->quotas.at("*").limit, 24'000);
  EXPECT_EQ(a->weight, 2);
  const QueueSpec* t = Find(r->file, "team-a1");
  EXPECT_EQ(t->parent, "department-a");
  EXPECT_EQ(t->quotas.at("*").limit, kUnlimited);  // -1
}

TEST(QueueImport, ErrorsNameTheObjectAndField) {
  auto undefined_flavor = ImportQueues(R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: q}
spec:
  resourceGroups:
    - coveredResources: [nvidia.com/gpu]
      flavors:
        - name: nope
          resources: [{name: nvidia.com/gpu, nominalQuota: 4}]
)", "x.yaml");
  ASSERT_FALSE(undefined_flavor.ok());
  EXPECT_NE(undefined_flavor.status().message().find("ResourceFlavor 'nope' is not defined"), std::string::npos)
      << undefined_flavor.status().message();
  auto bad_quantity = ImportQueues(R"(apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: q}
spec:
  capability: {nvidia.com/gpu: "eight"}
)", "v.yaml");
  ASSERT_FALSE(bad_quantity.ok());
  EXPECT_NE(bad_quantity.status().message().find("v.yaml:5: Queue q: spec.capability.nvidia.com/gpu: 'eight'"), std::string::npos)
      << bad_quantity.status().message();
  auto mixed = ImportQueues("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: a}\n---\n"
                            "apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: b}\n", "m.yaml");
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("two schedulers"), std::string::npos);
  auto other = ImportQueues("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n", "c.yaml");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("not a queue API"), std::string::npos);
  EXPECT_FALSE(ImportQueues("{{{", "y.yaml").ok());
}

}  // namespace
}  // namespace berth::tenancy
