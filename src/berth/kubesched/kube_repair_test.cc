// In-place repair in Kubernetes mode (kube_repair.h), driven without an API
// server: a test peer feeds Node and Pod objects to the loop's handlers, runs
// its turns and reads the writes it queued (binds and evictions), as the
// watches and writers would.
#include "berth/kubesched/kube_repair.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "berth/kubesched/kube_scheduler.h"
#include "berth/plugins/builtin.h"

namespace berth::kube {

using nlohmann::json;

class KubeSchedulerTestPeer {
 public:
  using WriteOp = KubeScheduler::WriteOp;

  explicit KubeSchedulerTestPeer(KubeSchedulerOptions o)
      : client_(Config(), {}), events_(Config(), {}), s_(client_, events_, Quiet(std::move(o)), log_, metrics_) {
    log_.set_level(server::LogLevel::kError);
    EXPECT_TRUE(plugins::RegisterBuiltinPlugins(s_.plugins_).ok());
    EXPECT_TRUE(plugins::RegisterBuiltinPolicies(s_.policies_).ok());
  }

  static json Node(const std::string& name, const std::string& leaf, bool ready = true, json taints = nullptr) {
    const json res = {{"cpu", "64"}, {"memory", "512Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "8"}};
    json n = {{"apiVersion", "v1"},
              {"kind", "Node"},
              {"metadata",
               {{"name", name},
                {"uid", "uid-" + name},
                {"labels",
                 {{"kubernetes.io/hostname", name},
                  {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                  {"fabric.topograph.run/tier-0", leaf},
                  {"fabric.topograph.run/tier-1", "spine-0"}}}}},
              {"spec", json::object()},
              {"status",
               {{"capacity", res},
                {"allocatable", res},
                {"conditions", json::array({{{"type", "Ready"}, {"status", ready ? "True" : "False"}}})}}}};
    if (!taints.is_null()) n["spec"]["taints"] = taints;
    return n;
  }
  // A pod of gang `group` (min-member `size`), 8 GPUs, pending unless `node`.
  static json Pod(const std::string& name, const std::string& uid, const std::string& group, int size,
                  json annotations = json::object()) {
    annotations["berth.dev/min-member"] = std::to_string(size);
    return {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata",
             {{"name", name},
              {"namespace", "ml"},
              {"uid", uid},
              {"creationTimestamp", "2026-01-01T00:00:00Z"},
              {"labels", {{"berth.dev/pod-group", group}}},
              {"annotations", annotations}}},
            {"spec",
             {{"schedulerName", "berth"},
              {"containers",
               json::array({{{"name", "main"},
                             {"image", "busybox"},
                             {"resources",
                              {{"requests", {{"cpu", "1"}, {"memory", "1Gi"}}},
                               {"limits", {{"nvidia.com/gpu", "8"}}}}}}})}}},
            {"status", {{"phase", "Pending"}}}};
  }

  void AddNodes(const std::vector<std::pair<std::string, std::string>>& nodes) {
    for (const auto& [name, leaf] : nodes) s_.OnNode("ADDED", Node(name, leaf));
  }
  void SetNode(const json& node) { s_.OnNode("MODIFIED", node); }
  // A berth.dev/v1alpha1 PodGroup ml/NAME with these annotations.
  void AddPodGroup(const std::string& name, int min_member, json annotations) {
    s_.OnPodGroup("berth-podgroup", "ADDED",
                  {{"apiVersion", "berth.dev/v1alpha1"},
                   {"kind", "PodGroup"},
                   {"metadata", {{"name", name}, {"namespace", "ml"}, {"annotations", annotations}}},
                   {"spec", {{"minMember", min_member}}}});
  }
  void AddPod(const json& pod) { s_.OnPod("ADDED", pod); }
  void DeletePod(const std::string& uid) {
    auto it = s_.pods_.find(uid);
    ASSERT_NE(it, s_.pods_.end());
    json pod = Pod(it->second.name, uid, "g", 1);
    s_.OnPod("DELETED", pod);
  }
  void Turn() { s_.Turn(); }
  // The binds and evictions queued since the last call (a launch ConfigMap's
  // binds unpacked); conditions and events dropped.
  std::vector<WriteOp> Writes() {
    std::vector<WriteOp> out;
    for (auto& op : s_.writes_) {
      if (op.kind == WriteOp::Kind::kConfigMap) {
        for (auto& b : op.then) out.push_back(b);
      } else {
        out.push_back(op);
      }
    }
    s_.writes_.clear();
    s_.low_writes_.clear();
    return out;
  }
  std::vector<std::string> ConditionMessages() {
    std::vector<std::string> out;
    for (const auto& op : s_.low_writes_)
      if (op.kind == WriteOp::Kind::kCondition) out.push_back(op.message);
    return out;
  }
  // The watch's answer to a bind: the pod is on op.node.
  void Bound(const WriteOp& op) {
    s_.OnBindDone(op, Status::Ok());
    auto it = s_.pods_.find(op.uid);
    ASSERT_NE(it, s_.pods_.end());
    it->second.node = op.node;
  }
  // Binds every queued bind; returns pod name -> node.
  std::map<std::string, std::string> BindAll() {
    std::map<std::string, std::string> out;
    for (const auto& op : Writes()) {
      if (op.kind != WriteOp::Kind::kBind) continue;
      Bound(op);
      out[op.name] = op.node;
      ranks_[op.name] = RankOf(op);
    }
    return out;
  }
  static std::string RankOf(const WriteOp& op) {
    for (const auto& [k, v] : op.annotations)
      if (k == "berth.dev/rank") return v;
    return "";
  }
  // The rank the last bind of pod `name` carried.
  std::string Rank(const std::string& name) const { return ranks_.count(name) ? ranks_.at(name) : ""; }
  std::string LeafOf(const std::string& node) { return s_.nodes_.at(node).spec.leaf; }
  int64_t GpusUsedOn(const std::string& node) {
    const auto n = s_.cluster_->FindNode(node);
    return (8 * kMilliPerGpu - s_.sched_->state().node_free_milli(*n)) / kMilliPerGpu;
  }
  bool Spare(const std::string& node) const { return s_.spares_.count(node) > 0; }
  size_t Jobs() const { return s_.jobs_.size(); }
  void Expire(TimeUs now) { s_.ExpireRepairs(now); }
  std::string MetricsText() const { return s_.RepairMetricsText(); }
  const server::Metrics& metrics() const { return metrics_; }

 private:
  static KubeConfig Config() {
    KubeConfig c;
    c.server = "https://127.0.0.1:1";  // never contacted: no writer runs
    return c;
  }
  static KubeSchedulerOptions Quiet(KubeSchedulerOptions o) {
    o.events = false;
    o.catalog.clear();
    return o;
  }
  KubeClient client_, events_;
  std::map<std::string, std::string> ranks_;
  server::Logger log_;
  server::Metrics metrics_;
  KubeScheduler s_;
};

namespace {

using Peer = KubeSchedulerTestPeer;
using Kind = Peer::WriteOp::Kind;

KubeSchedulerOptions InPlace() {
  KubeSchedulerOptions o;
  o.repair = faults::RepairMode::kInPlace;
  return o;
}

// Two leaves of three 8-GPU nodes.
void TwoLeaves(Peer& k) {
  k.AddNodes({{"a-0", "leaf-a"}, {"a-1", "leaf-a"}, {"a-2", "leaf-a"},
              {"b-0", "leaf-b"}, {"b-1", "leaf-b"}, {"b-2", "leaf-b"}});
}

// A gang of `n` x 8 GPUs, placed and bound: pod name -> node.
std::map<std::string, std::string> PlaceGang(Peer& k, const std::string& group, int n, json annotations = json::object()) {
  for (int i = 0; i < n; ++i)
    k.AddPod(Peer::Pod(group + "-" + std::to_string(i), group + "-uid-" + std::to_string(i), group, n, annotations));
  k.Turn();
  return k.BindAll();
}

std::vector<std::string> Evicted(const std::vector<Peer::WriteOp>& writes) {
  std::vector<std::string> out;
  for (const auto& op : writes)
    if (op.kind == Kind::kEvict) out.push_back(op.name);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ParseRepairAnnotationTest, ReadsTheTwoModesAndNamesThePlaceOfABadValue) {
  auto r = ParseRepairAnnotation("pod ml/a", "in-place");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, faults::RepairMode::kInPlace);
  r = ParseRepairAnnotation("pod ml/a", "requeue");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, faults::RepairMode::kRequeue);
  r = ParseRepairAnnotation("pod ml/a", "");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
  r = ParseRepairAnnotation("pod ml/a: annotation berth.dev/repair", "inplace");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "pod ml/a: annotation berth.dev/repair: expected in-place or requeue, found 'inplace'");
}

TEST(KubeRepairTest, OnlyTheLostNodesPodIsEvictedAndItsReplacementTakesTheFreeNodeOfTheLeaf) {
  Peer k(InPlace());
  TwoLeaves(k);
  const auto placed = PlaceGang(k, "g", 2);
  ASSERT_EQ(placed.size(), 2u);
  const std::string lost = placed.at("g-0"), kept = placed.at("g-1");
  ASSERT_EQ(k.LeafOf(lost), k.LeafOf(kept));

  k.SetNode(Peer::Node(lost, k.LeafOf(lost), /*ready=*/false));
  k.Turn();
  std::vector<Peer::WriteOp> w = k.Writes();
  EXPECT_EQ(Evicted(w), std::vector<std::string>{"g-0"});
  EXPECT_EQ(k.metrics().gang_repairs.load(), 1u);
  EXPECT_EQ(k.metrics().repair_fallbacks.load(), 0u);
  EXPECT_EQ(k.Jobs(), 1u);  // the job keeps running
  // The task's GPUs moved to the leaf's third node at once; the other pod keeps its node.
  std::string target;
  for (const char* n : {"a-0", "a-1", "a-2", "b-0", "b-1", "b-2"})
    if (n != lost && n != kept && k.LeafOf(n) == k.LeafOf(lost)) target = n;
  EXPECT_EQ(k.GpusUsedOn(target), 8);
  EXPECT_EQ(k.GpusUsedOn(kept), 8);
  EXPECT_EQ(k.GpusUsedOn(lost), 0);

  // The owner makes the pod again under its name (as a StatefulSet does).
  k.DeletePod("g-uid-0");
  k.AddPod(Peer::Pod("g-0", "g-uid-0b", "g", 2));
  k.Turn();
  w = k.Writes();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].kind, Kind::kBind);
  EXPECT_EQ(w[0].name, "g-0");
  EXPECT_EQ(w[0].uid, "g-uid-0b");
  EXPECT_EQ(w[0].node, target);
  ASSERT_FALSE(k.Rank("g-0").empty());
  EXPECT_EQ(Peer::RankOf(w[0]), k.Rank("g-0"));  // the freed rank
  k.Bound(w[0]);
  EXPECT_NE(k.MetricsText().find("berth_gang_repairs_total 1\n"), std::string::npos);
  EXPECT_NE(k.MetricsText().find("berth_kube_replacements_awaited 0\n"), std::string::npos);
}

