// The "gang" permit plugin: a job runs only if every task group has at least
// its gang minimum placed; otherwise the whole tentative placement is undone.
#include "berth/plugins/builtin.h"
#include "berth/plugins/score/score_util.h"

namespace berth::plugins {
namespace {

class GangPermit final : public framework::PermitPlugin {
 public:
  static constexpr std::string_view kName = "gang";
  std::string_view Name() const override { return kName; }
  framework::Verdict Permit(const job::JobSpec& job, std::span<const int32_t> placed) override {
    for (size_t g = 0; g < job.groups.size(); ++g) {
      if (placed[g] < job.groups[g].gang_min()) {
        return framework::Verdict::Unschedulable(
            std::string(kName), "group '" + job.groups[g].name + "' has " + std::to_string(placed[g]) + " of " +
                                    std::to_string(job.groups[g].gang_min()) + " required members");
      }
    }
    return framework::Verdict::Success();
  }
};

}  // namespace

Status RegisterGangPlugins(framework::PluginRegistry& r) {
  return r.Register(std::string(GangPermit::kName), SimpleFactory<GangPermit>());
}

}  // namespace berth::plugins
