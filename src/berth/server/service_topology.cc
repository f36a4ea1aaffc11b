// GET /v1/topology: every node's GPU allocation in one compact document, for
// the dashboard's heat map (docs/dashboard.md). /v1/nodes says the same per
// node as one object each (about 190 bytes a node); this answer is columns of
// numbers and the spine > leaf tree as node ranges, so a 4,000-node cluster is
// 95 KB instead of 759 KB, and a browser polls it every few seconds.
#include <algorithm>

#include "berth/server/service.h"

namespace berth::server {

using nlohmann::json;

ApiResult Service::Topology() {
  auto snap = views_.Current();
  if (!snap->nodes) return ApiResult::Error(503, "the state is not loaded yet");
  ReadGate::Slot slot(*read_gate_);
  const cluster::Cluster& cl = *snap->cluster;
  const int32_t n = std::min<int32_t>(cl.num_nodes(), static_cast<int32_t>(snap->nodes->size()));
  json types = json::array();
  for (const auto& t : cl.gpu_types()) types.push_back(t.name);
  json names = json::array(), type = json::array(), gpus = json::array(), used = json::array(),
       tasks = json::array(), status = json::array();
  int64_t total_gpus = 0, used_milli = 0, down = 0, quarantined = 0;
  for (int32_t i = 0; i < n; ++i) {
    const auto& node = cl.node(NodeId(i));
    const NodeView& nv = (*snap->nodes)[i];
    names.push_back(node.name);
    type.push_back(node.gpu_type.valid() ? node.gpu_type.value() : -1);
    gpus.push_back(node.gpu_count);
    used.push_back(nv.gpus_used_milli);
    tasks.push_back(nv.tasks);
    // 0 up, 1 down (missed heartbeats), 2 quarantined (repeated failures; also down or not).
    status.push_back(nv.quarantined ? 2 : nv.up ? 0 : 1);
    total_gpus += node.gpu_count;
    used_milli += nv.gpus_used_milli;
    down += !nv.up;
    quarantined += nv.quarantined;
  }
  // Spines with their leaves as node ranges [first, first + count), in node
  // order (every domain is a contiguous range of node ids).
  json spines = json::array();
  for (DomainId s : cl.domains_at(cluster::Level::kSpine)) {
    const cluster::Domain& sd = cl.domain(s);
    if (sd.begin.value() >= n) continue;
    json leaves = json::array();
    for (DomainId l : cl.children(s)) {
      const cluster::Domain& ld = cl.domain(l);
      const int32_t first = ld.begin.value(), end = std::min(ld.end.value(), n);
      if (first >= end) continue;
      leaves.push_back({{"name", ld.name}, {"first", first}, {"count", end - first}, {"gpus", ld.gpus}});
    }
    spines.push_back({{"name", sd.name}, {"gpus", sd.gpus}, {"leaves", std::move(leaves)}});
  }
  return ApiResult{200,
                   {{"nodes", n},
                    {"gpus", total_gpus},
                    {"gpus_used_milli", used_milli},
                    {"nodes_down", down},
                    {"nodes_quarantined", quarantined},
                    {"gpu_types", std::move(types)},
                    {"spines", std::move(spines)},
                    {"columns",
                     {{"name", std::move(names)},
                      {"gpu_type", std::move(type)},
                      {"gpus", std::move(gpus)},
                      {"gpus_used_milli", std::move(used)},
                      {"tasks", std::move(tasks)},
                      {"status", std::move(status)}}}}};
}

}  // namespace berth::server
