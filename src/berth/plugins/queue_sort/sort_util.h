// Pieces shared by the queue-sort plugins: reading their string args, the
// runtime a job still needs, and the victims of an order-based preemption
// (srtf and tiresias preempt running jobs that their order ranks below the
// job that waits).
//
//   BERTH_ASSIGN_OR_RETURN(double x, ArgNumber(args, "tiresias", "promote_after", 2.0));
//   std::optional<PreemptionPlan> p = PlanVictimsInOrder(ctx, worst_first, "2D-LAS queue 0 > 1");
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "berth/common/status.h"
#include "berth/framework/plugin.h"
#include "berth/framework/registry.h"

namespace berth::plugins::queue_sort {

// Error unless every key of `args` is one of `known`, naming the plugin and the key.
Status CheckArgs(const framework::PluginArgs& args, std::string_view plugin, std::span<const std::string_view> known);
// A non-negative number arg (default when absent).
StatusOr<double> ArgNumber(const framework::PluginArgs& args, std::string_view plugin, const std::string& key,
                           double default_value);
// A comma-separated list of increasing non-negative numbers ("1,10").
StatusOr<std::vector<double>> ArgIncreasingList(const framework::PluginArgs& args, std::string_view plugin,
                                                const std::string& key, std::vector<double> default_value);
// "true"/"false" (default when absent).
StatusOr<bool> ArgBool(const framework::PluginArgs& args, std::string_view plugin, const std::string& key,
                       bool default_value);

// The args and guards of order-based preemption (srtf, tiresias): `preempt`
// (default true) turns it on. A running job V may be evicted for the job J of
// `ctx` only when
//   - V checkpoints, or arg `evict_uncheckpointed` is true (a job that never
//     checkpoints loses all its work and restarts from scratch);
//   - V has run at least `min_runtime_s` (default 600, as the `preempt`
//     plugin) in its current run;
//   - V is not the job whose preemption last evicted J (no A-evicts-B-evicts-A
//     ping-pong).
struct OrderPreemption {
  bool preempt = true;
  bool evict_uncheckpointed = false;
  TimeUs min_runtime = 600 * kUsPerSecond;
  bool Evictable(const framework::RunningJob& r, const framework::PreemptContext& ctx) const {
    return (evict_uncheckpointed || r.checkpoint_interval > 0) && ctx.view.now - r.start_time >= min_runtime &&
           r.spec->id != ctx.preempted_by;
  }
};
StatusOr<OrderPreemption> ArgOrderPreemption(const framework::PluginArgs& args, std::string_view plugin);

// The runtime a job needs in all, as a scheduler may know it: its declared
// limit if any, else its true duration when the driver knows it (an oracle in
// simulation), else -1 (unknown).
TimeUs DeclaredRuntime(const job::JobSpec& job);
// GPUs the job holds when running (shares count their fraction), at least 1e-3.
double JobGpus(const job::JobSpec& job);

// Victims for the job of `ctx` among `worst_first` (indexes into
// ctx.view.running, least deserving first): taken in that order until the
// free whole GPUs plus the victims' whole GPUs can hold every task of the job
// (per group: the sum over up nodes of its types of floor(free / GPUs per
// task) reaches the gang minimum), then pruned: a victim whose release the fit
// does not need is dropped, the last taken first, so the set is minimal.
// nullopt when all candidates are not enough, or when the job asks for a GPU
// share or no GPU (order-based preemption frees whole GPUs only). CPU and
// memory are not checked here: the scheduler places the job after the
// evictions and reports it if that fails.
std::optional<framework::PreemptionPlan> PlanVictimsInOrder(const framework::PreemptContext& ctx,
                                                            std::span<const int32_t> worst_first,
                                                            const std::string& why);

// Registration, one per plugin file (called by RegisterQueueSortPlugins).
Status RegisterSrtf(framework::PluginRegistry& registry);
Status RegisterTiresias(framework::PluginRegistry& registry);
Status RegisterFairShare(framework::PluginRegistry& registry);

}  // namespace berth::plugins::queue_sort
