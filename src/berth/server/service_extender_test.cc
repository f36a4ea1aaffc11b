// The extender's bookkeeping over a group's life: lone pods by uid, bound
// groups that never expire, releases from the watch (pod gone, pod bound),
// the bind verb through an injected binder, preemption's usable nodes.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>

#include "berth/server/extender.h"
#include "berth/server/extender_test_util.h"
#include "berth/server/service_test_util.h"

namespace berth::server {
namespace {

using nlohmann::json;
using testing::PodDoc;
using testing::ServiceHarness;
using testing::WaitFor;

const std::vector<std::string> kNodes = {"node-0", "node-1", "node-2", "node-3"};

json Filter(ServiceHarness& h, const json& pod) {
  ApiResult r = h.service().ExtenderFilter(json{{"pod", pod}, {"nodenames", kNodes}}.dump());
  EXPECT_EQ(r.code, 200) << r.body.dump();
  return r.body;
}

// The node the filter passed ("" when none).
std::string Passed(const json& filter) {
  return filter.contains("nodenames") && filter["nodenames"].size() == 1 ? filter["nodenames"][0].get<std::string>()
                                                                         : "";
}

// The newest job named `name` (a group key such as "ml/g" or "ml/pod:p"), in detail.
json JobNamed(ServiceHarness& h, const std::string& name) {
  json found;
  ApiResult list = h.service().ListJobs("", -1, 1000);
  for (const auto& j : list.body["jobs"])
    if (j["name"] == name) found = h.service().GetJob(j["id"].get<int64_t>()).body;
  EXPECT_FALSE(found.is_null()) << "no job " << name << " in " << list.body.dump();
  return found;
}

std::string Bind(ServiceHarness& h, const std::string& pod, const std::string& node) {
  ApiResult r = h.service().ExtenderBind(
      json{{"PodName", pod}, {"PodNamespace", "ml"}, {"PodUID", "uid-" + pod}, {"Node", node}}.dump());
  EXPECT_EQ(r.code, 200) << r.body.dump();
  return r.body.value("Error", std::string("<no Error key>"));
}

json WithUid(json pod, const std::string& uid) {
  pod["metadata"]["uid"] = uid;
  return pod;
}

TEST(ServiceExtenderTest, LonePodRecreatedUnderItsNameIsANewJob) {
  ServiceHarness h;
  ASSERT_TRUE(h.Start().ok());
  // Four lone 8-GPU pods fill the four nodes.
  for (int i = 0; i < 4; ++i) ASSERT_NE(Passed(Filter(h, PodDoc("single-" + std::to_string(i), "", 8))), "");
  const int64_t old_id = JobNamed(h, "ml/pod:single-0")["id"];
  // single-0 is deleted and re-created (StatefulSet): same name, new uid.
  json again = Filter(h, WithUid(PodDoc("single-0", "", 8), "uid-single-0-b"));
  EXPECT_NE(Passed(again), "") << again.dump();  // the old pod's GPUs were freed for it
  json now = JobNamed(h, "ml/pod:single-0");
  EXPECT_NE(now["id"], old_id);
  EXPECT_EQ(now["state"], "running");
  EXPECT_EQ(now["extender"]["pods"][0]["uid"], "uid-single-0-b");
  json old = h.service().GetJob(old_id).body;
  EXPECT_EQ(old["state"], "succeeded");
  EXPECT_NE(old["reason"].get<std::string>().find("replaced"), std::string::npos) << old.dump();
  EXPECT_NE(h.service().MetricsText().find("berth_gpus_allocated{gpu_type=\"H100\"} 32"), std::string::npos);
  // The same uid again is a retry of the same job.
  EXPECT_EQ(Passed(Filter(h, WithUid(PodDoc("single-0", "", 8), "uid-single-0-b"))), Passed(again));
  EXPECT_EQ(JobNamed(h, "ml/pod:single-0")["id"], now["id"]);
}

TEST(ServiceExtenderTest, GangPodRecreatedUnderItsNameTakesItsTask) {
  ServiceHarness h;
  ASSERT_TRUE(h.Start().ok());
  const std::string a = Passed(Filter(h, PodDoc("w-0", "g", 8)));
  const std::string b = Passed(Filter(h, PodDoc("w-1", "g", 8)));
  ASSERT_NE(a, "");
  ASSERT_NE(b, "");
  const int64_t id = JobNamed(h, "ml/g")["id"];
  // w-0 re-created: the gang keeps its placement, the new pod gets w-0's node.
  EXPECT_EQ(Passed(Filter(h, WithUid(PodDoc("w-0", "g", 8), "uid-w-0-b"))), a);
  json job = JobNamed(h, "ml/g");
  EXPECT_EQ(job["id"], id);
  EXPECT_EQ(job["extender"]["pods"].size(), 2u) << job.dump();
}

TEST(ServiceExtenderTest, BoundGroupsNeverExpireUnboundOnesDo) {
  ServiceOptions o;
  // Long enough that the bound group is bound well before it could expire,
  // short enough for a test.
  o.extender_reservation_ttl = 2'000'000;
  ServiceHarness h("4x8:H100/leaf=2", o);
  ASSERT_TRUE(h.Start().ok());
  const std::string n0 = Passed(Filter(h, PodDoc("b-0", "bound", 8)));
  const std::string n1 = Passed(Filter(h, PodDoc("b-1", "bound", 8)));
  ASSERT_NE(n0, "");
  ASSERT_NE(n1, "");
  // The watch saw both pods bound (kube-scheduler's own binder bound them).
  h.service().ExtenderPodBound("ml", "b-0", "uid-b-0", n0);
  h.service().ExtenderPodBound("ml", "b-1", "uid-b-1", n1);
  ASSERT_NE(Passed(Filter(h, PodDoc("u-0", "unbound", 8))), "");
  const int64_t unbound = JobNamed(h, "ml/unbound")["id"];
  // Both groups are checked in the same expiry pass: once the unbound one is
  // gone, the bound one has been looked at too.
  ASSERT_TRUE(WaitFor([&] { return h.State(unbound) == "cancelled"; }));
  json bound = JobNamed(h, "ml/bound");
  EXPECT_EQ(bound["state"], "running") << bound.dump();
  EXPECT_TRUE(bound["extender"]["bound"].get<bool>());
  EXPECT_EQ(h.service().GetJob(unbound).body["reason"], "extender reservation expired unbound");
  EXPECT_NE(h.service().MetricsText().find("berth_gpus_allocated{gpu_type=\"H100\"} 16"), std::string::npos);
}

TEST(ServiceExtenderTest, PodGoneReleasesTheGroupAndRetriesWaitingGangs) {
  ServiceHarness h;
  ASSERT_TRUE(h.Start().ok());
  for (int i = 0; i < 4; ++i) ASSERT_NE(Passed(Filter(h, PodDoc("big-" + std::to_string(i), "big", 8, "4"))), "");
  // A second gang waits: the cluster is full.
  json wait = Filter(h, PodDoc("next-0", "next", 8, "2"));
  EXPECT_EQ(Passed(wait), "");
  EXPECT_NE(wait["failedNodes"]["node-0"].get<std::string>().find("does not fit"), std::string::npos) << wait.dump();
  const int64_t big = JobNamed(h, "ml/big")["id"];
  const int64_t next = JobNamed(h, "ml/next")["id"];
  // Three of the four pods end: the gang keeps its GPUs.
  for (int i = 0; i < 3; ++i) h.service().ExtenderPodGone("ml", "big-" + std::to_string(i), "uid-big-" + std::to_string(i));
  h.Quiesce();
  EXPECT_EQ(h.State(big), "running");
  EXPECT_EQ(JobNamed(h, "ml/big")["extender"]["pods"].size(), 1u);
  h.service().ExtenderPodGone("ml", "nobody", "uid-nobody");  // unknown: ignored
  // The last one: the job ends and the waiting gang is placed without a filter call.
  h.service().ExtenderPodGone("ml", "big-3", "uid-big-3");
  ASSERT_TRUE(WaitFor([&] { return h.State(next) == "running"; }));
  EXPECT_EQ(h.State(big), "succeeded");
  EXPECT_NE(Passed(Filter(h, PodDoc("next-0", "next", 8, "2"))), "");
  EXPECT_NE(Passed(Filter(h, PodDoc("next-1", "next", 8, "2"))), "");
  // A waiting gang whose pods are all deleted is dropped.
  Filter(h, PodDoc("late-0", "late", 8, "4"));
  const int64_t late = JobNamed(h, "ml/late")["id"];
  EXPECT_EQ(h.State(late), "pending");
  h.service().ExtenderPodGone("ml", "late-0", "");  // by name when the uid is unknown
  ASSERT_TRUE(WaitFor([&] { return h.State(late) == "cancelled"; }));
}

TEST(ServiceExtenderTest, PodBoundFromTheWatch) {
  ServiceHarness h;
  ASSERT_TRUE(h.Start().ok());
  const std::string n = Passed(Filter(h, PodDoc("p", "", 4)));
  ASSERT_NE(n, "");
  h.service().ExtenderPodBound("ml", "stranger", "uid-stranger", "node-0");  // unknown: ignored
  h.service().ExtenderPodBound("ml", "p", "uid-p", n);
  h.Quiesce();
  json job = JobNamed(h, "ml/pod:p");
  EXPECT_TRUE(job["extender"]["bound"].get<bool>());
  EXPECT_TRUE(job["extender"]["pods"][0]["bound"].get<bool>());
  EXPECT_EQ(job["extender"]["pods"][0]["node"], n);
  h.service().ExtenderPodGone("ml", "p", "uid-p");
  ASSERT_TRUE(WaitFor([&] { return h.State(job["id"]) == "succeeded"; }));
}

TEST(ServiceExtenderTest, BindWithoutAnApiServerIsAnError) {
  ServiceHarness h;
  ASSERT_TRUE(h.Start().ok());
  const std::string n = Passed(Filter(h, PodDoc("p", "", 1)));
  const std::string err = Bind(h, "p", n);
  EXPECT_NE(err.find("no Kubernetes API server"), std::string::npos) << err;
  EXPECT_FALSE(JobNamed(h, "ml/pod:p")["extender"]["bound"].get<bool>());
}

struct FakeBinder {
  std::mutex mu;
  std::vector<std::string> calls;  // "ns/name uid node"
  Status answer = Status::Ok();
  std::function<Status(const std::string&, const std::string&, const std::string&, const std::string&)> Fn() {
    return [this](const std::string& ns, const std::string& name, const std::string& uid, const std::string& node) {
      std::lock_guard<std::mutex> lock(mu);
      calls.push_back(ns + "/" + name + " " + uid + " " + node);
      return answer;
    };
  }
};

TEST(ServiceExtenderTest, BindCreatesTheBindingThroughTheBinder) {
  FakeBinder binder;
  ServiceOptions o;
  o.k8s_bind = binder.Fn();
  ServiceHarness h("4x8:H100/leaf=2", o);
  ASSERT_TRUE(h.Start().ok());
  const std::string n = Passed(Filter(h, PodDoc("p", "", 1)));
  ASSERT_NE(n, "");
  const std::string other = n == "node-0" ? "node-1" : "node-0";
  // Off the plan: refused before any API call.
  EXPECT_NE(Bind(h, "p", other).find("is placed on " + n), std::string::npos);
  EXPECT_TRUE(binder.calls.empty());
  EXPECT_EQ(Bind(h, "p", n), "");
  ASSERT_EQ(binder.calls.size(), 1u);
  EXPECT_EQ(binder.calls[0], "ml/p uid-p " + n);
  json job = JobNamed(h, "ml/pod:p");
  EXPECT_TRUE(job["extender"]["bound"].get<bool>());
  EXPECT_EQ(job["extender"]["pods"][0]["node"], n);
  // The API server's refusal reaches kube-scheduler; the pod stays unbound.
  const std::string n2 = Passed(Filter(h, PodDoc("q", "", 1)));
  binder.answer = FailedPrecondition("pods \"q\" not found");
  const std::string err = Bind(h, "q", n2);
  EXPECT_NE(err.find("pods \"q\" not found"), std::string::npos) << err;
  EXPECT_FALSE(JobNamed(h, "ml/pod:q")["extender"]["bound"].get<bool>());
}

TEST(ServiceExtenderTest, ABlockingBinderDoesNotHoldTheLoop) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> entered{false};
  ServiceOptions o;
  o.k8s_bind = [&](const std::string&, const std::string&, const std::string&, const std::string&) {
    entered = true;
    released.wait();
    return Status::Ok();
  };
  ServiceHarness h("4x8:H100/leaf=2", o);
  ASSERT_TRUE(h.Start().ok());
  const std::string n = Passed(Filter(h, PodDoc("p", "", 1)));
  auto bind = std::async(std::launch::async, [&] { return Bind(h, "p", n); });
  ASSERT_TRUE(WaitFor([&] { return entered.load(); }));
  // While the API call is in flight the loop answers other verbs.
  EXPECT_TRUE(h.service().Sync());
  EXPECT_NE(Passed(Filter(h, PodDoc("other", "", 1))), "");
  release.set_value();
  EXPECT_EQ(bind.get(), "");
}

TEST(ServiceExtenderTest, PreemptKeepsOnlyNodesBerthCanUse) {
  ServiceHarness h("2x8:H100+2x4:H100");
  ASSERT_TRUE(h.Start().ok());
  std::vector<std::string> names;
  for (int i = 0; i < h.cluster().num_nodes(); ++i) names.push_back(h.cluster().node(NodeId(i)).name);
  ASSERT_EQ(names.size(), 4u);
  // kube-scheduler with nodeCacheCapable false: NodeNameToVictims, whole pods.
  json victims = json::object();
  for (const auto& n : names) victims[n] = {{"Pods", {PodDoc("v-" + n, "", 1)}}, {"NumPDBViolations", 0}};
  victims["ghost"] = {{"Pods", json::array()}, {"NumPDBViolations", 0}};
  ApiResult r = h.service().ExtenderPreempt(json{{"Pod", PodDoc("big", "", 8)}, {"NodeNameToVictims", victims}}.dump());
  ASSERT_EQ(r.code, 200) << r.body.dump();
  // Only the two 8-GPU nodes can take an 8-GPU pod; the unknown node is dropped.
  const json& kept = r.body["nodeNameToMetaVictims"];
  ASSERT_EQ(kept.size(), 2u) << r.body.dump();
  for (const auto& n : {names[0], names[1]}) {
    ASSERT_TRUE(kept.contains(n)) << r.body.dump();
    EXPECT_EQ(kept[n]["pods"][0]["uid"], "uid-v-" + n);
  }
  // A pod whose gang Berth placed can use its planned node only.
  const std::string planned = Passed(h.service().ExtenderFilter(
      json{{"pod", PodDoc("g-0", "g", 4)}, {"nodenames", names}}.dump()).body);
  ASSERT_NE(planned, "");
  ApiResult g = h.service().ExtenderPreempt(json{{"Pod", PodDoc("g-0", "g", 4)}, {"NodeNameToVictims", victims}}.dump());
  EXPECT_EQ(g.body["nodeNameToMetaVictims"].size(), 1u) << g.body.dump();
  EXPECT_TRUE(g.body["nodeNameToMetaVictims"].contains(planned));
}

}  // namespace
}  // namespace berth::server

