// The extender verbs with service replicas (pod_service.h): a Deployment's pod
// (owned by a ReplicaSet) becomes a replica job that outranks batch pods of
// the same pod priority, goes to the reserved nodes, and takes a reserved node
// back from the batch pod that borrowed it; a plain pod of the same shape and
// priority waits.
#include <gtest/gtest.h>

#include "berth/server/colocation_flags.h"
#include "berth/server/extender.h"
#include "berth/server/extender_test_util.h"
#include "berth/server/service_test_util.h"

namespace berth::server {
namespace {

using nlohmann::json;
using testing::PodDoc;
using testing::ServiceHarness;

const std::vector<std::string> kNodes = {"node-0", "node-1"};

json Filter(ServiceHarness& h, const json& pod) {
  ApiResult r = h.service().ExtenderFilter(json{{"pod", pod}, {"nodenames", kNodes}}.dump());
  EXPECT_EQ(r.code, 200) << r.body.dump();
  return r.body;
}

std::string Passed(const json& filter) {
  return filter.contains("nodenames") && filter["nodenames"].size() == 1 ? filter["nodenames"][0].get<std::string>()
                                                                         : "";
}

json JobNamed(ServiceHarness& h, const std::string& name) {
  json found;
  ApiResult list = h.service().ListJobs("", -1, 1000);
  for (const auto& j : list.body["jobs"])
    if (j["name"] == name) found = h.service().GetJob(j["id"].get<int64_t>()).body;
  EXPECT_FALSE(found.is_null()) << "no job " << name << " in " << list.body.dump();
  return found;
}

// A pod of Deployment "web", as its ReplicaSet makes it.
json DeploymentPod(const std::string& suffix) {
  json pod = PodDoc("web-5f7c9-" + suffix, "", 8);
  pod["metadata"]["labels"]["pod-template-hash"] = "5f7c9";
  pod["metadata"]["ownerReferences"] = {
      {{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}, {"name", "web-5f7c9"}, {"uid", "rs-1"}, {"controller", true}}};
  return pod;
}

ServiceOptions Reserved() {
  ServiceOptions o;
  o.policy = "priority-preempt";  // the min-runtime guard stays at its default (600 s)
  const cluster::Cluster c = cluster::ParseClusterSpec("2x8:H100").value();
  ServeColocation f;
  f.reserved = "node-0";
  o.colocation = ColocationArgs(f, c, nullptr).value();
  return o;
}

TEST(ServiceExtenderReplica, ADeploymentPodTakesTheReservedNodeBackFromBatch) {
  ServiceHarness h("2x8:H100", Reserved());
  ASSERT_TRUE(h.Start().ok());
  // Two batch pods fill both nodes (one borrows the idle reservation).
  const std::string b0 = Passed(Filter(h, PodDoc("b-0", "", 8)));
  const std::string b1 = Passed(Filter(h, PodDoc("b-1", "", 8)));
  ASSERT_NE(b0, "");
  ASSERT_NE(b1, "");
  const std::string borrower = b0 == "node-0" ? "ml/pod:b-0" : "ml/pod:b-1";
  const std::string other = borrower == "ml/pod:b-0" ? "ml/pod:b-1" : "ml/pod:b-0";
  // A plain pod of the same shape and priority waits.
  json plain = Filter(h, PodDoc("plain", "", 8));
  h.Quiesce();
  EXPECT_EQ(Passed(Filter(h, PodDoc("plain", "", 8))), "") << plain.dump();
  // The Deployment's pod is a guaranteed replica: it evicts the borrower.
  Filter(h, DeploymentPod("a"));
  h.Quiesce();
  json again = Filter(h, DeploymentPod("a"));
  EXPECT_EQ(Passed(again), "node-0") << again.dump();
  json replica = JobNamed(h, "ml/pod:web-5f7c9-a");
  EXPECT_EQ(replica["state"], "running") << replica.dump();
  EXPECT_EQ(replica["spec"]["priority"], 100 + 2000) << replica.dump();
  EXPECT_NE(JobNamed(h, borrower)["state"], "running");
  EXPECT_EQ(JobNamed(h, other)["state"], "running");
  EXPECT_EQ(Passed(Filter(h, PodDoc("plain", "", 8))), "");
  // A second replica has no reserved node left: it waits rather than take the batch node.
  Filter(h, DeploymentPod("b"));
  h.Quiesce();
  json second = Filter(h, DeploymentPod("b"));
  EXPECT_EQ(Passed(second), "") << second.dump();
  EXPECT_EQ(JobNamed(h, other)["state"], "running");
}

TEST(ServiceExtenderReplica, ABadServiceAnnotationIsRefusedNamingIt) {
  ServiceHarness h("2x8:H100", Reserved());
  ASSERT_TRUE(h.Start().ok());
  json pod = DeploymentPod("c");
  pod["metadata"]["annotations"]["berth.dev/min-replicas"] = "-1";
  json out = Filter(h, pod);
  ASSERT_TRUE(out["failedAndUnresolvableNodes"].contains("node-0")) << out.dump();
  EXPECT_NE(out["failedNodes"]["node-0"].get<std::string>().find("annotation berth.dev/min-replicas"),
            std::string::npos)
      << out.dump();
}

}  // namespace
}  // namespace berth::server
