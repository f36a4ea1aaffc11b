// Launch specs: rank order over the topology, torchrun variables, TF_CONFIG,
// the MPI host file and NCCL hints.
#include "berth/workload/launch.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>

namespace berth::workload {
namespace {

// TF_CONFIG task types a group name maps to; any other name is a worker.
std::string TfType(const std::string& group) {
  if (group == "chief" || group == "ps" || group == "evaluator") return group;
  return "worker";
}

std::string CsvOf(const std::vector<int32_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

std::string BusId(int32_t bus) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0000:%02x:00.0", bus & 0xff);
  return buf;
}

// XML attribute text.
std::string Escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// A part of a gang split across regions (JobSpec::span_part): its ranks are
// the gang's from rank_offset, WORLD_SIZE is the gang's, and a rendezvous the
// job's env names (MASTER_ADDR, MASTER_PORT: reachable from every part's
// region) wins over the part's own first node, which no other part knows.
void ShiftToGang(const job::JobSpec& job, LaunchSpec& s) {
  const job::JobSpec::SpanPart& part = *job.span_part;
  const int32_t off = part.rank_offset;
  const int32_t part_tasks = s.world_size;
  s.world_size = part.world_size;
  for (auto& t : s.tasks) {
    t.rank += off;
    auto& e = t.env;
    e["RANK"] = std::to_string(t.rank);
    e["WORLD_SIZE"] = std::to_string(part.world_size);
    e["BERTH_SPAN_PART"] = std::to_string(part.index);
    e["BERTH_SPAN_PARTS"] = std::to_string(part.parts);
    e["BERTH_SPAN_RANK_OFFSET"] = std::to_string(off);
    e["BERTH_SPAN_PART_TASKS"] = std::to_string(part_tasks);
    for (const char* name : {"MASTER_ADDR", "MASTER_PORT"})
      if (auto user = job.env.find(name); user != job.env.end()) e[name] = user->second;
  }
  if (auto a = job.env.find("MASTER_ADDR"); a != job.env.end()) s.master_addr = a->second;
  if (auto p = job.env.find("MASTER_PORT"); p != job.env.end()) {
    const long port = std::strtol(p->second.c_str(), nullptr, 10);
    if (port > 0 && port <= 65535) s.master_port = static_cast<int32_t>(port);
  }
  for (auto& n : s.nodes)
    for (auto& r : n.ranks) r += off;
  for (auto& r : s.nccl_ring) r += off;
}

}  // namespace

Status LaunchOptions::Validate() const {
  if (port_min < 1024 || port_max > 65535 || port_min > port_max)
    return InvalidArgument("--launch-ports: " + std::to_string(port_min) + "-" + std::to_string(port_max) +
                           " is not a range within 1024-65535");
  return Status::Ok();
}

std::string NcclTopologyXml(const cluster::Cluster& cluster, NodeId node_id, std::span<const int32_t> job_gpus) {
  const cluster::Node& node = cluster.node(node_id);
  const cluster::Domain& nvl = cluster.domain(node.domain[static_cast<int>(cluster::Level::kNvlink)]);
  const cluster::Domain& leaf = cluster.domain(node.domain[static_cast<int>(cluster::Level::kLeaf)]);
  const std::string type = node.gpu_type.valid() ? cluster.gpu_type(node.gpu_type).name : "";
  const int32_t nvl_nodes = nvl.end.value() - nvl.begin.value();
  // NVLink links per GPU, from the domain's bandwidth at about 200 Gbit/s a
  // link (NVLink 4); at least one when the node has several GPUs.
  const int32_t links = nvl.bandwidth_gbps > 0 ? std::max(1, static_cast<int32_t>(nvl.bandwidth_gbps / 200)) : 1;
  std::string x;
  x += "<system version=\"1\">\n";
  x += "  <!-- Berth's model of node " + Escaped(node.name) + ": " + std::to_string(node.gpu_count) + " x " +
       Escaped(type.empty() ? "no GPU" : type) + ", NVLink domain " + Escaped(nvl.name) + " (" +
       std::to_string(nvl_nodes) + " node" + (nvl_nodes == 1 ? "" : "s") + "), leaf " + Escaped(leaf.name) +
       ". Bus ids are placeholders: replace them with the real ones (nvidia-smi --query-gpu=pci.bus_id). -->\n";
  x += "  <cpu numaid=\"0\" arch=\"x86_64\">\n";
  for (int32_t g = 0; g < node.gpu_count; ++g) {
    const bool held = std::find(job_gpus.begin(), job_gpus.end(), g) != job_gpus.end();
    x += "    <pci busid=\"" + BusId(g + 1) + "\" class=\"0x030200\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n";
    x += "      <gpu dev=\"" + std::to_string(g) + "\"" + (held ? "" : " berth_unused=\"1\"") + ">\n";
    if (node.gpu_count > 1 || nvl_nodes > 1)
      x += "        <nvlink target=\"" + BusId(0xff) + "\" count=\"" + std::to_string(links) +
           "\" tclass=\"0x068000\"/>\n";
    x += "      </gpu>\n";
    x += "    </pci>\n";
  }
  if (node.gpu_count > 0) {
    // One NIC per GPU (rail-optimized), at the leaf's bandwidth per GPU, in Mbit/s.
    const int64_t mbps = leaf.bandwidth_gbps > 0 ? static_cast<int64_t>(leaf.bandwidth_gbps * 1000) : 100000;
    x += "    <nic>\n";
    for (int32_t g = 0; g < node.gpu_count; ++g)
      x += "      <net name=\"berth-rail" + std::to_string(g) + "\" dev=\"" + std::to_string(g) + "\" speed=\"" +
           std::to_string(mbps) + "\" port=\"1\" gdr=\"1\" busid=\"" + BusId(0x81 + g) + "\"/>\n";
    x += "    </nic>\n";
  }
  x += "  </cpu>\n";
  x += "</system>\n";
  return x;
}

IsolationLimits IsolationOf(const state::Allocation& a) {
  IsolationLimits l;
  if (a.gpu_mask == 0) return l;
  l.gpu_memory_mib = a.gpu_memory_mib;
  if (a.is_sharing()) l.active_thread_percent = std::max<int32_t>(1, (a.milli_per_gpu + 9) / 10);
  return l;
}

std::map<std::string, std::string> IsolationEnv(const state::Allocation& a) {
  std::map<std::string, std::string> env;
  const IsolationLimits l = IsolationOf(a);
  if (l.gpu_memory_mib > 0) {
    env["BERTH_GPU_MEMORY_LIMIT_MIB"] = std::to_string(l.gpu_memory_mib);
    std::string pinned;  // ordinals as the task sees its GPUs (CUDA_VISIBLE_DEVICES order)
    for (int i = 0; i < a.gpu_count(); ++i)
      pinned += (i ? "," : "") + std::to_string(i) + "=" + std::to_string(l.gpu_memory_mib) + "M";
    env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = pinned;
  }
  if (l.active_thread_percent > 0) {
    env["BERTH_GPU_COMPUTE_PERCENT"] = std::to_string(l.active_thread_percent);
    env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = std::to_string(l.active_thread_percent);
  }
  return env;
}

namespace {

// The rank rule: node (topology order), lowest GPU held, task index.
bool RankBefore(const framework::TaskPlacement* a, const framework::TaskPlacement* b) {
  auto first_gpu = [](const framework::TaskPlacement* p) {
    return p->alloc.gpu_mask ? __builtin_ctzll(p->alloc.gpu_mask) : 64;
  };
  if (a->alloc.node != b->alloc.node) return a->alloc.node < b->alloc.node;
  if (first_gpu(a) != first_gpu(b)) return first_gpu(a) < first_gpu(b);
  return a->task.index < b->task.index;
}

}  // namespace

std::vector<int32_t> RankOrder(std::span<const framework::TaskPlacement> placements) {
  std::vector<const framework::TaskPlacement*> order;
  for (const auto& p : placements) order.push_back(&p);
  std::sort(order.begin(), order.end(), RankBefore);
  std::vector<int32_t> out;
  for (const auto* p : order) out.push_back(p->task.index);
  return out;
}

StatusOr<LaunchSpec> ComputeLaunchSpec(const cluster::Cluster& cluster, const job::JobSpec& job,
                                       std::span<const framework::TaskPlacement> placements,
                                       const LaunchOptions& options) {
  if (placements.empty()) return FailedPrecondition("job " + std::to_string(job.id.value()) + " is not placed");
  BERTH_RETURN_IF_ERROR(options.Validate());
  const int32_t num_tasks = job.num_tasks();
  std::vector<const framework::TaskPlacement*> order;
  std::vector<uint8_t> seen(static_cast<size_t>(num_tasks), 0);
  for (const auto& p : placements) {
    if (p.task.index < 0 || p.task.index >= num_tasks)
      return InvalidArgument("placement of task " + std::to_string(p.task.index) + ": the job has " +
                             std::to_string(num_tasks) + " tasks");
    if (seen[p.task.index]++) return InvalidArgument("task " + std::to_string(p.task.index) + " is placed twice");
    if (!p.alloc.node.valid() || p.alloc.node.value() >= cluster.num_nodes())
      return InvalidArgument("task " + std::to_string(p.task.index) + ": no such node");
    order.push_back(&p);
  }
  // The rank rule, or the run's kept order.
  std::sort(order.begin(), order.end(), RankBefore);
  if (options.rank_order.size() == order.size()) {
    std::map<int32_t, const framework::TaskPlacement*> by_task;
    for (const auto* p : order) by_task[p->task.index] = p;
    std::vector<const framework::TaskPlacement*> kept;
    for (int32_t t : options.rank_order)
      if (auto it = by_task.find(t); it != by_task.end()) {
        kept.push_back(it->second);
        by_task.erase(it);
      }
    if (kept.size() == order.size()) order = std::move(kept);
  }

  LaunchSpec s;
  s.job = job.id;
  s.launcher = job.launcher;
  s.command = job.command;
  s.world_size = static_cast<int32_t>(order.size());
  const int64_t span = int64_t{options.port_max} - options.port_min + 1;
  const int64_t port_offset = ((job.id.value() % span) + span) % span;
  s.master_port = static_cast<int32_t>(options.port_min + port_offset);
  auto address_of = [&](const std::string& name) {
    if (options.node_address)
      if (auto a = options.node_address(name); a && !a->empty()) return *a;
    return name;
  };

  // Nodes in the order of their lowest rank, with their ranks. (With the
  // rank rule a node's ranks are consecutive; a kept order after a repair
  // may give a node ranks apart.)
  std::vector<NodeId> node_ids;
  for (int32_t r = 0; r < s.world_size; ++r) {
    const NodeId n = order[r]->alloc.node;
    auto at = std::find(node_ids.begin(), node_ids.end(), n);
    if (at == node_ids.end()) {
      node_ids.push_back(n);
      NodeLaunch nl;
      nl.node = cluster.node(n).name;
      nl.address = address_of(nl.node);
      nl.node_rank = static_cast<int32_t>(s.nodes.size());
      s.nodes.push_back(std::move(nl));
      at = node_ids.end() - 1;
    }
    s.nodes[at - node_ids.begin()].ranks.push_back(r);
  }
  s.master_addr = s.nodes.front().address;

  // TF: tasks of each type in rank order, a port per task on its node.
  std::map<std::string, std::vector<std::string>> tf_cluster;
  std::vector<std::pair<std::string, int32_t>> tf_task(order.size());
  for (size_t ni = 0; ni < s.nodes.size(); ++ni) {
    const NodeLaunch& nl = s.nodes[ni];
    for (size_t li = 0; li < nl.ranks.size(); ++li) {
      const int32_t r = nl.ranks[li];
      const auto* p = order[r];
      TaskLaunch t;
      t.task = p->task.index;
      t.group = job.groups[job.TaskPosition(t.task).first].name;
      t.rank = r;
      t.local_rank = static_cast<int32_t>(li);
      t.local_world_size = static_cast<int32_t>(nl.ranks.size());
      t.node_rank = nl.node_rank;
      t.node = nl.node;
      t.address = nl.address;
      for (int g = 0; g < 64; ++g)
        if ((p->alloc.gpu_mask >> g) & 1) t.gpus.push_back(g);
      const std::string type = TfType(t.group);
      auto& list = tf_cluster[type];
      tf_task[r] = {type, static_cast<int32_t>(list.size())};
      const int32_t port = static_cast<int32_t>(options.port_min + (port_offset + li) % span);
      list.push_back(t.address + ":" + std::to_string(port));
      s.tasks.push_back(std::move(t));
    }
  }
  std::sort(s.tasks.begin(), s.tasks.end(), [](const TaskLaunch& a, const TaskLaunch& b) { return a.rank < b.rank; });

  for (auto& t : s.tasks) {
    t.env = job.env;
    auto& e = t.env;
    e["RANK"] = std::to_string(t.rank);
    e["WORLD_SIZE"] = std::to_string(s.world_size);
    e["LOCAL_RANK"] = std::to_string(t.local_rank);
    e["LOCAL_WORLD_SIZE"] = std::to_string(t.local_world_size);
    e["NODE_RANK"] = std::to_string(t.node_rank);
    e["GROUP_RANK"] = std::to_string(t.node_rank);
    e["MASTER_ADDR"] = s.master_addr;
    e["MASTER_PORT"] = std::to_string(s.master_port);
    e["BERTH_JOB_ID"] = std::to_string(job.id.value());
    e["BERTH_TASK_INDEX"] = std::to_string(t.task);
    e["BERTH_NUM_NODES"] = std::to_string(s.nodes.size());
    e["BERTH_NODE"] = t.node;
    e["BERTH_LAUNCHER"] = job::LauncherName(job.launcher);
    if (!t.gpus.empty()) e["CUDA_VISIBLE_DEVICES"] = CsvOf(t.gpus);
    for (auto& [name, value] : IsolationEnv(order[t.rank]->alloc)) e[name] = value;
    if (job.launcher == job::Launcher::kTf) {
      nlohmann::ordered_json tf;
      tf["cluster"] = nlohmann::ordered_json::object();
      for (const auto& [type, list] : tf_cluster) tf["cluster"][type] = list;
      tf["task"] = {{"type", tf_task[t.rank].first}, {"index", tf_task[t.rank].second}};
      e["TF_CONFIG"] = tf.dump();
    }
  }

  for (size_t ni = 0; ni < s.nodes.size(); ++ni) {
    NodeLaunch& nl = s.nodes[ni];
    s.mpi_hostfile += nl.address + " slots=" + std::to_string(nl.ranks.size()) + "\n";
    std::vector<int32_t> gpus;
    for (int32_t r : nl.ranks) gpus.insert(gpus.end(), s.tasks[r].gpus.begin(), s.tasks[r].gpus.end());
    std::sort(gpus.begin(), gpus.end());
    nl.nccl_topology_xml = NcclTopologyXml(cluster, node_ids[ni], gpus);
  }
  // Ranks already follow the topology, so the ring is rank order: it crosses
  // each node, NVLink domain and leaf boundary once each way.
  for (int32_t r = 0; r < s.world_size; ++r) s.nccl_ring.push_back(r);
  if (job.span_part) ShiftToGang(job, s);
  return s;
}

}  // namespace berth::workload
