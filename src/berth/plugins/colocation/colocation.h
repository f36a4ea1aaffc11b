// The colocation filter: services reserve a set of nodes, and batch work may
// or may not run on the part of that reservation the services leave idle.
//
//   reserved nodes  service replicas (jobs with a service spec) pass only
//                   there; other work passes everywhere else;
//   mode static     batch work never runs on a reserved node (static
//                   partitioning: services and batch on separate nodes);
//   mode colocate   batch and training work run on reserved nodes' idle
//                   capacity; best-effort work (JobSpec::best_effort) only up
//                   to the overcommit ratio: on a reserved node, best-effort
//                   tasks hold at most ratio x the node's GPU capacity, and a
//                   queue's best-effort tasks on reserved nodes at most its
//                   ratio x the reservation's GPU capacity. A queue is a
//                   queue of the scheduler's tree (the best-effort work of
//                   every leaf under it counts; the queue file's
//                   `overcommit` key), else the job's `queue` or tenant name.
//   spill           (colocate mode only) a service replica that no reserved
//                   node can hold right now (the reservation is fragmented:
//                   its free CPU, memory or GPUs are split over nodes) may
//                   run on another node, as long as the services' running
//                   replicas with it stay within the reservation's total GPUs,
//                   CPU and memory (its guarantee). Preemption looks on the
//                   reserved nodes first and on the others only when no
//                   eviction there makes room (FilterPlugin::Avoids).
// Getting the capacity back within a bound is the preemption plugin's and the
// scheduler's part (SchedulerOptions::yield_best_effort, ..._training_grace);
// this plugin only decides who may borrow what.
//
// Args (all strings): `reserved` node ids as ranges ("0-11,14"; empty: no
// reservation, every node passes everything), `mode` (colocate | static),
// `overcommit` (the ratio on every reserved node, default 1), `node.NAME`
// (one node's ratio), `queue.NAME` (one queue's ratio; the queue is the job's
// `queue`, else its tenant). Ratios are numbers in 0..1. Profile: filter and
// admit {"colocation"} (the admit side tracks which running jobs are best
// effort, so placements adopted after a restart count too).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "berth/framework/cycle.h"
#include "berth/framework/plugin.h"

namespace berth::plugins {

struct ColocationConfig {
  std::vector<uint8_t> reserved;  // per node id: 1 = reserved for services (empty: none)
  bool static_partition = false;
  int32_t overcommit_permille = 1000;            // every reserved node
  std::map<std::string, int32_t> node_permille;  // by node name
  std::map<std::string, int32_t> queue_permille; // by queue (or tenant)
  bool spill = false;                            // replicas beyond a fragmented reservation
  // The reserved nodes' totals (set by ParseColocationArgs from the cluster).
  int64_t reserved_milli_gpu = 0, reserved_cpu_milli = 0, reserved_memory_mib = 0;
};

// Parses the args above against the cluster; errors name the arg.
StatusOr<ColocationConfig> ParseColocationArgs(const framework::PluginArgs& args, const cluster::Cluster* cluster);

class ColocationPlugin final : public framework::FilterPlugin, public framework::AdmitPlugin {
 public:
  static constexpr std::string_view kName = "colocation";
  explicit ColocationPlugin(ColocationConfig config);
  std::string_view Name() const override { return kName; }
  std::string_view FailReason() const override {
    return "colocation (services' reserved nodes, static partition, or best-effort overcommit ratio)";
  }

  bool Filter(const framework::CycleContext& ctx, const framework::TaskRequest& req, NodeId node) const override;
  framework::Verdict Admit(const job::JobSpec&, const state::ClusterState&, TimeUs) override {
    return framework::Verdict::Success();
  }
  // A reservation rule (with a reservation): replicas are ruled out off the
  // reservation (with spill, only when the whole replica would take the
  // services past the reservation's totals), batch work on it in static mode;
  // replicas avoid the nodes off it.
  framework::NodeRuleKind NodeRule() const override {
    return config_.reserved.empty() ? framework::NodeRuleKind::kNone : framework::NodeRuleKind::kReservation;
  }
  bool RulesOut(const framework::SchedulerView& view, const job::JobSpec& job, std::span<uint8_t> out) const override;
  bool Avoids(const framework::SchedulerView& view, const job::JobSpec& job, std::span<uint8_t> out) const override;
  void OnStart(const job::JobSpec& job) override;
  void OnFinish(const job::JobSpec& job) override;

  bool reserved(NodeId n) const {
    return !config_.reserved.empty() && config_.reserved[static_cast<size_t>(n.value())] != 0;
  }
  // Milli-GPU best-effort tasks hold on node n (of `queue` only, when given).
  int64_t BestEffortMilli(const state::ClusterState& state, NodeId n, const std::string* queue) const;
  // The same, of the jobs whose leaf queue in `tree` is `queue` or under it.
  int64_t BestEffortMilliUnder(const state::ClusterState& state, NodeId n, const tenancy::QueueTree& tree,
                               int32_t queue) const;
  // Whether a replica asking for `req` may run off the reservation now (spill).
  bool MaySpill(const framework::CycleContext& ctx, const framework::TaskRequest& req) const;

 private:
  // What running service replicas hold (from their specs), on any node.
  struct Held {
    int64_t milli_gpu = 0, cpu_milli = 0, memory_mib = 0;
  };
  ColocationConfig config_;
  Held services_;
  // MaySpill's answer for one state version, job and request (Filter asks it
  // for every node off the reservation).
  struct SpillMemo {
    uint64_t version = 0;
    const state::ClusterState* state = nullptr;
    JobId job;
    framework::TaskRequest req;
    bool result = false;
    bool valid = false;
  };
  mutable SpillMemo memo_;
  // Whether `job` (demand `extra` on top of what it holds already) keeps
  // the running replicas within the reservation's totals.
  bool WithinGuarantee(const Held& extra) const;
  // Whether best effort of `j` (placing `want` more on `node`, `own_all` on
  // the reservation already) stays within the ratios of the queues on its
  // leaf's path in the tree.
  bool WithinTreeRatios(const framework::CycleContext& ctx, int64_t want, int64_t own_all) const;
  struct BestEffortJob {
    std::string queue;   // its `queue`, else its tenant (queue.NAME by name)
    job::JobSpec who;    // its queue and tenant only, for QueueTree::LeafFor
    mutable int32_t leaf = -2;  // in leaf_tree_; -2: not looked up yet
  };
  std::unordered_map<JobId, BestEffortJob> best_effort_;  // running best-effort jobs; looked up only
  mutable const void* leaf_tree_ = nullptr;                // the tree BestEffortJob::leaf is of
};

}  // namespace berth::plugins
