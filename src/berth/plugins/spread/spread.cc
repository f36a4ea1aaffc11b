// The spread filter plugin.
#include "berth/plugins/spread/spread.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "berth/plugins/builtin.h"

namespace berth::plugins {

int32_t SpreadPlugin::ReplicasOn(const state::ClusterState& state, JobId service, JobId self, NodeId n) const {
  int32_t k = 0;
  for (const TaskKey& t : state.tasks_on(n)) {
    if (t.job == self) {
      ++k;
      continue;
    }
    auto it = service_of_.find(t.job);
    if (it != service_of_.end() && it->second == service) ++k;
  }
  return k;
}

bool SpreadPlugin::Filter(const framework::CycleContext& ctx, const framework::TaskRequest&, NodeId node) const {
  const job::JobSpec& j = ctx.job;
  if (!Limited(j)) return true;
  const JobId service = j.replica_of.valid() ? j.replica_of : j.id;
  if (j.service->max_per_node > 0 && ReplicasOn(ctx.state, service, j.id, node) >= j.service->max_per_node)
    return false;
  if (j.service->max_per_leaf > 0) {
    const cluster::Cluster& c = ctx.state.cluster();
    const DomainId leaf = c.node(node).domain[static_cast<int>(cluster::Level::kLeaf)];
    if (!leaf.valid()) return true;
    const cluster::Domain& d = c.domain(leaf);
    int32_t in_leaf = 0;
    for (int32_t n = d.begin.value(); n < d.end.value(); ++n) {
      in_leaf += ReplicasOn(ctx.state, service, j.id, NodeId(n));
      if (in_leaf >= j.service->max_per_leaf) return false;
    }
  }
  return true;
}

bool SpreadPlugin::RulesOut(const framework::SchedulerView& view, const job::JobSpec& job,
                            std::span<uint8_t> out) const {
  if (!job.service || (job.service->max_per_node <= 0 && job.service->max_per_leaf <= 0)) return false;
  if (service_of_.empty()) return false;  // no replica runs: no node is at a limit
  const JobId service = job.replica_of.valid() ? job.replica_of : job.id;
  const state::ClusterState& state = view.state;
  const cluster::Cluster& c = state.cluster();
  const int32_t nodes = std::min(c.num_nodes(), static_cast<int32_t>(out.size()));
  std::vector<int32_t> on(static_cast<size_t>(nodes), 0);
  for (int32_t n = 0; n < nodes; ++n) on[static_cast<size_t>(n)] = ReplicasOn(state, service, job.id, NodeId(n));
  bool ruled = false;
  if (job.service->max_per_node > 0)
    for (int32_t n = 0; n < nodes; ++n)
      if (on[static_cast<size_t>(n)] >= job.service->max_per_node) {
        out[static_cast<size_t>(n)] = 1;
        ruled = true;
      }
  if (job.service->max_per_leaf > 0) {
    const int level = static_cast<int>(cluster::Level::kLeaf);
    for (int32_t n = 0; n < nodes; ++n) {
      const DomainId leaf = c.node(NodeId(n)).domain[level];
      if (!leaf.valid() || c.domain(leaf).begin.value() != n) continue;  // each leaf once, from its first node
      const cluster::Domain& d = c.domain(leaf);
      const int32_t end = std::min(d.end.value(), nodes);
      int32_t in_leaf = 0;
      for (int32_t m = d.begin.value(); m < end; ++m) in_leaf += on[static_cast<size_t>(m)];
      if (in_leaf < job.service->max_per_leaf) continue;
      for (int32_t m = d.begin.value(); m < end; ++m) out[static_cast<size_t>(m)] = 1;
      ruled = true;
    }
  }
  return ruled;
}

void SpreadPlugin::OnStart(const job::JobSpec& job) {
  if (job.replica_of.valid()) service_of_[job.id] = job.replica_of;
}

void SpreadPlugin::OnFinish(const job::JobSpec& job) { service_of_.erase(job.id); }

Status RegisterSpreadPlugins(framework::PluginRegistry& r) {
  return r.Register(std::string(SpreadPlugin::kName),
                    [](const framework::PluginArgs& args) -> StatusOr<std::unique_ptr<framework::Plugin>> {
                      if (!args.empty()) return InvalidArgument("plugin 'spread': takes no args");
                      return std::unique_ptr<framework::Plugin>(std::make_unique<SpreadPlugin>());
                    });
}

}  // namespace berth::plugins

namespace berth::plugins {

// `services`: priority order (replicas outrank batch: workload/service_controller.h),
// the fit and spread filters, berth-frag placement (shares pack onto partly
// used GPUs, whole GPUs stay free for training), topology-aware gangs, and
// Berth's least-lost-work preemption inside one domain for reclaim.
Status RegisterServicePolicies(framework::PolicyRegistry& r) {
  framework::Profile p;
  p.queue_sort = "priority";
  p.admit = {framework::PluginRef{"spread"}};
  p.filter = {framework::PluginRef{"fit"}, framework::PluginRef{"spread"}};
  p.score = {framework::PluginRef{"berth-frag"}};
  p.plan = {framework::PluginRef{"topology"}};
  p.permit = {framework::PluginRef{"gang"}};
  p.post_filter = {framework::PluginRef{"preempt"}};
  return r.Register("services", std::move(p),
                    "services beside batch: priority order, replica spread, berth-frag packing, least-lost-work "
                    "preemption (needs the workload up front, like berth-frag)");
}

}  // namespace berth::plugins
