// The Kubernetes extender: documents written from the k8s.io/kube-scheduler
// extender/v1 type definitions parse, and what Berth writes has their exact
// keys (round trips for all four verbs); then the verbs on a live service.
#include "berth/server/extender.h"

#include <gtest/gtest.h>

#include "berth/server/extender_test_util.h"
#include "berth/server/service_test_util.h"

namespace berth::server {
namespace {

using nlohmann::json;
using testing::NodeDoc;
using testing::PodDoc;
using testing::ServiceHarness;

TEST(ExtenderJsonTest, ArgsWithNodeNames) {
  json doc = {{"pod", PodDoc("p0", "g", 8)}, {"nodenames", {"node-0", "node-1"}}};
  auto a = k8s::ParseExtenderArgs(doc);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->pod.name, "p0");
  EXPECT_EQ(a->pod.ns, "ml");
  EXPECT_EQ(a->pod.uid, "uid-p0");
  EXPECT_EQ(a->pod.gpus, 8);
  EXPECT_EQ(a->pod.cpu_milli, 4500);
  EXPECT_EQ(a->pod.memory_mib, 16 * 1024 + 512);
  EXPECT_EQ(a->pod.priority, 100);
  EXPECT_EQ(a->pod.group_name(), "g");
  EXPECT_EQ(a->pod.min_member(), 2);
  EXPECT_EQ(a->pod.queue(), "research");
  EXPECT_FALSE(a->nodes);
  EXPECT_EQ(a->CandidateNames(), (std::vector<std::string>{"node-0", "node-1"}));
}

TEST(ExtenderJsonTest, ArgsWithNodeList) {
  json doc = {{"pod", PodDoc("p0", "", 1)},
              {"nodes", {{"kind", "NodeList"}, {"apiVersion", "v1"}, {"items", {NodeDoc("node-2"), NodeDoc("node-3")}}}}};
  auto a = k8s::ParseExtenderArgs(doc);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->CandidateNames(), (std::vector<std::string>{"node-2", "node-3"}));
  EXPECT_FALSE(a->node_names);
}

TEST(ExtenderJsonTest, GangAndQueueShapes) {
  json pod = PodDoc("w", "", 1);
  pod["metadata"]["labels"] = {{"kueue.x-k8s.io/pod-group-name", "kg"}, {"kai.scheduler/queue", "team-a"}};
  pod["metadata"]["annotations"] = {{"kueue.x-k8s.io/pod-group-total-count", "4"}};
  auto p = k8s::ParsePod(pod);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->group_name(), "kg");
  EXPECT_EQ(p->min_member(), 4);
  EXPECT_EQ(p->queue(), "team-a");
  pod["metadata"]["labels"] = {{"scheduling.x-k8s.io/pod-group", "cg"}};
  pod["metadata"]["annotations"] = json::object();
  p = k8s::ParsePod(pod);
  EXPECT_EQ(p->group_name(), "cg");
  EXPECT_EQ(p->min_member(), 1);
  EXPECT_EQ(p->queue(), "ml");  // the namespace
}

TEST(ExtenderJsonTest, FilterResultKeys) {
  k8s::FilterResult r;
  r.node_names = std::vector<std::string>{"node-1"};
  r.failed_nodes = {{"node-0", "busy"}};
  r.failed_and_unresolvable = {{"x", "unknown"}};
  json j = k8s::ToJson(r);
  EXPECT_EQ(j, json::parse(R"({"nodenames":["node-1"],"failedNodes":{"node-0":"busy"},)"
                           R"("failedAndUnresolvableNodes":{"x":"unknown"}})"));
  auto back = k8s::ParseFilterResult(j);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back->node_names, *r.node_names);
  EXPECT_EQ(back->failed_nodes, r.failed_nodes);
  EXPECT_EQ(back->failed_and_unresolvable, r.failed_and_unresolvable);
  EXPECT_EQ(k8s::ToJson(k8s::FilterResult{}), json::object());  // omitempty everywhere
  k8s::FilterResult err;
  err.error = "boom";
  EXPECT_EQ(k8s::ToJson(err), json::parse(R"({"error":"boom"})"));
}

