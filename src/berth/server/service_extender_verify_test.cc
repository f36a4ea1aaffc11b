// The extender verbs against a source of truth (a fake API server): made-up
// pods, a real gang's slots, a fake priority and a missing PodGroup are
// refused or replaced by the API server's copy; names over the limits, the
// group and pod caps, and unbound pods in a bound group that expire.
#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include "berth/server/extender.h"
#include "berth/server/extender_test_util.h"
#include "berth/server/extender_verify.h"
#include "berth/server/service_test_util.h"

namespace berth::server {
namespace {

using nlohmann::json;
using testing::PodDoc;
using testing::ServiceHarness;
using testing::WaitFor;

const std::vector<std::string> kNodes = {"node-0", "node-1", "node-2", "node-3"};

// A fake API server: pods by "ns/name", PodGroups by "ns/name" (absent:
// no PodGroup kind served, unless `podgroups_served`).
class FakeApi final : public ExtenderPodSource {
 public:
  void Add(const json& pod_doc, const std::string& node = "") {
    ApiPod p;
    p.pod = k8s::ParsePod(pod_doc).value();
    p.pod.KeepSchedulingMetadata();
    p.node = node;
    p.scheduler_name = pod_doc["spec"].value("schedulerName", "");
    std::lock_guard<std::mutex> lock(mu_);
    pods_[p.pod.ns + "/" + p.pod.name] = p;
  }
  void AddGroup(const std::string& ref, int32_t min_member) {
    std::lock_guard<std::mutex> lock(mu_);
    groups_[ref] = min_member;
  }
  bool podgroups_served = false;

  StatusOr<ApiPod> GetPod(const std::string& ns, const std::string& name) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pods_.find(ns + "/" + name);
    if (it == pods_.end()) return NotFound("pods \"" + name + "\" not found");
    return it->second;
  }
  StatusOr<std::optional<int32_t>> GroupMinMember(const k8s::Pod& pod) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = groups_.find(pod.ns + "/" + pod.group_name());
    if (it != groups_.end()) return std::optional<int32_t>(it->second);
    if (podgroups_served) return NotFound("podgroup");
    return std::optional<int32_t>();
  }

 private:
  std::mutex mu_;
  std::map<std::string, ApiPod> pods_;
  std::map<std::string, int32_t> groups_;
};

json Filter(ServiceHarness& h, const json& pod) {
  ApiResult r = h.service().ExtenderFilter(json{{"pod", pod}, {"nodenames", kNodes}}.dump());
  EXPECT_EQ(r.code, 200) << r.body.dump();
  return r.body;
}

std::string Passed(const json& filter) {
  return filter.contains("nodenames") && filter["nodenames"].size() == 1 ? filter["nodenames"][0].get<std::string>()
                                                                         : "";
}

// Every node failed, each reason containing `words`.
bool RefusedAll(const json& filter, const std::string& words) {
  if (Passed(filter) != "" || !filter.contains("failedNodes") || filter["failedNodes"].size() != kNodes.size())
    return false;
  for (const auto& [node, why] : filter["failedNodes"].items())
    if (why.get<std::string>().find(words) == std::string::npos) return false;
  return true;
}

size_t Jobs(ServiceHarness& h) { return h.service().ListJobs("", -1, 1000).body["jobs"].size(); }

struct Verified {
  std::shared_ptr<FakeApi> api = std::make_shared<FakeApi>();
  ServiceOptions options;
  Verified() {
    options.k8s_pods = api;
    options.extender_scheduler_names = {"default-scheduler"};
  }
};

TEST(ServiceExtenderVerifyTest, MadeUpPodsTakeNothing) {
  Verified v;
  ServiceHarness h("4x8:H100/leaf=2", v.options);
  ASSERT_TRUE(h.Start().ok());
  for (int i = 0; i < 20; ++i)
    EXPECT_TRUE(RefusedAll(Filter(h, PodDoc("fake-" + std::to_string(i), "", 8)), "does not exist in the API server"));
  EXPECT_EQ(Jobs(h), 0u);
  // A real pod under the same name with another uid: refused too.
  json real = PodDoc("p", "", 8);
  v.api->Add(real);
  json forged = real;
  forged["metadata"]["uid"] = "forged";
  EXPECT_TRUE(RefusedAll(Filter(h, forged), "not 'forged'"));
  // A bound or ended pod, or one of another scheduler: refused.
  json bound = PodDoc("b", "", 8);
  v.api->Add(bound, "node-1");
  EXPECT_TRUE(RefusedAll(Filter(h, bound), "already bound to node-1"));
  json other = PodDoc("o", "", 8);
  other["spec"]["schedulerName"] = "volcano";
  v.api->Add(other);
  EXPECT_TRUE(RefusedAll(Filter(h, other), "names scheduler 'volcano'"));
  // The real pod passes.
  EXPECT_NE(Passed(Filter(h, real)), "");
  EXPECT_EQ(Jobs(h), 1u);
  // Bind: only a real, unbound pod with its uid.
  ApiResult bind = h.service().ExtenderBind(
      json{{"PodName", "nobody"}, {"PodNamespace", "ml"}, {"PodUID", "u"}, {"Node", "node-0"}}.dump());
  EXPECT_NE(bind.body["Error"].get<std::string>().find("does not exist"), std::string::npos) << bind.body.dump();
}

