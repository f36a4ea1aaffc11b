// The spread filter: replicas of one service spread over failure domains. A
// node passes for a replica of service S when, counting S's replicas already
// placed (started jobs whose replica_of is S, and the tasks of this job placed
// earlier in the cycle), the node holds fewer than S's max_per_node and the
// node's leaf fewer than max_per_leaf (job::ServiceSpec; 0: no limit). Jobs
// that are not replicas, or whose service sets no limit, pass everywhere.
//
// The plugin is a filter and an admit plugin: it learns which running job is a
// replica of which service from OnStart/OnFinish (so placements adopted at a
// restart count too) and counts the tasks on a node through the state's
// per-node task lists. Profile: filter {"spread"}, admit {"spread"}
// (workload::WithServicePlugins adds both).
//
// The same rule is its node rule for the victim search (FilterPlugin::
// RulesOut, a limit): the nodes a replica cannot use whatever is evicted there
// (other than replicas of its service), counted the same way, so that a
// reclaim never evicts work on a node the replica may not take.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "berth/framework/plugin.h"

namespace berth::plugins {

class SpreadPlugin final : public framework::FilterPlugin, public framework::AdmitPlugin {
 public:
  static constexpr std::string_view kName = "spread";
  std::string_view Name() const override { return kName; }
  std::string_view FailReason() const override { return "service spread limit (replicas per node or leaf)"; }

  bool Filter(const framework::CycleContext& ctx, const framework::TaskRequest& req, NodeId node) const override;
  // Jobs that are not replicas with a limit pass everywhere.
  bool PassesEveryNode(const framework::CycleContext& ctx, const framework::TaskRequest&) const override {
    return !Limited(ctx.job);
  }
  framework::Verdict Admit(const job::JobSpec&, const state::ClusterState&, TimeUs) override {
    return framework::Verdict::Success();
  }
  // Marks the nodes where `job` (a replica whose service sets a limit) is at
  // a limit: the node holds max_per_node replicas of the service, or the
  // node's leaf max_per_leaf. False (nothing marked) when the job is no such
  // replica or no node is at a limit.
  framework::NodeRuleKind NodeRule() const override { return framework::NodeRuleKind::kLimit; }
  bool RulesOut(const framework::SchedulerView& view, const job::JobSpec& job, std::span<uint8_t> out) const override;
  void OnStart(const job::JobSpec& job) override;
  void OnFinish(const job::JobSpec& job) override;

  // Replicas of `service` on node n, in the state (tests, the controller).
  int32_t ReplicasOn(const state::ClusterState& state, JobId service, JobId self, NodeId n) const;

 private:
  static bool Limited(const job::JobSpec& j) {
    return j.service && (j.service->max_per_node > 0 || j.service->max_per_leaf > 0);
  }
  std::unordered_map<JobId, JobId> service_of_;  // running replica job -> its service; looked up only
};

}  // namespace berth::plugins