TEST(ExtenderJsonTest, HostPriorityListKeys) {
  std::vector<k8s::HostPriority> list{{"node-0", 10}, {"node-1", 0}};
  json j = k8s::ToJson(list);
  EXPECT_EQ(j, json::parse(R"([{"host":"node-0","score":10},{"host":"node-1","score":0}])"));
  auto back = k8s::ParseHostPriorityList(j);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ((*back)[0].host, "node-0");
  EXPECT_EQ((*back)[0].score, 10);
}

TEST(ExtenderJsonTest, BindingKeysAreTheGoFieldNames) {
  // ExtenderBindingArgs has no json tags: Go writes the field names.
  json doc = json::parse(R"({"PodName":"p0","PodNamespace":"ml","PodUID":"uid-p0","Node":"node-1"})");
  auto a = k8s::ParseBindingArgs(doc);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->pod_name, "p0");
  EXPECT_EQ(a->pod_namespace, "ml");
  EXPECT_EQ(a->pod_uid, "uid-p0");
  EXPECT_EQ(a->node, "node-1");
  EXPECT_EQ(k8s::ToJson(*a), doc);
  // Go's decoder matches keys case-insensitively; so does Berth's.
  auto lower = k8s::ParseBindingArgs(json::parse(R"({"podName":"p0","podNamespace":"ml","podUID":"u","node":"n"})"));
  ASSERT_TRUE(lower.ok());
  EXPECT_EQ(lower->node, "n");
  EXPECT_EQ(k8s::ToJson(k8s::BindingResult{}), json::parse(R"({"Error":""})"));
  auto res = k8s::ParseBindingResult(json::parse(R"({"Error":"no"})"));
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->error, "no");
  EXPECT_FALSE(k8s::ParseBindingArgs(json::parse(R"({"PodName":"p"})")).ok());  // Node missing
}

TEST(ExtenderJsonTest, PreemptionKeys) {
  json victim = PodDoc("v", "", 1);
  json doc = {{"pod", PodDoc("p0", "", 1)},
              {"nodeToVictims", {{"node-0", {{"pods", {victim}}, {"numPDBViolations", 1}}}}},
              {"nodeNameToMetaVictims", {{"node-1", {{"pods", {{{"uid", "u1"}}}}, {"numPDBViolations", 0}}}}}};
  auto a = k8s::ParsePreemptionArgs(doc);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(a->has_victims && a->has_meta_victims);
  EXPECT_EQ(a->node_to_victims.at("node-0").pod_uids, std::vector<std::string>{"uid-v"});
  EXPECT_EQ(a->node_to_victims.at("node-0").num_pdb_violations, 1);
  EXPECT_EQ(a->node_to_meta_victims.at("node-1").pod_uids, std::vector<std::string>{"u1"});
  k8s::PreemptionResult r;
  r.node_to_meta_victims["node-1"] = {{"u1"}, 0};
  json j = k8s::ToJson(r);
  EXPECT_EQ(j, json::parse(R"({"nodeNameToMetaVictims":{"node-1":{"pods":[{"uid":"u1"}],"numPDBViolations":0}}})"));
  auto back = k8s::ParsePreemptionResult(j);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->node_to_meta_victims.at("node-1").pod_uids, std::vector<std::string>{"u1"});
}