TEST(KubeRepairTest, ANewPodOfTheGroupFillsTheFreedRankWhenNoneHasTheOldName) {
  Peer k(InPlace());
  TwoLeaves(k);
  const auto placed = PlaceGang(k, "g", 2);
  const std::string lost = placed.at("g-1");
  k.SetNode(Peer::Node(lost, k.LeafOf(lost), false));
  k.Turn();
  EXPECT_EQ(Evicted(k.Writes()), std::vector<std::string>{"g-1"});
  k.AddPod(Peer::Pod("g-new", "g-uid-new", "g", 2));
  k.Turn();
  const auto w = k.Writes();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].name, "g-new");
  EXPECT_NE(w[0].node, lost);
  EXPECT_EQ(k.LeafOf(w[0].node), k.LeafOf(lost));
  EXPECT_EQ(k.Jobs(), 1u);  // no second gang was formed
}

TEST(KubeRepairTest, WithoutRoomInTheDomainTheWholeGangIsEvicted) {
  Peer k(InPlace());
  TwoLeaves(k);
  // Three pods fill a leaf.
  const auto placed = PlaceGang(k, "g", 3, {{"berth.dev/required-level", "leaf"}});
  ASSERT_EQ(placed.size(), 3u);
  const std::string lost = placed.at("g-2");
  k.SetNode(Peer::Node(lost, k.LeafOf(lost), false));
  k.Turn();
  EXPECT_EQ(Evicted(k.Writes()), (std::vector<std::string>{"g-0", "g-1", "g-2"}));
  EXPECT_EQ(k.metrics().gang_repairs.load(), 0u);
  EXPECT_EQ(k.metrics().repair_fallbacks.load(), 1u);
  EXPECT_NE(k.MetricsText().find("berth_repair_fallbacks_total 1\n"), std::string::npos);
}

