// Score plugin "berth-frag": place a task where it adds the least expected
// waste W (waste_model.h: look-ahead fragmentation plus CPU stranding).
//
//   score(task, n) = round(1000 * (W(n) - W(n')))   n': n after the task
//
// i.e. the exact change in milli-GPU, to 0.001 milli (FGD truncates a sigmoid
// of its change to an integer 0..100, so most nodes tie and the random node
// rank decides; here ties are rare and still go to the lowest rank). A
// GPU-sharing task is tried on each GPU it fits (one GPU per distinct free
// amount); the node scores its best GPU, which SelectGpus returns (lowest
// index on ties). Other tasks: n' takes `gpus` GPUs in ascending free milli
// (stable by index) that fit, which for whole GPUs are the lowest-index free
// ones the scheduler picks.
//
// Built from the workload the driver supplies (PluginContext::workload): its
// typical pods and its CPU per GPU. Args: "typical_coverage_percent" (default
// 95, as FGD), "lookahead" (true|false, default true), "cpu_weight" (>= 0,
// default 1). The defaults are the policy; the others exist to measure what
// each part contributes (docs/results/berth-frag.md).
//
// Speed: as the fgd plugin, W(n) and each (task shape, node) outcome are
// cached and stamped with ClusterState::node_version(n).
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "berth/common/csv.h"
#include "berth/plugins/builtin.h"
#include "berth/plugins/fgd/delta_score.h"
#include "berth/plugins/frag/waste_model.h"

namespace berth::plugins {
namespace {

using framework::CycleContext;
using framework::TaskRequest;

// Waste removed, in units of 0.001 milli-GPU.
int64_t ToScore(double waste_removed) { return std::llround(waste_removed * 1000.0); }

class FragScore final : public framework::ScorePlugin {
 public:
  static constexpr std::string_view kName = "berth-frag";
  explicit FragScore(frag::WasteModel model) : model_(std::move(model)) {}
  std::string_view Name() const override { return kName; }

  int64_t Score(const CycleContext& ctx, const TaskRequest& req, NodeId n) const override {
    return Evaluate(ctx.state, req, n).score;
  }

  std::optional<uint64_t> SelectGpus(const CycleContext& ctx, const TaskRequest& req, NodeId n) const override {
    if (!req.is_sharing()) return std::nullopt;
    const Outcome o = Evaluate(ctx.state, req, n);
    if (o.gpu < 0) return std::nullopt;
    return uint64_t{1} << o.gpu;
  }

 private:
  static constexpr uint64_t kNever = ~uint64_t{0};
  struct Outcome {
    int64_t score = 0;
    int32_t gpu = -1;  // sharing tasks: the GPU that won
  };
  struct Slot {
    uint64_t version = kNever;
    Outcome outcome;
  };
  using ShapeKey = std::tuple<MilliCpu, MilliGpu, int32_t>;

  Outcome Evaluate(const state::ClusterState& state, const TaskRequest& req, NodeId n) const;
  Outcome Compute(const state::ClusterState& state, const TaskRequest& req, NodeId n) const;
  double NodeWaste(const state::ClusterState& state, NodeId n) const;
  std::vector<Slot>& SlotsFor(const TaskRequest& req) const;

  frag::WasteModel model_;

