// The FGD experiment protocol.
#include "berth/sim/fgd_protocol.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <unordered_map>

#include "berth/common/clock.h"
#include "berth/common/csv.h"
#include "berth/common/rng.h"
#include "berth/plugins/fgd/fragmentation.h"
#include "berth/scheduler/scheduler.h"

namespace berth::sim {
namespace {

// The per-GPU share as the trace states it (0 for CPU-only pods): the original
// resampling compares `current + gpu_milli` with the target, not the total.
MilliGpu TraceMilli(const job::JobSpec& j) {
  const auto& g = j.groups.front();
  return g.gpus == 0 ? 0 : g.milli_per_gpu;
}

StatusOr<std::vector<job::JobSpec>> ReadArrivalOrder(const std::string& path,
                                                     const std::vector<job::JobSpec>& originals) {
  std::unordered_map<std::string, size_t> by_name;
  for (size_t i = 0; i < originals.size(); ++i) by_name.emplace(originals[i].name, i);
  BERTH_ASSIGN_OR_RETURN(CsvFile f, CsvFile::Open(path));
  if (!f.HasColumn("pod")) return InvalidArgument(path + ":1: missing column 'pod'");
  std::vector<job::JobSpec> out;
  while (f.Next()) {
    std::string pod;
    BERTH_RETURN_IF_ERROR(f.GetString("pod", pod));
    std::string base = pod;
    if (size_t p = pod.find("-tuned-"); p != std::string::npos) base = pod.substr(0, p);
    auto it = by_name.find(base);
    if (it == by_name.end()) return f.Error("pod '" + pod + "' is not in the trace");
    job::JobSpec j = originals[it->second];
    j.name = pod;
    out.push_back(std::move(j));
  }
  if (out.empty()) return InvalidArgument(path + ": no arrivals");
  return out;
}

StatusOr<std::vector<int32_t>> ReadNodeRank(const std::string& path, const cluster::Cluster& cluster) {
  BERTH_ASSIGN_OR_RETURN(CsvFile f, CsvFile::Open(path));
  if (!f.HasColumn("rank") || !f.HasColumn("node")) return InvalidArgument(path + ":1: expected columns rank,node");
  std::vector<int32_t> rank(cluster.num_nodes(), -1);
  while (f.Next()) {
    int64_t r;
    std::string node;
    BERTH_RETURN_IF_ERROR(f.GetInt("rank", r));
    BERTH_RETURN_IF_ERROR(f.GetString("node", node));
    auto id = cluster.FindNode(node);
    if (!id) return f.Error("node '" + node + "' is not in the cluster");
    if (r < 0 || r >= cluster.num_nodes()) return f.Error("rank out of range");
    rank[id->value()] = static_cast<int32_t>(r);
  }
  for (size_t i = 0; i < rank.size(); ++i)
    if (rank[i] < 0) return InvalidArgument(path + ": no rank for node " + cluster.nodes()[i].name);
  return rank;
}

}  // namespace

StatusOr<FgdInput> BuildFgdInput(const cluster::Cluster& cluster, const Trace& trace, const FgdOptions& opts) {
  if (opts.load <= 0) return InvalidArgument("--load must be positive");
  for (const auto& j : trace.jobs)
    if (j.groups.size() != 1 || j.groups[0].count != 1)
      return InvalidArgument("the FGD protocol needs single-task jobs; job '" + j.name + "' is a gang");
  FgdInput in;
  in.originals = &trace.jobs;
  Rng rng(opts.seed);
  if (!opts.arrival_order_file.empty()) {
    BERTH_ASSIGN_OR_RETURN(in.arrivals, ReadArrivalOrder(opts.arrival_order_file, trace.jobs));
  } else {
    std::vector<job::JobSpec> sorted = trace.jobs;
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    in.arrivals = sorted;
    rng.Shuffle(in.arrivals);
    const int64_t target = static_cast<int64_t>(opts.load * static_cast<double>(cluster.total_milli_gpu()));
    int64_t current = 0;
    for (const auto& j : in.arrivals) current += j.total_milli_gpu();
    if (current <= target) {
      for (int64_t copy = 0;; ++copy) {
        const job::JobSpec& pick = sorted[rng.Uniform(sorted.size())];
        if (current + TraceMilli(pick) > target) break;
        job::JobSpec j = pick;
        j.name = pick.name + "-tuned-" + std::to_string(copy);
        current += j.total_milli_gpu();
        in.arrivals.push_back(std::move(j));
      }
    } else {
      while (current > target && !in.arrivals.empty()) {
        size_t k = rng.Uniform(in.arrivals.size());
        current -= in.arrivals[k].total_milli_gpu();
        in.arrivals.erase(in.arrivals.begin() + static_cast<std::ptrdiff_t>(k));
      }
    }
  }
  if (!opts.node_rank_file.empty()) {
    BERTH_ASSIGN_OR_RETURN(in.node_rank, ReadNodeRank(opts.node_rank_file, cluster));
  } else {
    std::vector<int32_t> perm(cluster.num_nodes());
    std::iota(perm.begin(), perm.end(), 0);
    rng.Shuffle(perm);
    in.node_rank.assign(cluster.num_nodes(), 0);
    for (int32_t r = 0; r < cluster.num_nodes(); ++r) in.node_rank[perm[r]] = r;
  }
  for (size_t i = 0; i < in.arrivals.size(); ++i) {
    in.arrivals[i].id = JobId(static_cast<int64_t>(i));
    in.arrivals[i].submit_time = 0;
  }
  return in;
}

StatusOr<PolicyResult> RunFgd(const cluster::Cluster& cluster, const FgdInput& input,
                              const framework::Profile& profile, const framework::PluginRegistry& registry,
                              const FgdOptions& opts) {
  const auto wall_start = std::chrono::steady_clock::now();
  framework::PluginContext context;
  context.cluster = &cluster;
  if (input.originals) context.workload = *input.originals;
  BERTH_ASSIGN_OR_RETURN(std::unique_ptr<framework::Framework> fw,
                         framework::Framework::Create(profile, registry, context));
  ManualClock clock(0);
  scheduler::SchedulerOptions so;
  so.seed = opts.seed;
  so.drop_unschedulable = true;
  so.node_rank = input.node_rank;
  so.check_indexes = opts.check_indexes;
  so.full_scan = opts.full_scan;
  scheduler::Scheduler sched(cluster, std::move(fw), std::move(so), clock);

  PolicyResult r;
  r.policy = profile.name;
  r.mode = "fgd";
  r.seed = opts.seed;
  r.load = opts.load;
  r.capacity_milli_gpu = cluster.total_milli_gpu();
  const double cap = static_cast<double>(r.capacity_milli_gpu);
  int64_t arrived = 0;
  double last_x = -1;
  for (const auto& j : input.arrivals) {
    BERTH_RETURN_IF_ERROR(sched.Submit(j));
    sched.Schedule();
    const scheduler::JobRecord* rec = sched.Find(j.id);
    arrived += j.total_milli_gpu();
    const bool placed = rec->state == job::JobState::kRunning;
    if (placed) ++r.jobs_placed; else ++r.jobs_failed;
    if (!placed && rec->last_verdict.code == framework::VerdictCode::kUnresolvable) ++r.jobs_never_fit;
    if (opts.record_placements) {
      r.placements.push_back({j.id.value(), j.name,
                              placed ? cluster.node(rec->placements.front().alloc.node).name : "FAILED"});
    }
    const double x = 100.0 * arrived / cap;
    if (x - last_x >= 0.25) {
      r.allocation_over_time.push_back({x, 100.0 * sched.state().allocated_milli() / cap});
      last_x = x;
    }
  }
  r.jobs_total = static_cast<int64_t>(input.arrivals.size());
  r.allocated_milli_gpu = sched.state().allocated_milli();
  r.gpu_allocation_ratio = r.allocated_milli_gpu / cap;
  r.allocation_over_time.push_back({100.0 * arrived / cap, 100.0 * r.gpu_allocation_ratio});
  if (input.originals && !input.originals->empty()) {
    const plugins::fgd::ClusterFragmentation frag =
        plugins::fgd::MeasureFragmentation(*input.originals, sched.state());
    r.fragmentation_ratio = frag.rate();
    r.fragmented_gpu_share = frag.share();
  }
  r.decision_log_hash = sched.log().HashHex();
  r.decisions = sched.log().entries();
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return r;
}

}  // namespace berth::sim
