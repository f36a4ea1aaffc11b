// The list of built-in plugins and the named policies built from them.
#include "berth/plugins/builtin.h"

namespace berth::plugins {

using framework::PluginRef;
using framework::Profile;

Status RegisterBuiltinPlugins(framework::PluginRegistry& r) {
  BERTH_RETURN_IF_ERROR(RegisterQueueSortPlugins(r));
  BERTH_RETURN_IF_ERROR(RegisterFilterPlugins(r));
  BERTH_RETURN_IF_ERROR(RegisterScorePlugins(r));
  BERTH_RETURN_IF_ERROR(RegisterGangPlugins(r));
  BERTH_RETURN_IF_ERROR(RegisterCandidatePlugins(r));
  return Status::Ok();
}

namespace {
// A placement policy: FIFO order, the fit filter, one score plugin, gang permit.
Profile Placement(const std::string& score, std::string queue_sort = "fifo") {
  Profile p;
  p.queue_sort = std::move(queue_sort);
  p.filter = {PluginRef{"fit"}};
  if (!score.empty()) p.score = {PluginRef{score}};
  p.permit = {PluginRef{"gang"}};
  return p;
}
}  // namespace

Status RegisterBuiltinPolicies(framework::PolicyRegistry& r) {
  struct Entry {
    const char* name;
    const char* score;
    const char* queue_sort;
    bool hol;
    const char* description;
  };
  static const Entry kEntries[] = {
      {"firstfit", "firstfit", "fifo", false, "first feasible node in rank order"},
      {"bestfit", "bestfit", "fifo", false, "least CPU+GPU left after placement (FGD paper's BestFit)"},
      {"fifo", "bestfit", "fifo", true, "strict first-come first-served order, best-fit placement"},
      {"sjf", "bestfit", "sjf", false, "shortest job first (known or declared runtime), best-fit placement"},
      {"priority", "bestfit", "priority", false, "highest priority first, best-fit placement"},
  };
  for (const auto& e : kEntries) {
    Profile p = Placement(e.score, e.queue_sort);
    p.head_of_line_blocking = e.hol;
    BERTH_RETURN_IF_ERROR(r.Register(e.name, std::move(p), e.description));
  }
  Profile binpack = Placement("binpack");
  binpack.candidates = {PluginRef{"binpack"}};
  BERTH_RETURN_IF_ERROR(r.Register("binpack", std::move(binpack),
                                   "fewest free GPUs left on the node, from the state's indexes (no full scan)"));
  return Status::Ok();
}

}  // namespace berth::plugins
