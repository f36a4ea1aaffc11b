// Which Kubernetes pods are service replicas (a Deployment's, through their
// ReplicaSet; a berth.dev/service label), the errors that name the
// annotation, and the replica job a pod becomes (priority, spread, class).
#include "berth/server/pod_service.h"

#include <gtest/gtest.h>

#include "berth/workload/service_controller.h"

namespace berth::server::k8s {
namespace {

Pod DeploymentPod(const std::string& name) {
  Pod p;
  p.ns = "ml";
  p.name = name;
  p.owner_kind = "ReplicaSet";
  p.owner_name = "web-7d9f5c";
  p.labels["pod-template-hash"] = "7d9f5c";
  return p;
}

TEST(PodService, ADeploymentsPodIsAReplicaOfTheDeployment) {
  auto s = ServiceOfPod(DeploymentPod("web-7d9f5c-x2k"));
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(s->replica());
  EXPECT_EQ(s->name, "ml/web");
  EXPECT_EQ(s->source, "ReplicaSet web-7d9f5c");
  EXPECT_EQ(s->min_replicas, -1);
  // A ReplicaSet of its own (no pod-template-hash): the ReplicaSet's name.
  Pod bare = DeploymentPod("rs-1");
  bare.labels.clear();
  EXPECT_EQ(ServiceOfPod(bare)->name, "ml/web-7d9f5c");
}

TEST(PodService, TheLabelNamesTheServiceOrOptsOut) {
  Pod p;
  p.ns = "ml";
  p.name = "api-0";
  p.owner_kind = "StatefulSet";
  p.owner_name = "api";
  EXPECT_FALSE(ServiceOfPod(p)->replica());  // only ReplicaSets' pods without the label
  p.labels["berth.dev/service"] = "chat";
  auto s = ServiceOfPod(p);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->name, "ml/chat");
  EXPECT_EQ(s->source, "label berth.dev/service");
  Pod out = DeploymentPod("web-7d9f5c-x2k");
  out.labels["berth.dev/service"] = "none";
  EXPECT_FALSE(ServiceOfPod(out)->replica());
  // A gang's pods stay its members.
  Pod gang = DeploymentPod("w-0");
  gang.annotations["scheduling.k8s.io/group-name"] = "g";
  EXPECT_FALSE(ServiceOfPod(gang)->replica());
}

TEST(PodService, AnnotationsAndTheirErrors) {
  Pod p = DeploymentPod("web-7d9f5c-x2k");
  p.annotations["berth.dev/min-replicas"] = "2";
  p.annotations["berth.dev/max-per-node"] = "1";
  p.annotations["berth.dev/latency-class"] = "critical";
  auto s = ServiceOfPod(p);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->min_replicas, 2);
  EXPECT_EQ(s->max_per_node, 1);
  EXPECT_EQ(s->latency_class, job::LatencyClass::kCritical);
  p.annotations["berth.dev/min-replicas"] = "two";
  EXPECT_EQ(ServiceOfPod(p).status().message(),
            "pod ml/web-7d9f5c-x2k: annotation berth.dev/min-replicas: expected an integer in 0..100000, found 'two'");
  p.annotations["berth.dev/min-replicas"] = "2";
  p.annotations["berth.dev/latency-class"] = "urgent";
  EXPECT_EQ(ServiceOfPod(p).status().message(),
            "pod ml/web-7d9f5c-x2k: annotation berth.dev/latency-class: expected critical or standard, found 'urgent'");
  p.annotations.erase("berth.dev/latency-class");
  p.annotations["berth.dev/best-effort"] = "true";
  EXPECT_NE(ServiceOfPod(p).status().message().find("cannot be best effort"), std::string::npos);
  Pod batch;
  batch.name = "b";
  batch.annotations["berth.dev/best-effort"] = "yes";
  EXPECT_EQ(ServiceOfPod(batch).status().message(),
            "pod default/b: annotation berth.dev/best-effort: expected \"true\" or \"false\", found 'yes'");
  batch.annotations["berth.dev/best-effort"] = "true";
  EXPECT_TRUE(ServiceOfPod(batch)->best_effort);
}

TEST(PodService, TheReplicaJobOutranksBatchWhileGuaranteed) {
  Pod p = DeploymentPod("web-7d9f5c-x2k");
  p.annotations["berth.dev/min-replicas"] = "1";
  p.annotations["berth.dev/max-per-node"] = "1";
  const PodService s = ServiceOfPod(p).value();
  job::JobSpec first;
  first.name = "ml/pod:web-7d9f5c-x2k";
  first.priority = 5;
  first.groups.push_back(job::TaskGroup{.name = "pods", .count = 1, .gpus = 1});
  job::JobSpec second = first;
  MakeReplica(s, JobId(40), 0, first);
  EXPECT_EQ(first.replica_of, JobId(40));
  ASSERT_TRUE(first.service.has_value());
  EXPECT_EQ(first.service->max_per_node, 1);
  EXPECT_EQ(first.priority, 5 + workload::kGuaranteedBoost);
  EXPECT_TRUE(job::ValidateJob(first).ok()) << job::ValidateJob(first).message();
  MakeReplica(s, JobId(40), 1, second);  // one replica held already: above the floor
  EXPECT_EQ(second.priority, 5 + workload::kBurstBoost);
  // A batch pod is left as it is, but for best effort.
  Pod b;
  b.name = "b";
  b.annotations["berth.dev/best-effort"] = "true";
  job::JobSpec batch;
  MakeReplica(ServiceOfPod(b).value(), JobId(), 0, batch);
  EXPECT_FALSE(batch.replica_of.valid());
  EXPECT_FALSE(batch.service.has_value());
  EXPECT_TRUE(batch.best_effort);
  EXPECT_EQ(batch.priority, 0);
}

}  // namespace
}  // namespace berth::server::k8s