TEST(KubeRepairTest, ASpareOfTheLeafIsKeptIdleAndTakenByTheRepair) {
  KubeSchedulerOptions o = InPlace();
  o.spares = {faults::SpareMode::kLeaf, 1};
  Peer k(o);
  TwoLeaves(k);
  k.Turn();
  EXPECT_TRUE(k.Spare("a-2"));  // the highest name of each leaf
  EXPECT_TRUE(k.Spare("b-2"));
  const auto placed = PlaceGang(k, "g", 2);
  for (const auto& [pod, node] : placed) EXPECT_FALSE(k.Spare(node)) << pod << " on " << node;
  const std::string lost = placed.at("g-0");
  const std::string spare = k.LeafOf(lost) == "leaf-a" ? "a-2" : "b-2";
  k.SetNode(Peer::Node(lost, k.LeafOf(lost), /*ready=*/true,
                       json::array({{{"key", "gpu-health"}, {"value", "xid-79"}, {"effect", "NoExecute"}}})));
  k.Turn();
  EXPECT_EQ(Evicted(k.Writes()), std::vector<std::string>{"g-0"});
  EXPECT_FALSE(k.Spare(spare));
  EXPECT_EQ(k.GpusUsedOn(spare), 8);
  EXPECT_EQ(k.metrics().spares_used.load(), 1u);
  k.DeletePod("g-uid-0");
  k.AddPod(Peer::Pod("g-0", "g-uid-0b", "g", 2));
  k.Turn();
  const auto w = k.Writes();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].node, spare);
}

