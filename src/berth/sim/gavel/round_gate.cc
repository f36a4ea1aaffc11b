// Registration of the Gavel driver's round gate.
#include "berth/sim/gavel/round_gate.h"

#include <memory>

namespace berth::sim::gavel {

Status RegisterRoundGate(framework::PluginRegistry& r) {
  return r.Register(std::string(RoundGate::kName),
                    [](const framework::PluginArgs&) -> StatusOr<std::unique_ptr<framework::Plugin>> {
                      return std::unique_ptr<framework::Plugin>(std::make_unique<RoundGate>());
                    });
}

}  // namespace berth::sim::gavel
