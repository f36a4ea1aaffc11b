// Registration of the Gavel driver's round gate.
#include "berth/sim/gavel/round_gate.h"

#include <algorithm>
#include <memory>

namespace berth::sim::gavel {

void RoundGate::Candidates(const framework::CycleContext& ctx, const framework::TaskRequest& req,
                           std::vector<NodeId>& out) const {
  const int16_t type = type_[ctx.job.id.value()];
  if (type < 0) return;
  const GpuTypeId t(type);
  const int max_k = ctx.state.max_full_free(t);
  const size_t start = out.size();
  for (int k = std::max(1, req.gpus); k <= max_k && out.size() - start < kMaxCandidates; ++k) {
    const DenseBitset& nodes = ctx.state.nodes_with_full_free(t, k);
    for (int32_t n = nodes.FindNext(0); n >= 0 && out.size() - start < kMaxCandidates; n = nodes.FindNext(n + 1))
      out.push_back(NodeId(n));
  }
}

Status RegisterRoundGate(framework::PluginRegistry& r) {
  return r.Register(std::string(RoundGate::kName),
                    [](const framework::PluginArgs&) -> StatusOr<std::unique_ptr<framework::Plugin>> {
                      return std::unique_ptr<framework::Plugin>(std::make_unique<RoundGate>());
                    });
}

}  // namespace berth::sim::gavel