TEST(KubeRepairTest, TheGangsAnnotationOverridesTheFlag) {
  Peer k(InPlace());
  TwoLeaves(k);
  const auto placed = PlaceGang(k, "g", 2, {{"berth.dev/repair", "requeue"}});
  const std::string lost = placed.at("g-0");
  k.SetNode(Peer::Node(lost, k.LeafOf(lost), false));
  k.Turn();
  EXPECT_EQ(Evicted(k.Writes()), (std::vector<std::string>{"g-0", "g-1"}));
  EXPECT_EQ(k.metrics().repair_fallbacks.load(), 0u);  // requeue was asked for

  Peer r{KubeSchedulerOptions{}};  // requeue by default; the gang asks for in-place
  TwoLeaves(r);
  const auto placed2 = PlaceGang(r, "h", 2, {{"berth.dev/repair", "in-place"}});
  const std::string lost2 = placed2.at("h-1");
  r.SetNode(Peer::Node(lost2, r.LeafOf(lost2), false));
  r.Turn();
  EXPECT_EQ(Evicted(r.Writes()), std::vector<std::string>{"h-1"});
  EXPECT_EQ(r.metrics().gang_repairs.load(), 1u);
}

TEST(KubeRepairTest, ThePodGroupsAnnotationWinsOverThePods) {
  Peer k{KubeSchedulerOptions{}};
  TwoLeaves(k);
  k.AddPodGroup("g", 2, {{"berth.dev/repair", "in-place"}});
  const auto placed = PlaceGang(k, "g", 2, {{"berth.dev/repair", "requeue"}});
  ASSERT_EQ(placed.size(), 2u);
  const std::string lost = placed.at("g-0");
  k.SetNode(Peer::Node(lost, k.LeafOf(lost), false));
  k.Turn();
  EXPECT_EQ(Evicted(k.Writes()), std::vector<std::string>{"g-0"});
  EXPECT_EQ(k.metrics().gang_repairs.load(), 1u);

  Peer bad{KubeSchedulerOptions{}};
  TwoLeaves(bad);
  bad.AddPodGroup("h", 2, {{"berth.dev/repair", "yes"}});
  for (int i = 0; i < 2; ++i) bad.AddPod(Peer::Pod("h-" + std::to_string(i), "h-uid-" + std::to_string(i), "h", 2));
  bad.Turn();
  const auto messages = bad.ConditionMessages();
  ASSERT_FALSE(messages.empty());
  EXPECT_EQ(messages[0], "berth: PodGroup ml/h: annotation berth.dev/repair: expected in-place or requeue, found 'yes'");
}