namespace berth::server {
namespace {

// GPU memory (annotation berth.dev/gpu-memory-mib): the filter places a pod
// only on GPU types with that much memory, the preempt verb keeps only nodes
// whose GPUs could hold it, and a bad value is refused naming the annotation.
TEST(ServiceExtenderTest, GpuMemoryInFilterAndPreempt) {
  ServiceHarness h("2x8:T4+2x8:H100");  // T4: 16 GB per GPU; H100: 80 GB
  ASSERT_TRUE(h.Start().ok());
  std::vector<std::string> names, h100;
  for (int i = 0; i < h.cluster().num_nodes(); ++i) {
    const cluster::Node& n = h.cluster().node(NodeId(i));
    names.push_back(n.name);
    if (h.cluster().gpu_types()[n.gpu_type.value()].name == "H100") h100.push_back(n.name);
  }
  ASSERT_EQ(h100.size(), 2u);
  auto big = [](const std::string& name, const std::string& mib) {
    json pod = PodDoc(name, "", 8);
    pod["metadata"]["annotations"]["berth.dev/gpu-memory-mib"] = mib;
    return pod;
  };
  auto filter = [&](const json& pod) {
    ApiResult r = h.service().ExtenderFilter(json{{"pod", pod}, {"nodenames", names}}.dump());
    EXPECT_EQ(r.code, 200) << r.body.dump();
    return r.body;
  };
  // Two 8-GPU pods that need 40,000 MiB per GPU take the two H100 nodes.
  std::vector<std::string> placed;
  for (const char* p : {"m-0", "m-1"}) {
    const std::string node = Passed(filter(big(p, "40000")));
    ASSERT_NE(node, "") << p;
    placed.push_back(node);
  }
  std::sort(placed.begin(), placed.end());
  EXPECT_EQ(placed, h100);
  EXPECT_EQ(JobNamed(h, "ml/pod:m-0")["spec"]["groups"][0]["gpu_memory_mib"], 40000);
  // A pod that fits a T4 goes there; a third big one waits although a T4 node is free.
  const std::string small = Passed(filter(big("s-0", "8000")));
  EXPECT_NE(small, "");
  EXPECT_EQ(std::find(h100.begin(), h100.end(), small), h100.end()) << small;
  json third = filter(big("m-2", "40000"));
  EXPECT_EQ(Passed(third), "") << third.dump();
  // More than any GPU here has: refused as unresolvable, naming the field.
  json huge = filter(big("h-0", "900000"));
  ASSERT_TRUE(huge["failedNodes"].contains(names[0])) << huge.dump();
  EXPECT_NE(huge["failedNodes"][names[0]].get<std::string>().find("gpu_memory_mib"), std::string::npos) << huge.dump();
  // Not an integer: refused naming the annotation.
  json bad = filter(big("b-0", "lots"));
  ASSERT_TRUE(bad["failedAndUnresolvableNodes"].contains(names[0])) << bad.dump();
  EXPECT_NE(bad["failedNodes"][names[0]].get<std::string>().find("annotation berth.dev/gpu-memory-mib"),
            std::string::npos)
      << bad.dump();

  // Preemption for a pod that needs 40,000 MiB: only the H100 nodes can help.
  json victims = json::object();
  for (const auto& n : names) victims[n] = {{"Pods", {PodDoc("v-" + n, "", 1)}}, {"NumPDBViolations", 0}};
  ApiResult r = h.service().ExtenderPreempt(json{{"Pod", big("p-0", "40000")}, {"NodeNameToVictims", victims}}.dump());
  ASSERT_EQ(r.code, 200) << r.body.dump();
  const json& kept = r.body["nodeNameToMetaVictims"];
  ASSERT_EQ(kept.size(), 2u) << r.body.dump();
  for (const auto& n : h100) EXPECT_TRUE(kept.contains(n)) << r.body.dump();
  // Without the annotation every node of 8 GPUs is kept.
  ApiResult any = h.service().ExtenderPreempt(json{{"Pod", PodDoc("p-1", "", 8)}, {"NodeNameToVictims", victims}}.dump());
  EXPECT_EQ(any.body["nodeNameToMetaVictims"].size(), 4u) << any.body.dump();
  // A bad annotation: no node.
  ApiResult none = h.service().ExtenderPreempt(json{{"Pod", big("p-2", "-5")}, {"NodeNameToVictims", victims}}.dump());
  EXPECT_EQ(none.body["nodeNameToMetaVictims"].size(), 0u) << none.body.dump();
}

}  // namespace
}  // namespace berth::server