TEST(ExtenderJsonTest, GoFieldNamesAsKubeSchedulerWritesThem) {
  // The Go types have no json tags: kube-scheduler writes the field names.
  json filter = {{"Pod", PodDoc("p0", "", 1)}, {"Nodes", nullptr}, {"NodeNames", {"node-0"}}};
  auto a = k8s::ParseExtenderArgs(filter);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_FALSE(a->nodes);
  EXPECT_EQ(a->CandidateNames(), std::vector<std::string>{"node-0"});
  // nodeCacheCapable false: NodeNameToVictims with whole pods.
  json victim = PodDoc("v", "", 1);
  json pre = {{"Pod", PodDoc("p0", "", 1)},
              {"NodeNameToVictims", {{"node-0", {{"Pods", {victim}}, {"NumPDBViolations", 2}}}}},
              {"NodeNameToMetaVictims", nullptr}};
  auto p = k8s::ParsePreemptionArgs(pre);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->has_victims);
  EXPECT_FALSE(p->has_meta_victims);
  EXPECT_EQ(p->node_to_victims.at("node-0").pod_uids, std::vector<std::string>{"uid-v"});
  EXPECT_EQ(p->node_to_victims.at("node-0").num_pdb_violations, 2);
  // Any case, as Go's decoder; and the older spelling.
  for (const char* key : {"nodeNameToVictims", "nodenametovictims", "nodeToVictims"}) {
    json doc = {{"pod", PodDoc("p0", "", 1)}, {key, {{"node-1", {{"pods", json::array()}}}}}};
    auto q = k8s::ParsePreemptionArgs(doc);
    ASSERT_TRUE(q.ok()) << key << ": " << q.status().ToString();
    EXPECT_TRUE(q->has_victims && q->node_to_victims.count("node-1")) << key;
  }
  // nodeCacheCapable true: NodeNameToMetaVictims with {"UID"}.
  json meta = {{"Pod", PodDoc("p0", "", 1)},
               {"NodeNameToMetaVictims", {{"node-2", {{"Pods", {{{"UID", "u9"}}}}, {"NumPDBViolations", 0}}}}}};
  auto m = k8s::ParsePreemptionArgs(meta);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->node_to_meta_victims.at("node-2").pod_uids, std::vector<std::string>{"u9"});
  // A malformed map is named by the key that was sent.
  auto bad = k8s::ParsePreemptionArgs(json{{"pod", PodDoc("p0", "", 1)}, {"NodeNameToVictims", 3}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("NodeNameToVictims"), std::string::npos) << bad.status().message();
}