TEST(ServiceExtenderVerifyTest, TheApiServersPriorityAndSizeCountNotTheRequests) {
  Verified v;
  ServiceHarness h("4x8:H100/leaf=2", v.options);
  ASSERT_TRUE(h.Start().ok());
  json real = PodDoc("g-0", "g", 8, "2");
  v.api->Add(real);
  json forged = real;
  forged["spec"]["priority"] = 2147483647;
  forged["metadata"]["annotations"]["berth.dev/min-member"] = "1";
  forged["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "1";
  Filter(h, forged);
  const json list = h.service().ListJobs("", -1, 10).body["jobs"];
  ASSERT_EQ(list.size(), 1u);
  const json job = h.service().GetJob(list[0]["id"].get<int64_t>()).body;
  EXPECT_EQ(job["spec"].value("priority", 0), 100) << job.dump();
  EXPECT_EQ(job["spec"]["groups"][0]["count"], 2) << job.dump();
  EXPECT_EQ(job["spec"]["groups"][0]["gpus"], 8) << job.dump();
}

TEST(ServiceExtenderVerifyTest, PodGroupsSetTheSizeAndMustExist) {
  Verified v;
  v.api->podgroups_served = true;
  ServiceHarness h("4x8:H100/leaf=2", v.options);
  ASSERT_TRUE(h.Start().ok());
  json orphan = PodDoc("x-0", "x", 8, "2");
  v.api->Add(orphan);
  EXPECT_TRUE(RefusedAll(Filter(h, orphan), "its PodGroup does not exist"));
  v.api->AddGroup("ml/g", 3);
  json wrong = PodDoc("g-0", "g", 8, "2");
  v.api->Add(wrong);
  EXPECT_TRUE(RefusedAll(Filter(h, wrong), "PodGroup ml/g has minMember 3"));
  // A pod without a size annotation gets the PodGroup's.
  json unsized = PodDoc("g-1", "g", 8, "2");
  unsized["metadata"]["annotations"].erase("berth.dev/min-member");
  v.api->Add(unsized);
  EXPECT_NE(Passed(Filter(h, unsized)), "");
  const json list = h.service().ListJobs("", -1, 10).body["jobs"];
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(h.service().GetJob(list[0]["id"].get<int64_t>()).body["spec"]["groups"][0]["count"], 3);
}

TEST(ServiceExtenderVerifyTest, SizesAndCountsAreBounded) {
  ServiceOptions o;
  o.extender_limits.max_groups = 2;
  o.extender_limits.max_pods = 3;
  ServiceHarness h("4x8:H100/leaf=2", o);
  ASSERT_TRUE(h.Start().ok());
  // A 500 KB group name is refused by the parser, before anything is made of it.
  auto refused = [&](const json& pod, const std::string& words) {
    ApiResult r = h.service().ExtenderFilter(json{{"pod", pod}, {"nodenames", kNodes}}.dump());
    return r.code == 400 && r.body.dump().find(words) != std::string::npos;
  };
  EXPECT_TRUE(refused(PodDoc("h", std::string(500'000, 'g'), 1), "pod group name: 500000 bytes is longer than 253"));
  EXPECT_TRUE(refused(PodDoc(std::string(300, 'n'), "", 1), "pod.metadata.name: 300 bytes is longer than 253"));
  EXPECT_EQ(Jobs(h), 0u);
  EXPECT_NE(Passed(Filter(h, PodDoc("a", "", 1))), "");
  EXPECT_NE(Passed(Filter(h, PodDoc("b", "", 1))), "");
  EXPECT_TRUE(RefusedAll(Filter(h, PodDoc("c", "", 1)), "--extender-max-groups"));
  // Pods: a gang of 4 in a new group would pass the group cap after one ends.
  ASSERT_EQ(h.service().CancelJob(1).code, 200);
  json g0 = PodDoc("g-0", "g", 1, "4");
  EXPECT_NE(Passed(Filter(h, g0)), "");  // pods tracked: b, g-0
  EXPECT_NE(Passed(Filter(h, PodDoc("g-1", "g", 1, "4"))), "");
  EXPECT_TRUE(RefusedAll(Filter(h, PodDoc("g-2", "g", 1, "4")), "--extender-max-pods"));
}

TEST(ServiceExtenderVerifyTest, AGangsSizeCannotBeClaimedDifferently) {
  ServiceHarness h;
  ASSERT_TRUE(h.Start().ok());
  EXPECT_NE(Passed(Filter(h, PodDoc("g-0", "g", 8, "2"))), "");
  EXPECT_TRUE(RefusedAll(Filter(h, PodDoc("g-1", "g", 8, "1")), "claims a gang of 1 pods, but gang ml/g has 2"));
}

TEST(ServiceExtenderVerifyTest, UnboundPodsOfABoundGroupLoseTheirTaskAfterTheTtl) {
  ServiceOptions o;
  o.extender_reservation_ttl = 50'000;  // 50 ms
  std::atomic<int> binds{0};
  o.k8s_bind = [&](const std::string&, const std::string&, const std::string&, const std::string&) {
    ++binds;
    return Status::Ok();
  };
  ServiceHarness h("4x8:H100/leaf=2", o);
  ASSERT_TRUE(h.Start().ok());
  const std::string n0 = Passed(Filter(h, PodDoc("g-0", "g", 8, "2")));
  ASSERT_NE(n0, "");
  ApiResult b = h.service().ExtenderBind(
      json{{"PodName", "g-0"}, {"PodNamespace", "ml"}, {"PodUID", "uid-g-0"}, {"Node", n0}}.dump());
  ASSERT_EQ(b.body["Error"], "") << b.body.dump();
  // An intruder takes the second task but never binds.
  ASSERT_NE(Passed(Filter(h, PodDoc("intruder", "g", 8, "2"))), "");
  EXPECT_TRUE(RefusedAll(Filter(h, PodDoc("g-1", "g", 8, "2")), "already has its 2 pods"));
  // After the TTL the intruder's task is free for the real pod.
  EXPECT_TRUE(WaitFor([&] { return Passed(Filter(h, PodDoc("g-1", "g", 8, "2"))) != ""; }));
}

}  // namespace
}  // namespace berth::server
