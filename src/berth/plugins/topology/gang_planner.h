// Topology-aware gang planning from the state's counters: the algorithm behind
// the "topology" plan plugin, kept apart from the plugin so that it can be
// tested and benchmarked on its own.
//
// For a gang of whole-GPU tasks it
//   1. tries levels from the narrowest (one NVLink domain) to the broadest the
//      job allows (its required level, else the whole region);
//   2. at a level, takes the domains whose free GPUs cover the gang and whose
//      free-GPU buckets can hold every group, and tries them tightest first
//      (best fit over domains), so that large free blocks stay whole for the
//      next large gang;
//   3. inside the chosen domain, descends: the tightest child that holds all
//      remaining tasks, else the children with the most room first (fewest
//      children), placed in node order; at the nodes, the same rule. Tasks go
//      in rank order, so consecutive ranks share the fastest links;
//   4. honours blocks: every `block_tasks` consecutive ranks of a group land
//      in one domain of `block_level`;
//   5. honours a group's own `required_level` (the group within one domain
//      of that level inside the gang's domain) and preferred levels: the
//      tightest domain of the preferred level that holds the group, else the
//      fewest such domains (most room first); when no domain of the job's
//      preferred level holds the gang, the wider domains are tried fewest
//      preferred-level domains first (then tightest).
// Cost: O(domains at the levels tried + nodes in the chosen domain), never
// O(all nodes) for a gang that fits a leaf or spine (a preferred level that
// no domain of it satisfies adds the domains of that level inside each
// candidate).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/job/job.h"
#include "berth/state/cluster_state.h"

namespace berth::plugins {

struct GangPlanResult {
  bool ok = false;
  std::vector<state::Allocation> allocs;  // rank order, group by group
  std::vector<int32_t> task_index;
  cluster::Level level = cluster::Level::kRegion;  // narrowest level holding the whole gang
  DomainId domain;
  std::string reason;  // when !ok
};

// Reusable: keep one planner per scheduler (it holds scratch space sized to
// the cluster) and call Plan for each gang.
class GangPlanner {
 public:
  GangPlanner() = default;

  // True when the planner handles this job: every group uses whole GPUs and
  // the job has more than one task, blocks or a topology constraint.
  static bool Applies(const job::JobSpec& job);

  GangPlanResult Plan(const state::ClusterState& state, const job::JobSpec& job);

  // Failure-aware order (the "topology-reliable" plan): while set, the
  // candidate domains of every level are tried lowest `risk` first, then in
  // the order above. Borrowed; null (the default) leaves the order as it is.
  using DomainRisk = std::function<int64_t(DomainId)>;
  void set_domain_risk(const DomainRisk* risk) { risk_ = risk; }

 private:
  struct Need {
    int32_t gpus;
    MilliCpu cpu;
    MiB mem;
    cluster::GpuTypeSet types;  // resolved: only types whose GPUs hold gpu_mem
    MiB gpu_mem = 0;            // recorded in each allocation (whole GPUs: fully free, so it fits)
  };
  struct Taken {  // this plan's use of a node so far
    NodeId node;
    uint64_t mask = 0;
    MilliCpu cpu = 0;
    MiB mem = 0;
  };

  // One search over levels and domains; `whole_count`: every task of every
  // group, else each group's gang minimum (then as many more as fit).
  bool PlanPass(const job::JobSpec& job, bool whole_count, GangPlanResult& r, int64_t& best_free, int64_t& need);
  bool TryDomain(const job::JobSpec& job, DomainId d, bool whole_count);
  // Upper bound of tasks of `need` that domain d holds (buckets, ignoring CPU/memory).
  int64_t DomainSlots(DomainId d, const Need& need) const;
  // Exact tasks of `need` that node n still holds, given this plan's use.
  int32_t NodeSlots(NodeId n, const Need& need) const;
  // Places up to `tasks` tasks inside d; returns how many it placed.
  int32_t PlaceIn(DomainId d, const Need& need, int32_t tasks, int32_t first_task);
  int32_t PlaceOnNode(NodeId n, const Need& need, int32_t tasks, int32_t first_task);
  // Places one block of tasks within a single domain of `level` inside d.
  bool PlaceBlock(DomainId d, cluster::Level level, const Need& need, int32_t tasks, int32_t first_task);
  // Places up to `tasks` tasks of group g inside d, block by block if it has blocks.
  int32_t PlaceGroupIn(DomainId d, const job::TaskGroup& g, const Need& need, int32_t tasks, int32_t first_task);
  // Places group g inside d under its levels: within one domain of
  // `required` (else nothing); with `preferred`, the tightest domain of that
  // level that holds the group, else the fewest such domains. Returns the
  // tasks placed (at least `min_tasks`, or 0 with nothing kept).
  int32_t PlaceGroup(DomainId d, const job::TaskGroup& g, std::optional<cluster::Level> required,
                     std::optional<cluster::Level> preferred, const Need& need, int32_t min_tasks, int32_t first_task);
  // The (slots, id) of the domains of `level` inside d with at least min_slots slots of `need`.
  std::vector<std::pair<int64_t, int32_t>> DomainsInside(DomainId d, cluster::Level level, const Need& need,
                                                         int64_t min_slots) const;
  // How many domains of `level` inside d the gang's `need` free GPUs take at
  // the least (INT32_MAX when they do not add up).
  int32_t Fragments(DomainId d, cluster::Level level, int64_t need) const;
  // This plan's placements so far, to return to when a try fails.
  struct Mark {
    size_t allocs;
    std::vector<Taken> taken;
  };
  Mark Save() const;
  void Restore(const Mark& m);
  Taken& TakenOn(NodeId n);
  const Taken* FindTaken(NodeId n) const;

  struct Item {
    int64_t slots;
    int32_t id;  // child domain id, or node id
  };
  void ResetTaken();

  const state::ClusterState* sp_ = nullptr;
  const cluster::Cluster* cp_ = nullptr;
  const state::ClusterState& s() const { return *sp_; }
  const cluster::Cluster& c() const { return *cp_; }
  std::vector<Taken> taken_;
  std::vector<int32_t> taken_of_node_;  // index into taken_, or -1
  std::vector<std::vector<Item>> scratch_;  // per recursion depth
  std::vector<state::Allocation> allocs_;
  std::vector<int32_t> task_index_;
  int32_t failed_group_ = -1;  // the group the last try could not place
  const DomainRisk* risk_ = nullptr;
};

}  // namespace berth::plugins
