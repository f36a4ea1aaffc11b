// The "entitle" filter and score (entitle.h).
#include "berth/plugins/entitle/entitle.h"

#include <algorithm>
#include <memory>

#include "berth/framework/plugin.h"
#include "berth/tenancy/ledger.h"

namespace berth::plugins {
namespace {

class Entitle final : public framework::FilterPlugin, public framework::ScorePlugin {
 public:
  std::string_view Name() const override { return kEntitleName; }
  std::string_view FailReason() const override { return "GPU type beyond the queue's entitlement, others short there"; }
  void Counters(framework::PluginCounters& out) const override {
    out.emplace_back(std::string(kEntitleName) + ".filtered", static_cast<double>(filtered_));
  }

  // Without a reachable entitlement for the task's queue both the filter and
  // the score are neutral, and the task is decided by best fit alone.
  static bool Applies(const framework::CycleContext& ctx) {
    return ctx.ledger != nullptr && ctx.ledger->reachable_entitlement() && ctx.queue >= 0;
  }
  bool PassesEveryNode(const framework::CycleContext& ctx, const framework::TaskRequest& req) const override {
    return !Applies(ctx) || req.gpus == 0;
  }
  bool FiltersByType(const framework::CycleContext&, const framework::TaskRequest&) const override { return true; }
  bool Neutral(const framework::CycleContext& ctx, const framework::TaskRequest&) const override {
    return !Applies(ctx);
  }
  // The score reads only the node's GPU type, and Normalize is min-max.
  bool ScoresByType(const framework::CycleContext&, const framework::TaskRequest&) const override { return true; }
  bool NormalizesByRange() const override { return true; }

  bool Filter(const framework::CycleContext& ctx, const framework::TaskRequest& req, NodeId node) const override {
    const tenancy::Ledger* ledger = ctx.ledger;
    if (!Applies(ctx) || req.gpus == 0) return true;
    const GpuTypeId type = ctx.state.cluster().node(node).gpu_type;
    if (!type.valid() || type.value() >= ledger->tree().num_types()) return true;
    const int64_t charge = ledger->Amount(ctx.job, type, req.total_milli());
    const double mine = static_cast<double>(ledger->usage(ctx.queue, type.value()) + charge);
    if (mine <= ledger->entitled_on(ctx.queue, type) + 0.5) return true;
    const tenancy::QueueTree& tree = ledger->tree();
    for (int32_t q = 0; q < tree.size(); ++q) {
      if (q == ctx.queue || !tree.node(q).is_leaf()) continue;
      if (static_cast<double>(ledger->usage(q, type.value())) + 0.5 < ledger->entitled_on(q, type)) {
        ++filtered_;
        return false;
      }
    }
    return true;
  }

  int64_t Score(const framework::CycleContext& ctx, const framework::TaskRequest&, NodeId node) const override {
    const tenancy::Ledger* ledger = ctx.ledger;
    if (!Applies(ctx)) return 0;
    const GpuTypeId type = ctx.state.cluster().node(node).gpu_type;
    if (!type.valid() || type.value() >= ledger->tree().num_types()) return 0;
    return static_cast<int64_t>(ledger->entitled_on(ctx.queue, type)) - ledger->usage(ctx.queue, type.value());
  }
  void Normalize(const framework::CycleContext&, const framework::TaskRequest&, std::span<const NodeId>,
                 std::span<int64_t> scores) const override {
    if (scores.empty()) return;
    auto [lo, hi] = std::minmax_element(scores.begin(), scores.end());
    const int64_t min = *lo, max = *hi;
    for (auto& s : scores) s = max == min ? 0 : (s - min) * 100 / (max - min);
  }

 private:
  mutable int64_t filtered_ = 0;
};

}  // namespace

Status RegisterEntitlePlugin(framework::PluginRegistry& r) {
  return r.Register(std::string(kEntitleName),
                    [](const framework::PluginArgs&) -> StatusOr<std::unique_ptr<framework::Plugin>> {
                      return std::unique_ptr<framework::Plugin>(std::make_unique<Entitle>());
                    });
}

}  // namespace berth::plugins
