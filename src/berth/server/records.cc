// Record bodies and the feasibility check.
#include "berth/server/records.h"

#include <algorithm>
#include <cstdio>

#include "berth/json/json_parse.h"
#include "berth/server/job_json.h"

namespace berth::server {

using nlohmann::json;

namespace {
// Records are Berth's own writing, but a store is outside the process: parsed
// with the bounded parser, with room for the placements of the largest job.
StatusOr<json> ParseRecord(const std::string& body) {
  return berth::json::ParseUntrusted(body, {.max_bytes = size_t{1} << 30});
}

template <typename F>
Status Guard(const std::string& what, F f) {
  try {
    return f();
  } catch (const json::exception& e) {
    return InvalidArgument(what + ": " + e.what());
  }
}
}  // namespace

ClusterInfo DescribeCluster(const cluster::Cluster& cluster) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  auto mix = [&h](std::string_view text) {
    for (unsigned char c : text) {
      h ^= c;
      h *= 1099511628211ull;
    }
    h ^= 0xff;  // field separator
    h *= 1099511628211ull;
  };
  for (const cluster::Node& n : cluster.nodes()) {
    mix(n.name);
    mix(n.gpu_type.valid() ? cluster.gpu_type(n.gpu_type).name : "");
    mix(std::to_string(n.gpu_count));
    mix(std::to_string(n.cpu_milli));
    mix(std::to_string(n.memory_mib));
    for (const DomainId d : n.domain) mix(d.valid() ? cluster.domain(d).name : "");
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return {hex, cluster.Summary(), cluster.num_nodes(), cluster.total_gpus()};
}

std::string EncodeClusterInfo(const ClusterInfo& info) {
  return json{{"fingerprint", info.fingerprint}, {"summary", info.summary}, {"nodes", info.nodes}, {"gpus", info.gpus}}
      .dump();
}

Status DecodeClusterInfo(const std::string& body, ClusterInfo& info) {
  return Guard("cluster record", [&]() -> Status {
    json v = json::parse(body);
    info.fingerprint = v.at("fingerprint").get<std::string>();
    info.summary = v.value("summary", "");
    info.nodes = v.value("nodes", int64_t{0});
    info.gpus = v.value("gpus", int64_t{0});
    return Status::Ok();
  });
}

std::optional<job::JobState> ParseJobState(const std::string& name) {
  for (auto s : {job::JobState::kPending, job::JobState::kAdmitted, job::JobState::kRunning, job::JobState::kSucceeded,
                 job::JobState::kFailed, job::JobState::kPreempted, job::JobState::kCancelled})
    if (name == job::JobStateName(s)) return s;
  return std::nullopt;
}

std::string EncodeAccepted(const job::JobSpec& spec, const std::string& fingerprint) {
  return json{{"spec", JobToJson(spec)}, {"fingerprint", fingerprint}}.dump();
}

Status DecodeAccepted(const std::string& body, job::JobSpec& spec, std::string& fingerprint) {
  return Guard("accepted record", [&]() -> Status {
    BERTH_ASSIGN_OR_RETURN(json v, ParseRecord(body));
    BERTH_ASSIGN_OR_RETURN(JobSubmission sub, ParseJobJson(v.at("spec"), JobSource::kStored));
    spec = std::move(sub.spec);
    fingerprint = v.at("fingerprint").get<std::string>();
    return Status::Ok();
  });
}

std::string EncodePlacements(const cluster::Cluster& cluster, std::span<const framework::TaskPlacement> placements) {
  json a = json::array();
  for (const auto& p : placements) {
    a.push_back({{"task", p.task.index},
                 {"node", cluster.node(p.alloc.node).name},
                 {"gpus", p.alloc.gpu_mask},
                 {"milli", p.alloc.milli_per_gpu},
                 {"cpu", p.alloc.cpu_milli},
                 {"mem", p.alloc.memory_mib}});
    if (p.alloc.gpu_memory_mib > 0) a.back()["gpu_mem"] = p.alloc.gpu_memory_mib;
  }
  return a.dump();
}

StatusOr<std::vector<framework::TaskPlacement>> DecodePlacements(const cluster::Cluster& cluster, JobId job,
                                                                  const std::string& body) {
  std::vector<framework::TaskPlacement> out;
  Status s = Guard("started record", [&]() -> Status {
    BERTH_ASSIGN_OR_RETURN(json list, ParseRecord(body));
    if (!list.is_array()) return InvalidArgument("expected an array of placements");
    for (const auto& p : list) {
      const std::string node = p.at("node").get<std::string>();
      auto n = cluster.FindNode(node);
      if (!n) return NotFound("placement on node '" + node + "', which the cluster no longer has");
      framework::TaskPlacement tp;
      tp.task = TaskKey{job, p.at("task").get<int32_t>()};
      tp.alloc.node = *n;
      tp.alloc.gpu_mask = p.at("gpus").get<uint64_t>();
      tp.alloc.milli_per_gpu = p.at("milli").get<MilliGpu>();
      tp.alloc.cpu_milli = p.at("cpu").get<MilliCpu>();
      tp.alloc.memory_mib = p.at("mem").get<MiB>();
      tp.alloc.gpu_memory_mib = p.value("gpu_mem", MiB{0});
      out.push_back(tp);
    }
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return out;
}

std::string EncodeRepair(const cluster::Cluster& cluster, int32_t generation, int32_t attempt,
                         const framework::TaskPlacement& placement) {
  json one = json::parse(EncodePlacements(cluster, std::span<const framework::TaskPlacement>(&placement, 1)));
  return json{{"generation", generation}, {"task", placement.task.index}, {"attempt", attempt}, {"placement", one[0]}}
      .dump();
}

StatusOr<TaskRepair> DecodeRepair(const cluster::Cluster& cluster, JobId job, const std::string& body) {
  TaskRepair out;
  Status s = Guard("repair record", [&]() -> Status {
    BERTH_ASSIGN_OR_RETURN(json doc, ParseRecord(body));
    if (!doc.is_object()) return InvalidArgument("expected an object");
    out.generation = doc.at("generation").get<int32_t>();
    out.attempt = doc.at("attempt").get<int32_t>();
    BERTH_ASSIGN_OR_RETURN(auto ps, DecodePlacements(cluster, job, json::array({doc.at("placement")}).dump()));
    if (ps.size() != 1 || ps[0].task.index != doc.at("task").get<int32_t>())
      return InvalidArgument("the placement is not of the task named");
    out.placement = ps[0];
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return out;
}

std::string EncodeEnd(job::JobState state, const std::string& reason) {
  return json{{"state", job::JobStateName(state)}, {"reason", reason}}.dump();
}

Status DecodeEnd(const std::string& body, job::JobState& state, std::string& reason) {
  return Guard("end record", [&]() -> Status {
    BERTH_ASSIGN_OR_RETURN(json v, ParseRecord(body));
    auto st = ParseJobState(v.at("state").get<std::string>());
    if (!st) return InvalidArgument("end record: unknown state " + v.at("state").dump());
    state = *st;
    reason = v.value("reason", "");
    return Status::Ok();
  });
}

std::string EncodeNode(const NodeRecord& node) {
  json j = {{"quarantined", node.quarantined}, {"failures", node.failures}};
  if (node.draining) {
    j["draining"] = true;
    j["drain_deadline_us"] = node.drain_deadline;
  }
  return j.dump();
}

StatusOr<NodeRecord> DecodeNode(const std::string& body) {
  NodeRecord out;
  Status s = Guard("node record", [&]() -> Status {
    BERTH_ASSIGN_OR_RETURN(json v, ParseRecord(body));
    out.quarantined = v.at("quarantined").get<bool>();
    out.failures = v.value("failures", int64_t{0});
    out.draining = v.value("draining", false);
    out.drain_deadline = v.value("drain_deadline_us", TimeUs{-1});
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return out;
}

std::string EncodeNodeFailure(double weight) { return json{{"weight", weight}}.dump(); }

StatusOr<double> DecodeNodeFailure(const std::string& body) {
  double weight = 0;
  Status s = Guard("node failure record", [&]() -> Status {
    BERTH_ASSIGN_OR_RETURN(json v, ParseRecord(body));
    weight = v.at("weight").get<double>();
    if (!(weight > 0)) return InvalidArgument("weight must be > 0");
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return weight;
}

namespace {

// How many tasks of `g` one node holds at once when empty (the node's GPUs,
// shares, CPU and memory), capped at `cap`.
int64_t TasksPerNode(const cluster::Node& n, const job::TaskGroup& g, int64_t cap) {
  int64_t fit = cap;
  if (g.gpus > 0) {
    const int64_t per_gpu = g.is_sharing() ? kMilliPerGpu / g.milli_per_gpu : 1;
    fit = std::min<int64_t>(fit, int64_t{n.gpu_count} / g.gpus * per_gpu);
  }
  if (g.cpu_milli > 0) fit = std::min<int64_t>(fit, n.cpu_milli / g.cpu_milli);
  if (g.memory_mib > 0) fit = std::min<int64_t>(fit, n.memory_mib / g.memory_mib);
  return fit;
}

}  // namespace

Status CheckFeasible(const cluster::Cluster& cluster, const job::JobSpec& spec) {
  // Wide sums: counts up to 10^6 times quantities up to 2^63.
  __int128 need_milli = 0, need_cpu = 0, need_mem = 0;
  int64_t whole_gpus = 0;
  std::string gang_too_big;  // the first group whose gang no cluster-wide packing holds
  BERTH_RETURN_IF_ERROR(job::CheckGpuMemory(spec, cluster));
  for (size_t gi = 0; gi < spec.groups.size(); ++gi) {
    const auto& g = spec.groups[gi];
    const std::string where = "groups[" + std::to_string(gi) + "]";
    auto types = cluster.ParseTypeSet(g.gpu_type_spec);
    if (types.unknown)
      return InvalidArgument(where + ".gpu_types: the cluster has no GPU of type '" + g.gpu_type_spec + "'");
    // A gang's tasks all run at once: its minimum must fit in the nodes that
    // accept the group, each holding what its GPUs (or shares of them), CPU
    // and memory allow.
    const int64_t gang = g.gang_min();
    int64_t at_once = 0;
    bool fits = false;
    for (const auto& n : cluster.nodes()) {
      if (g.gpus > 0 && (n.gpu_count < g.gpus || !n.gpu_type.valid() || !types.set.Accepts(n.gpu_type))) continue;
      if (g.gpus > 0 && cluster.gpu_types()[n.gpu_type.value()].memory_mib < g.gpu_memory_mib) continue;
      if (n.cpu_milli < g.cpu_milli || n.memory_mib < g.memory_mib) continue;
      fits = true;
      at_once += TasksPerNode(n, g, gang - at_once);
      if (at_once >= gang) break;
    }
    if (!fits)
      return InvalidArgument(where + ": no node can ever hold one task (" + std::to_string(g.gpus) + " GPUs, " +
                             std::to_string(g.cpu_milli) + " milli-CPU, " + std::to_string(g.memory_mib) +
                             " MiB" + (g.gpu_type_spec.empty() ? "" : ", type " + g.gpu_type_spec) +
                             (g.gpu_memory_mib > 0 ? ", " + std::to_string(g.gpu_memory_mib) + " MiB GPU memory" : "") +
                             ")");
    if (at_once < gang && gang_too_big.empty())
      gang_too_big = (where + ": its " + std::to_string(gang) + " tasks must run at once, and the whole cluster " +
                             "holds at most " + std::to_string(at_once) + " of them (" +
                             (g.is_sharing() ? std::to_string(g.milli_per_gpu) + " milli-GPU shares, "
                                             : std::to_string(g.gpus) + " GPUs, ") +
                             std::to_string(g.cpu_milli) + " milli-CPU, " + std::to_string(g.memory_mib) + " MiB each)");
    if (g.milli_per_gpu == kMilliPerGpu) whole_gpus += int64_t{g.gang_min()} * g.gpus;
    need_milli += static_cast<__int128>(gang) * g.gpus * g.milli_per_gpu;
    need_cpu += static_cast<__int128>(gang) * g.cpu_milli;
    need_mem += static_cast<__int128>(gang) * g.memory_mib;
  }
  if (whole_gpus > cluster.total_gpus())
    return InvalidArgument("groups: the job needs " + std::to_string(whole_gpus) + " GPUs; the cluster has " +
                           std::to_string(cluster.total_gpus()));
  __int128 have_cpu = 0, have_mem = 0;
  for (const auto& n : cluster.nodes()) {
    have_cpu += n.cpu_milli;
    have_mem += n.memory_mib;
  }
  if (need_milli > static_cast<__int128>(cluster.total_gpus()) * kMilliPerGpu)
    return InvalidArgument("groups: the job's tasks that run at once need " +
                           std::to_string(static_cast<int64_t>(need_milli)) + " milli-GPU; the cluster has " +
                           std::to_string(cluster.total_gpus() * kMilliPerGpu));
  if (need_cpu > have_cpu)
    return InvalidArgument("groups: the job's tasks that run at once need more CPU than the cluster has (" +
                           std::to_string(static_cast<int64_t>(have_cpu)) + " milli-CPU)");
  if (need_mem > have_mem)
    return InvalidArgument("groups: the job's tasks that run at once need more memory than the cluster has (" +
                           std::to_string(static_cast<int64_t>(have_mem)) + " MiB)");
  if (!gang_too_big.empty()) return InvalidArgument(gang_too_big);
  // Topology bounds: the gang (or a group) larger than every domain of its required level.
  if (spec.required_level && whole_gpus > cluster.max_domain_gpus(*spec.required_level))
    return InvalidArgument("required_level: the job needs " + std::to_string(whole_gpus) + " GPUs at once; no " +
                           cluster::LevelName(*spec.required_level) + " domain has more than " +
                           std::to_string(cluster.max_domain_gpus(*spec.required_level)));
  for (size_t gi = 0; gi < spec.groups.size(); ++gi) {
    const auto& g = spec.groups[gi];
    const int64_t gpus = int64_t{g.gang_min()} * g.gpus;
    if (g.required_level && gpus > cluster.max_domain_gpus(*g.required_level))
      return InvalidArgument("groups[" + std::to_string(gi) + "].required_level: the group needs " +
                             std::to_string(gpus) + " GPUs at once; no " + cluster::LevelName(*g.required_level) +
                             " domain has more than " + std::to_string(cluster.max_domain_gpus(*g.required_level)));
  }
  return Status::Ok();
}

}  // namespace berth::server