TEST(ExtenderJsonTest, Quantities) {
  EXPECT_EQ(k8s::ParseQuantity("500m", 1000).value(), 500);
  EXPECT_EQ(k8s::ParseQuantity("2", 1000).value(), 2000);
  EXPECT_EQ(k8s::ParseQuantity("1.5", 1000).value(), 1500);
  EXPECT_EQ(k8s::ParseQuantity("64Gi", 1).value(), int64_t{64} << 30);
  EXPECT_EQ(k8s::ParseQuantity("1G", 1).value(), 1'000'000'000);
  EXPECT_EQ(k8s::ParseQuantity("1e3", 1).value(), 1000);
  EXPECT_FALSE(k8s::ParseQuantity("", 1).ok());
  EXPECT_FALSE(k8s::ParseQuantity("12Q", 1).ok());
  EXPECT_FALSE(k8s::ParseQuantity("-1", 1).ok());
  EXPECT_FALSE(k8s::ParseQuantity(".", 1).ok());
}

TEST(ExtenderServiceTest, GangPlacedAtFirstFilterThenEachPodSteered) {
  ServiceHarness h;
  ASSERT_TRUE(h.Start().ok());
  const std::vector<std::string> all = {"node-0", "node-1", "node-2", "node-3", "ghost"};
  auto filter = [&](const std::string& pod) {
    ApiResult r = h.service().ExtenderFilter(json{{"pod", PodDoc(pod, "g", 8)}, {"nodenames", all}}.dump());
    EXPECT_EQ(r.code, 200) << r.body.dump();
    return r.body;
  };
  json a = filter("a");
  ASSERT_EQ(a["nodenames"].size(), 1u) << a.dump();
  // Every reason is in failedNodes (all kube-scheduler 1.20 reads); the
  // unknown node is also unresolvable (read by 1.21+).
  EXPECT_EQ(a["failedNodes"].size(), 4u);
  EXPECT_TRUE(a["failedNodes"].contains("ghost"));
  EXPECT_EQ(a["failedAndUnresolvableNodes"].size(), 1u);
  EXPECT_TRUE(a["failedAndUnresolvableNodes"].contains("ghost"));
  json b = filter("b");
  ASSERT_EQ(b["nodenames"].size(), 1u);
  EXPECT_NE(a["nodenames"][0], b["nodenames"][0]);
  EXPECT_EQ(filter("a")["nodenames"], a["nodenames"]);  // stable on retry
  EXPECT_EQ(filter("c")["nodenames"].size(), 0u);       // the gang has its 2 pods
  // Prioritize: the planned node scores the maximum.
  ApiResult p = h.service().ExtenderPrioritize(json{{"pod", PodDoc("a", "g", 8)}, {"nodenames", all}}.dump());
  for (const auto& hp : p.body)
    EXPECT_EQ(hp["score"], hp["host"] == a["nodenames"][0] ? k8s::kMaxExtenderPriority : 0) << p.body.dump();
  // Bind: to the planned node only.
  const std::string planned = a["nodenames"][0];
  const std::string other = planned == "node-0" ? "node-3" : "node-0";
  ApiResult bad = h.service().ExtenderBind(
      json{{"PodName", "a"}, {"PodNamespace", "ml"}, {"PodUID", "uid-a"}, {"Node", other}}.dump());
  EXPECT_NE(bad.body["Error"].get<std::string>(), "");
  // On the planned node, but no API server to create the Binding: an error, never a silent success.
  ApiResult none = h.service().ExtenderBind(
      json{{"PodName", "a"}, {"PodNamespace", "ml"}, {"PodUID", "uid-a"}, {"Node", planned}}.dump());
  EXPECT_NE(none.body["Error"].get<std::string>().find("no Kubernetes API server"), std::string::npos) << none.body;
  // A full NodeList in, the passing node object out.
  json list = {{"items", {NodeDoc("node-0"), NodeDoc("node-1"), NodeDoc("node-2"), NodeDoc("node-3")}}};
  ApiResult nl = h.service().ExtenderFilter(json{{"pod", PodDoc("b", "g", 8)}, {"nodes", list}}.dump());
  ASSERT_EQ(nl.body["nodes"]["items"].size(), 1u);
  EXPECT_EQ(nl.body["nodes"]["items"][0]["metadata"]["name"], b["nodenames"][0]);
}

TEST(ExtenderServiceTest, UnfitPodsAndPreemption) {
  ServiceHarness h;
  ASSERT_TRUE(h.Start().ok());
  const std::vector<std::string> names = {"node-0", "node-1"};
  // Can never fit: 16 GPUs in one pod.
  ApiResult never = h.service().ExtenderFilter(json{{"pod", PodDoc("big", "", 16)}, {"nodenames", names}}.dump());
  EXPECT_EQ(never.body["failedAndUnresolvableNodes"].size(), 2u) << never.body.dump();
  EXPECT_EQ(never.body["failedNodes"], never.body["failedAndUnresolvableNodes"]);
  EXPECT_NE(never.body["failedNodes"]["node-0"].get<std::string>().find("berth: "), std::string::npos);
  // Fills the cluster, then a pod that must wait.
  h.service().ExtenderFilter(json{{"pod", PodDoc("f", "fill", 8, "4")}, {"nodenames", names}}.dump());
  ApiResult wait = h.service().ExtenderFilter(json{{"pod", PodDoc("w", "", 1)}, {"nodenames", names}}.dump());
  EXPECT_EQ(wait.body["failedNodes"].size(), 2u) << wait.body.dump();
  EXPECT_FALSE(wait.body.contains("nodenames") && !wait.body["nodenames"].empty());
  // Preempt: Berth keeps the nodes it knows, as meta victims.
  json args = {{"pod", PodDoc("w", "", 1)},
               {"nodeNameToMetaVictims",
                {{"node-0", {{"pods", {{{"uid", "u1"}}}}, {"numPDBViolations", 0}}},
                 {"ghost", {{"pods", json::array()}, {"numPDBViolations", 0}}}}}};
  ApiResult pre = h.service().ExtenderPreempt(args.dump());
  EXPECT_EQ(pre.body, json::parse(R"({"nodeNameToMetaVictims":{"node-0":{"pods":[{"uid":"u1"}],"numPDBViolations":0}}})"));
  EXPECT_EQ(h.service().ExtenderFilter("{not json").code, 400);
  EXPECT_EQ(h.service().ExtenderBind(R"({"PodName":"nobody","Node":"node-0"})").body["Error"].get<std::string>().empty(),
            false);
}

}  // namespace
}  // namespace berth::server
