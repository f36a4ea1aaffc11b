// LaunchSpec -> JSON.
#include "berth/server/launch_json.h"

namespace berth::server {

nlohmann::json LaunchSpecJson(const workload::LaunchSpec& s) {
  using nlohmann::json;
  json tasks = json::array();
  for (const auto& t : s.tasks)
    tasks.push_back({{"task", t.task},
                     {"group", t.group},
                     {"rank", t.rank},
                     {"local_rank", t.local_rank},
                     {"local_world_size", t.local_world_size},
                     {"node_rank", t.node_rank},
                     {"node", t.node},
                     {"address", t.address},
                     {"gpus", t.gpus},
                     {"env", t.env}});
  json nodes = json::array();
  for (const auto& n : s.nodes)
    nodes.push_back({{"node", n.node},
                     {"address", n.address},
                     {"node_rank", n.node_rank},
                     {"ranks", n.ranks},
                     {"slots", n.ranks.size()},
                     {"nccl_topology_xml", n.nccl_topology_xml}});
  return {{"id", s.job.value()},
          {"launcher", job::LauncherName(s.launcher)},
          {"command", s.command},
          {"world_size", s.world_size},
          {"master_addr", s.master_addr},
          {"master_port", s.master_port},
          {"tasks", std::move(tasks)},
          {"nodes", std::move(nodes)},
          {"mpi_hostfile", s.mpi_hostfile},
          {"nccl", {{"ring", s.nccl_ring}}}};
}

}  // namespace berth::server
