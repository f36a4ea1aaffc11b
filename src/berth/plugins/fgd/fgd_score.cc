// Score plugin "fgd": Fragmentation Gradient Descent (Weng et al., ATC'23), as
// the original simulator scores (pkg/simulator/plugin/fgd_score.go there).
//
// The node that grows the cluster's fragmentation least wins. With F the
// measure of fragmentation.h, n the node now and n' the node after placing:
//   score = trunc(100 * sigmoid((F(n) - F(n')) / 1000))   (50: no change)
// A GPU-sharing task is tried on every GPU i with enough free milli (n_i: CPU
// and that GPU reduced); the node scores the best s_i, and the GPU that won
// (lowest index on ties) is the one SelectGpus returns. Other tasks: n' takes
// the CPU and `gpus` GPUs, chosen in ascending free milli (stable by index);
// their GPUs are the lowest-index free ones (the scheduler's default).
//
// Built from the workload the driver supplies (PluginContext::workload): its
// typical pods define F. Args: "typical_coverage_percent" (default 95).
//
// Speed: F(n) only changes when node n does, and a task's score on n depends
// only on n's state and the task's shape (CPU, milli, GPU count), so both are
// cached per node and stamped with ClusterState::node_version(n). GPUs with
// equal free milli give equal scores, so each free value is tried once.
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
#include "berth/plugins/fgd/fragmentation.h"

namespace berth::plugins {
namespace {

using framework::CycleContext;
using framework::TaskRequest;

// trunc(100 * sigmoid(delta / 1000)), in the original's operation order.
int32_t SigmoidScore(double delta) {
  const double x = delta / 1000.0;
  const double sigmoid = 1.0 / (1.0 + std::exp(-x));
  return static_cast<int32_t>(sigmoid * 100.0);
}

class FgdScore final : public framework::ScorePlugin {
 public:
  static constexpr std::string_view kName = "fgd";
  explicit FgdScore(fgd::FragModel model) : model_(std::move(model)) {}
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
    int32_t score = 0;
    int32_t gpu = -1;  // sharing tasks: the GPU that won
  };
  struct Slot {
    uint64_t version = kNever;
    Outcome outcome;
  };
  using ShapeKey = std::tuple<MilliCpu, MilliGpu, int32_t>;

  Outcome Evaluate(const state::ClusterState& state, const TaskRequest& req, NodeId n) const;
  Outcome Compute(const state::ClusterState& state, const TaskRequest& req, NodeId n) const;
  double NodeFrag(const state::ClusterState& state, NodeId n) const;
  std::vector<Slot>& SlotsFor(const TaskRequest& req) const;

  fgd::FragModel model_;

  // Caches, valid for the state last seen (another ClusterState resets them).
  // An entry holds for the node version it was computed at.
  mutable const state::ClusterState* state_ = nullptr;
  mutable std::vector<uint64_t> frag_version_;
  mutable std::vector<double> frag_;
  mutable std::map<ShapeKey, int32_t> shape_index_;
  mutable std::vector<std::vector<Slot>> slots_;  // [shape][node]
  mutable ShapeKey last_key_{-1, -1, -1};
  mutable int32_t last_shape_ = -1;
};

std::vector<FgdScore::Slot>& FgdScore::SlotsFor(const TaskRequest& req) const {
  const ShapeKey key{req.cpu_milli, req.gpus == 0 ? 0 : req.milli_per_gpu, req.gpus};
  if (key != last_key_ || last_shape_ < 0) {
    auto [it, inserted] = shape_index_.emplace(key, static_cast<int32_t>(slots_.size()));
    if (inserted) slots_.emplace_back(frag_.size());
    last_key_ = key;
    last_shape_ = it->second;
  }
  return slots_[last_shape_];
}

FgdScore::Outcome FgdScore::Evaluate(const state::ClusterState& state, const TaskRequest& req, NodeId n) const {
  // A task that requests nothing scores the maximum, as in the original.
  if (req.gpus == 0 && req.cpu_milli == 0 && req.memory_mib == 0) return {100, -1};
  if (state_ != &state) {
    state_ = &state;
    const size_t nodes = static_cast<size_t>(state.cluster().num_nodes());
    frag_version_.assign(nodes, kNever);
    frag_.assign(nodes, 0);
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

double FgdScore::NodeFrag(const state::ClusterState& state, NodeId n) const {
  const uint64_t version = state.node_version(n);
  if (frag_version_[n.value()] != version) {
    frag_[n.value()] = model_.NodeFrag(state, n);
    frag_version_[n.value()] = version;
  }
  return frag_[n.value()];
}

FgdScore::Outcome FgdScore::Compute(const state::ClusterState& state, const TaskRequest& req, NodeId n) const {
  const GpuTypeId type = state.cluster().node(n).gpu_type;
  const DeltaOutcome o = ScoreByDelta(
      state, req, n, NodeFrag(state, n),
      [&](std::span<const MilliGpu> free, MilliCpu cpu) { return model_.NodeFrag(free, cpu, type); },
      [](double drop) -> int64_t { return SigmoidScore(drop); });
  return {static_cast<int32_t>(o.score), o.gpu};
}

}  // namespace

Status RegisterFgdPlugins(framework::PluginRegistry& r) {
  framework::PluginRegistry::ContextFactory factory =
      [](const framework::PluginArgs& args,
         const framework::PluginContext& ctx) -> StatusOr<std::unique_ptr<framework::Plugin>> {
    if (ctx.cluster == nullptr || ctx.workload.empty())
      return FailedPrecondition(
          "plugin 'fgd' needs the workload's typical pods, but this driver supplies no workload up front");
    int64_t coverage = 95;
    if (auto it = args.find("typical_coverage_percent"); it != args.end()) {
      if (!ParseInt64(it->second, coverage).ok() || coverage < 1 || coverage > 100)
        return InvalidArgument("plugin 'fgd': typical_coverage_percent must be an integer in 1..100, not '" +
                               it->second + "'");
    }
    fgd::TypicalPods typical = fgd::ComputeTypicalPods(ctx.workload, static_cast<int>(coverage));
    return std::unique_ptr<framework::Plugin>(std::make_unique<FgdScore>(fgd::FragModel(typical, *ctx.cluster)));
  };
  return r.Register(std::string(FgdScore::kName), std::move(factory));
}

}  // namespace berth::plugins