TEST(KubeRepairTest, ABadAnnotationKeepsTheGangOutWithAMessageNamingThePod) {
  Peer k(InPlace());
  TwoLeaves(k);
  for (int i = 0; i < 2; ++i)
    k.AddPod(Peer::Pod("g-" + std::to_string(i), "g-uid-" + std::to_string(i), "g", 2,
                       {{"berth.dev/repair", "sideways"}}));
  k.Turn();
  const auto messages = k.ConditionMessages();
  EXPECT_TRUE(k.BindAll().empty());
  ASSERT_FALSE(messages.empty());
  EXPECT_EQ(messages[0], "berth: pod ml/g-0: annotation berth.dev/repair: expected in-place or requeue, found 'sideways'");
}

TEST(KubeRepairTest, AReplacementThatDoesNotComeInTimeRequeuesTheGang) {
  Peer k(InPlace());
  TwoLeaves(k);
  const auto placed = PlaceGang(k, "g", 2);
  const std::string lost = placed.at("g-0"), kept = placed.at("g-1");
  k.SetNode(Peer::Node(lost, k.LeafOf(lost), false));
  k.Turn();
  EXPECT_EQ(Evicted(k.Writes()), std::vector<std::string>{"g-0"});
  k.Expire(std::numeric_limits<TimeUs>::max());  // past any deadline
  EXPECT_EQ(Evicted(k.Writes()), std::vector<std::string>{"g-1"});
  EXPECT_EQ(k.metrics().repair_fallbacks.load(), 1u);
  EXPECT_NE(k.MetricsText().find("berth_kube_repair_timeouts_total 1\n"), std::string::npos);
  // The target is free again; the kept pod holds its GPUs until it goes.
  int64_t used = 0;
  for (const char* n : {"a-0", "a-1", "a-2", "b-0", "b-1", "b-2"}) used += k.GpusUsedOn(n);
  EXPECT_EQ(used, 8);
  EXPECT_EQ(k.GpusUsedOn(kept), 8);
  k.DeletePod("g-uid-1");
  EXPECT_EQ(k.Jobs(), 0u);
  EXPECT_EQ(k.GpusUsedOn(kept), 0);
}

TEST(KubeRepairTest, RequeueStaysTheDefault) {
  Peer k{KubeSchedulerOptions{}};
  TwoLeaves(k);
  const auto placed = PlaceGang(k, "g", 2);
  const std::string lost = placed.at("g-0");
  k.SetNode(Peer::Node(lost, k.LeafOf(lost), false));
  k.Turn();
  EXPECT_EQ(Evicted(k.Writes()), (std::vector<std::string>{"g-0", "g-1"}));
  EXPECT_EQ(k.metrics().gang_repairs.load() + k.metrics().repair_fallbacks.load(), 0u);
}

}  // namespace
}  // namespace berth::kube
