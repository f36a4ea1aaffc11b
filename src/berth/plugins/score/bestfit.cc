// Score plugins "bestfit" (the FGD paper's BestFit: the node left with the
// least CPU and GPU after placement wins) and "firstfit" (all equal: the
// lowest-ranked feasible node wins).
//
// BestFit, as the original simulator computes it:
//   raw = trunc(100 * (1 - [0.5 (cpu_free - cpu_req) / 128000 + 0.5 (gpu_free - gpu_req) / 8000]))
// with milli units, then min-max normalized over the feasible nodes.
//
// Both bound their scores for the index search: BestFit's raw score only falls
// as free CPU or GPU grows (every floating-point step is monotone), so a tier's
// bound is the score with the least CPU and GPU the tier's nodes may hold;
// FirstFit's is 0. Min-max keeps the best node (only the highest raw score
// normalizes to 100). BestFit's floor over a tier (ScoreFloor) is the score
// with the most CPU and GPU its nodes may hold.
#include <algorithm>
#include <cmath>

#include "berth/plugins/builtin.h"
#include "berth/plugins/score/score_util.h"

namespace berth::plugins {
namespace {

// The raw score of a node left with `cpu_left` and `gpu_left` (milli).
int64_t BestFitScore(int64_t cpu_left_milli, int64_t gpu_left_milli) {
  const double cpu_left = static_cast<double>(cpu_left_milli);
  const double gpu_left = static_cast<double>(gpu_left_milli);
  const double waste = 0.5 * cpu_left / 128000.0 + 0.5 * gpu_left / 8000.0;
  return static_cast<int64_t>(100.0 * (1.0 - waste));
}

class BestFit final : public framework::ScorePlugin {
 public:
  static constexpr std::string_view kName = "bestfit";
  std::string_view Name() const override { return kName; }
  int64_t Score(const framework::CycleContext& ctx, const framework::TaskRequest& req, NodeId n) const override {
    return BestFitScore(ctx.state.free_cpu(n) - req.cpu_milli, ctx.state.node_free_milli(n) - req.total_milli());
  }
  std::optional<int64_t> ScoreBound(const framework::CycleContext&, const framework::TaskRequest& req,
                                    const framework::NodeTier& tier) const override {
    return BestFitScore(std::max<int64_t>(0, tier.cpu_lo - req.cpu_milli), tier.node_free_lo - req.total_milli());
  }
  // The most CPU and GPU the tier's nodes may keep: the lowest score there.
  std::optional<int64_t> ScoreFloor(const framework::CycleContext&, const framework::TaskRequest& req,
                                    const framework::NodeTier& tier) const override {
    return BestFitScore(std::max<int64_t>(0, tier.cpu_hi - req.cpu_milli),
                        std::max<int64_t>(0, tier.node_free_hi - req.total_milli()));
  }
  bool NormalizesByRange() const override { return true; }
  void Normalize(const framework::CycleContext&, const framework::TaskRequest&, std::span<const NodeId>,
                 std::span<int64_t> scores) const override {
    MinMaxNormalize(scores);
  }
};

class FirstFit final : public framework::ScorePlugin {
 public:
  static constexpr std::string_view kName = "firstfit";
  std::string_view Name() const override { return kName; }
  int64_t Score(const framework::CycleContext&, const framework::TaskRequest&, NodeId) const override { return 0; }
  std::optional<int64_t> ScoreBound(const framework::CycleContext&, const framework::TaskRequest&,
                                    const framework::NodeTier&) const override {
    return 0;
  }
};

}  // namespace

Status RegisterBestFitPlugins(framework::PluginRegistry& r) {
  BERTH_RETURN_IF_ERROR(r.Register(std::string(BestFit::kName), SimpleFactory<BestFit>()));
  BERTH_RETURN_IF_ERROR(r.Register(std::string(FirstFit::kName), SimpleFactory<FirstFit>()));
  return Status::Ok();
}

}  // namespace berth::plugins