  // Caches, valid for the state last seen (another ClusterState resets them).
  mutable const state::ClusterState* state_ = nullptr;
  mutable std::vector<uint64_t> waste_version_;
  mutable std::vector<double> waste_;
  mutable std::map<ShapeKey, int32_t> shape_index_;
  mutable std::vector<std::vector<Slot>> slots_;  // [shape][node]
  mutable ShapeKey last_key_{-1, -1, -1};
  mutable int32_t last_shape_ = -1;
};

std::vector<FragScore::Slot>& FragScore::SlotsFor(const TaskRequest& req) const {
  const ShapeKey key{req.cpu_milli, req.gpus == 0 ? 0 : req.milli_per_gpu, req.gpus};
  if (key != last_key_ || last_shape_ < 0) {
    auto [it, inserted] = shape_index_.emplace(key, static_cast<int32_t>(slots_.size()));
    if (inserted) slots_.emplace_back(waste_.size());
    last_key_ = key;
    last_shape_ = it->second;
  }
  return slots_[last_shape_];
}

FragScore::Outcome FragScore::Evaluate(const state::ClusterState& state, const TaskRequest& req, NodeId n) const {
  if (state_ != &state) {
    state_ = &state;
    const size_t nodes = static_cast<size_t>(state.cluster().num_nodes());
    waste_version_.assign(nodes, kNever);
    waste_.assign(nodes, 0);
    shape_index_.clear();
    slots_.clear();
    last_shape_ = -1;
  }
  Slot& slot = SlotsFor(req)[n.value()];
  const uint64_t version = state.node_version(n);
  if (slot.version != version) {
    slot.outcome = Compute(state, req, n);
    slot.version = version;
  }
  return slot.outcome;
}

double FragScore::NodeWaste(const state::ClusterState& state, NodeId n) const {
  const uint64_t version = state.node_version(n);
  if (waste_version_[n.value()] != version) {
    waste_[n.value()] = model_.NodeWaste(state, n);
    waste_version_[n.value()] = version;
  }
  return waste_[n.value()];
}

FragScore::Outcome FragScore::Compute(const state::ClusterState& state, const TaskRequest& req, NodeId n) const {
  const GpuTypeId type = state.cluster().node(n).gpu_type;
  const DeltaOutcome o = ScoreByDelta(
      state, req, n, NodeWaste(state, n),
      [&](std::span<const MilliGpu> free, MilliCpu cpu) { return model_.NodeWaste(free, cpu, type); },
      [this](double drop) -> int64_t { return ToScore(drop); });
  return {o.score, o.gpu};
}

StatusOr<frag::WasteModelOptions> ParseOptions(const framework::PluginArgs& args, int64_t& coverage) {
  frag::WasteModelOptions o;
  coverage = 95;
  for (const auto& [key, value] : args) {
    if (key == "typical_coverage_percent") {
      if (!ParseInt64(value, coverage).ok() || coverage < 1 || coverage > 100)
        return InvalidArgument("plugin 'berth-frag': typical_coverage_percent must be an integer in 1..100, not '" +
                               value + "'");
    } else if (key == "lookahead") {
      if (value != "true" && value != "false")
        return InvalidArgument("plugin 'berth-frag': lookahead must be true or false, not '" + value + "'");
      o.lookahead = value == "true";
    } else if (key == "cpu_weight") {
      if (!ParseDouble(value, o.cpu_weight).ok() || !(o.cpu_weight >= 0) || !std::isfinite(o.cpu_weight))
        return InvalidArgument("plugin 'berth-frag': cpu_weight must be a number >= 0, not '" + value + "'");
    } else if (key != "weight") {
      return InvalidArgument("plugin 'berth-frag': unknown arg '" + key + "'");
    }
  }
  return o;
}

}  // namespace

Status RegisterFragPlugins(framework::PluginRegistry& r) {
  framework::PluginRegistry::ContextFactory factory =
      [](const framework::PluginArgs& args,
         const framework::PluginContext& ctx) -> StatusOr<std::unique_ptr<framework::Plugin>> {
    if (ctx.cluster == nullptr || ctx.workload.empty())
      return FailedPrecondition(
          "plugin 'berth-frag' needs the workload's typical pods, but this driver supplies no workload up front");
    int64_t coverage = 95;
    BERTH_ASSIGN_OR_RETURN(frag::WasteModelOptions options, ParseOptions(args, coverage));
    const fgd::TypicalPods typical = fgd::ComputeTypicalPods(ctx.workload, static_cast<int>(coverage));
    return std::unique_ptr<framework::Plugin>(
        std::make_unique<FragScore>(frag::WasteModel(typical, ctx.workload, *ctx.cluster, options)));
  };
  return r.Register(std::string(FragScore::kName), std::move(factory));
}

}  // namespace berth::plugins
