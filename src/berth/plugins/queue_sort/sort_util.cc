// Args, runtimes and order-based victim choice for the queue-sort plugins.
#include "berth/plugins/queue_sort/sort_util.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>

#include "berth/common/bits.h"
#include "berth/common/csv.h"

namespace berth::plugins::queue_sort {

using framework::PluginArgs;

namespace {

std::string Where(std::string_view plugin, const std::string& key) {
  return "plugin '" + std::string(plugin) + "': " + key;
}

}  // namespace

Status CheckArgs(const PluginArgs& args, std::string_view plugin, std::span<const std::string_view> known) {
  for (const auto& [key, value] : args) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string list;
    for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    return InvalidArgument("plugin '" + std::string(plugin) + "': unknown arg '" + key + "' (known: " + list + ")");
  }
  return Status::Ok();
}

StatusOr<double> ArgNumber(const PluginArgs& args, std::string_view plugin, const std::string& key,
                           double default_value) {
  auto it = args.find(key);
  if (it == args.end()) return default_value;
  double v = 0;
  if (!ParseDouble(it->second, v).ok() || !std::isfinite(v) || v < 0)
    return InvalidArgument(Where(plugin, key) + " must be a non-negative number, not '" + it->second + "'");
  return v;
}

StatusOr<std::vector<double>> ArgIncreasingList(const PluginArgs& args, std::string_view plugin,
                                                const std::string& key, std::vector<double> default_value) {
  auto it = args.find(key);
  if (it == args.end()) return default_value;
  std::vector<double> out;
  const std::string& text = it->second;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t end = std::min(text.find(',', begin), text.size());
    double v = 0;
    const std::string item = text.substr(begin, end - begin);
    if (!ParseDouble(item, v).ok() || !std::isfinite(v) || v <= 0 || (!out.empty() && v <= out.back()))
      return InvalidArgument(Where(plugin, key) + " must be increasing positive numbers separated by commas, not '" +
                             text + "'");
    out.push_back(v);
    begin = end + 1;
  }
  return out;
}

StatusOr<bool> ArgBool(const PluginArgs& args, std::string_view plugin, const std::string& key, bool default_value) {
  auto it = args.find(key);
  if (it == args.end()) return default_value;
  if (it->second == "true") return true;
  if (it->second == "false") return false;
  return InvalidArgument(Where(plugin, key) + " must be true or false, not '" + it->second + "'");
}

StatusOr<OrderPreemption> ArgOrderPreemption(const PluginArgs& args, std::string_view plugin) {
  OrderPreemption o;
  BERTH_ASSIGN_OR_RETURN(o.preempt, ArgBool(args, plugin, "preempt", true));
  BERTH_ASSIGN_OR_RETURN(o.evict_uncheckpointed, ArgBool(args, plugin, "evict_uncheckpointed", false));
  BERTH_ASSIGN_OR_RETURN(double min_runtime_s, ArgNumber(args, plugin, "min_runtime_s", 600));
  o.min_runtime = SecondsToUs(min_runtime_s);
  return o;
}

TimeUs DeclaredRuntime(const job::JobSpec& job) {
  if (job.runtime_limit >= 0) return job.runtime_limit;
  if (job.duration >= 0) return job.duration;
  return -1;
}

double JobGpus(const job::JobSpec& job) {
  return std::max(1e-3, static_cast<double>(job.total_milli_gpu()) / kMilliPerGpu);
}

namespace {

// One task group's need in whole GPUs.
struct GroupNeed {
  int32_t k = 0;  // GPUs per task
  int32_t m = 0;  // tasks needed (gang minimum)
  cluster::GpuTypeSet types;
};

// Whole GPUs that victims would free, per node (few nodes: a flat list).
struct Freed {
  std::vector<std::pair<NodeId, int32_t>> nodes;
  int32_t& At(NodeId n) {
    for (auto& [node, count] : nodes)
      if (node == n) return count;
    nodes.emplace_back(n, 0);
    return nodes.back().second;
  }
};

class FitCounter {
 public:
  FitCounter(const state::ClusterState& state, std::vector<GroupNeed> groups)
      : state_(state), groups_(std::move(groups)), base_(groups_.size(), 0) {
    const auto& types = state.cluster().gpu_types();
    for (size_t g = 0; g < groups_.size(); ++g) {
      const GroupNeed& need = groups_[g];
      for (size_t t = 0; t < types.size(); ++t) {
        const GpuTypeId type(static_cast<int16_t>(t));
        if (!need.types.Accepts(type)) continue;
        for (int j = need.k; j <= state.max_full_free(type); ++j)
          base_[g] += static_cast<int64_t>(state.nodes_with_full_free(type, j).Count()) * (j / need.k);
      }
    }
  }

