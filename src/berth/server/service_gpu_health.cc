// GPU-level health of node agents (docs/agent.md, "GPU failures"): each
// heartbeat carries the device indexes of the node's failed GPUs. A GPU newly
// listed stops the jobs holding it (each gang goes back to the queue from its
// last checkpoint, restart_cost counted) and leaves the scheduler's state
// (Scheduler::SetGpuUp), so the node keeps serving its other GPUs (with
// --repair in-place the stopped tasks alone restart, on the node's other GPUs
// or elsewhere: service_repair.cc); a GPU no
// longer listed comes back. The set is stated whole in every heartbeat, so a
// restarted server learns it again at the node's next heartbeat.
#include <bit>
#include <map>

#include "berth/server/service.h"

namespace berth::server {

using job::JobState;
using nlohmann::json;

void Service::ApplyGpuHealth(NodeId node, const std::vector<int32_t>& failed_devices) {
  NodeEntry& ne = nodes_[node.value()];
  const cluster::Node& cn = cluster_->node(node);
  if (failed_devices.empty() && ne.failed_gpus == 0) return;
  // Device indexes to the node's GPU positions, as registered.
  uint64_t mask = 0;
  auto agent = agents_.find(cn.name);
  for (int32_t device : failed_devices) {
    int32_t pos = -1;
    if (agent != agents_.end())
      for (size_t p = 0; p < agent->second.gpu_indexes.size(); ++p)
        if (agent->second.gpu_indexes[p] == device) pos = static_cast<int32_t>(p);
    if (pos < 0 || pos >= cn.gpu_count || pos >= 64) {
      log_.Warn("gpu_report_unknown", {{"node", cn.name}, {"gpu", device},
                                       {"reason", "the node registered no GPU with this index"}});
      continue;
    }
    mask |= uint64_t{1} << pos;
  }
  const state::ClusterState& st = sched_->state();
  // Newly failed (or failed but not yet out of the state: a task held it).
  const uint64_t take_out = mask & ~st.gpu_down_mask(node);
  const uint64_t fresh = mask & ~ne.failed_gpus;
  const uint64_t back = ne.failed_gpus & ~mask;
  for (uint64_t m = fresh; m; m &= m - 1) {
    ++ne.gpu_failures;
    ++metrics_.gpu_failures;
    RecordFailure(node, 1.0);
    log_.Warn("gpu_failed", {{"node", cn.name}, {"gpu", std::countr_zero(m)}});
  }
  if (take_out) {
    // The jobs holding a failed GPU stop (whole gangs, from their
    // checkpoint), or have those tasks repaired in place (--repair in-place).
    std::map<int64_t, std::vector<int32_t>> hit;
    for (const TaskKey& t : st.tasks_on(node))
      if (const state::Allocation* a = st.Find(t); a && (a->gpu_mask & take_out)) hit[t.job.value()].push_back(t.index);
    for (const auto& [id, tasks] : hit) {
      auto it = jobs_.find(id);
      if (it == jobs_.end() || it->second.state != JobState::kRunning) continue;
      FailJob(it->second, tasks, node, mask,
              "GPU " + std::to_string(std::countr_zero(take_out)) + " of node " + cn.name + " failed");
    }
    for (uint64_t m = take_out; m; m &= m - 1)
      if (Status s = sched_->SetGpuUp(node, std::countr_zero(m), false); !s.ok())
        log_.Error("gpu_down_failed", {{"node", cn.name}, {"gpu", std::countr_zero(m)}, {"error", s.message()}});
  }
  for (uint64_t m = back; m; m &= m - 1) {
    (void)sched_->SetGpuUp(node, std::countr_zero(m), true);
    log_.Info("gpu_recovered", {{"node", cn.name}, {"gpu", std::countr_zero(m)}});
  }
  if (mask != ne.failed_gpus || take_out) {
    ne.failed_gpus = mask;
    node_views_dirty_ = true;
    dirty_ = true;
  }
}

void Service::ReapplyFailedGpus(scheduler::Scheduler& s, NodeId node, uint64_t mask) {
  for (uint64_t m = mask; m; m &= m - 1)
    if (Status st = s.SetGpuUp(node, std::countr_zero(m), false); !st.ok())
      log_.Warn("gpu_down_deferred", {{"node", s.cluster().node(node).name}, {"gpu", std::countr_zero(m)},
                                      {"reason", st.message()}});  // retried at the node's next heartbeat
}

}  // namespace berth::server
