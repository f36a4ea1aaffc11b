// The spread filter plugin.
#include "berth/plugins/spread/spread.h"

#include <memory>

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
  if (!j.service || (j.service->max_per_node <= 0 && j.service->max_per_leaf <= 0)) return true;
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

bool SpreadRuledOut(const state::ClusterState& state, const job::JobSpec& job,
                    std::span<const framework::RunningJob> running, std::span<const uint8_t> base,
                    std::vector<uint8_t>& out) {
  if (!job.service || (job.service->max_per_node <= 0 && job.service->max_per_leaf <= 0)) return false;
  const JobId service = job.replica_of.valid() ? job.replica_of : job.id;
  const cluster::Cluster& c = state.cluster();
  const int32_t nodes = c.num_nodes();
  std::vector<int32_t> on(static_cast<size_t>(nodes), 0);
  bool any = false;
  for (const framework::RunningJob& v : running) {
    if (v.spec->replica_of != service || v.spec->id == job.id) continue;
    for (const framework::TaskPlacement& p : v.placements) ++on[static_cast<size_t>(p.alloc.node.value())];
    any = true;
  }
  if (!any) return false;
  std::vector<uint8_t> full(static_cast<size_t>(nodes), 0);
  bool ruled = false;
  if (job.service->max_per_node > 0)
    for (int32_t n = 0; n < nodes; ++n)
      if (on[static_cast<size_t>(n)] >= job.service->max_per_node) {
        full[static_cast<size_t>(n)] = 1;
        ruled = true;
      }
  if (job.service->max_per_leaf > 0) {
    const int level = static_cast<int>(cluster::Level::kLeaf);
    for (int32_t n = 0; n < nodes; ++n) {
      const DomainId leaf = c.node(NodeId(n)).domain[level];
      if (!leaf.valid() || c.domain(leaf).begin.value() != n) continue;  // each leaf once, from its first node
      const cluster::Domain& d = c.domain(leaf);
      int32_t in_leaf = 0;
      for (int32_t m = d.begin.value(); m < d.end.value(); ++m) in_leaf += on[static_cast<size_t>(m)];
      if (in_leaf < job.service->max_per_leaf) continue;
      for (int32_t m = d.begin.value(); m < d.end.value(); ++m) full[static_cast<size_t>(m)] = 1;
      ruled = true;
    }
  }
  if (!ruled) return false;
  out.assign(static_cast<size_t>(nodes), 0);
  for (size_t n = 0; n < out.size(); ++n) out[n] = full[n] || (n < base.size() && base[n]);
  return true;
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