  // Whether the job fits once `victims` (RunningJob pointers) release their GPUs.
  bool Fits(std::span<const framework::RunningJob* const> victims) const {
    Freed freed;
    for (const framework::RunningJob* v : victims) {
      for (const auto& p : v->placements) {
        if (p.alloc.milli_per_gpu != kMilliPerGpu || !state_.up(p.alloc.node)) continue;
        freed.At(p.alloc.node) += PopCount(p.alloc.gpu_mask);
      }
    }
    for (size_t g = 0; g < groups_.size(); ++g) {
      const GroupNeed& need = groups_[g];
      int64_t fit = base_[g];
      for (const auto& [node, extra] : freed.nodes) {
        if (!need.types.Accepts(state_.cluster().node(node).gpu_type)) continue;
        const int32_t free = state_.full_free_gpus(node);
        fit += (free + extra) / need.k - free / need.k;
      }
      if (fit < need.m) return false;
    }
    return true;
  }

 private:
  const state::ClusterState& state_;
  std::vector<GroupNeed> groups_;
  std::vector<int64_t> base_;  // per group: tasks the free GPUs hold now
};

}  // namespace

std::optional<framework::PreemptionPlan> PlanVictimsInOrder(const framework::PreemptContext& ctx,
                                                            std::span<const int32_t> worst_first,
                                                            const std::string& why) {
  if (worst_first.empty()) return std::nullopt;
  std::vector<GroupNeed> groups;
  int64_t need_gpus = 0;
  for (const auto& g : ctx.job.groups) {
    if (g.gpus == 0 || g.gang_min() == 0) continue;
    if (g.is_sharing() || g.gpu_types_unknown) return std::nullopt;
    groups.push_back({g.gpus, g.gang_min(), g.gpu_types});
    need_gpus += int64_t{g.gpus} * g.gang_min();
  }
  if (groups.empty()) return std::nullopt;
  const auto& running = ctx.view.running;
  // Cheap bound first: all candidates together must free enough whole GPUs.
  int64_t freeable = ctx.view.state.free_full_gpus_total();
  for (int32_t i : worst_first) freeable += running[i].milli_gpu / kMilliPerGpu;
  if (freeable < need_gpus) return std::nullopt;

  const FitCounter counter(ctx.view.state, std::move(groups));
  std::vector<const framework::RunningJob*> chosen;
  bool fits = false;
  for (int32_t i : worst_first) {
    chosen.push_back(&running[i]);
    if (counter.Fits(chosen)) {
      fits = true;
      break;
    }
  }
  if (!fits) return std::nullopt;
  // Minimal: drop, last taken first, every victim the fit does not need.
  for (size_t k = chosen.size(); k-- > 0;) {
    if (chosen.size() == 1) break;
    const framework::RunningJob* v = chosen[k];
    chosen.erase(chosen.begin() + static_cast<std::ptrdiff_t>(k));
    if (!counter.Fits(chosen)) chosen.insert(chosen.begin() + static_cast<std::ptrdiff_t>(k), v);
  }
  framework::PreemptionPlan plan;
  for (const framework::RunningJob* v : chosen) {
    plan.victims.push_back(v->spec->id);
    plan.lost_gpu_seconds += v->LostGpuSeconds(ctx.view.now);
  }
  char lost[32];
  std::snprintf(lost, sizeof lost, "%.2f", plan.lost_gpu_seconds / 3600.0);
  plan.reason = why + ": " + std::to_string(chosen.size()) + (chosen.size() == 1 ? " job, " : " jobs, ") + lost +
                " GPU-h lost";
  return plan;
}

}  // namespace berth::plugins::queue_sort
