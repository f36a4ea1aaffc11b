// Registration of the plugins for reservations for blocked jobs and backfill ahead of them.
#include "berth/plugins/backfill/register.h"

#include <memory>

#include "berth/plugins/backfill/backfill.h"
#include "berth/plugins/builtin.h"

namespace berth::plugins {

using framework::PluginRef;
using framework::Profile;

Status RegisterBackfillPlugins(framework::PluginRegistry& registry) {
  return registry.Register(std::string(backfill::BackfillPlugin::kName),
                           [](const framework::PluginArgs& args) -> StatusOr<std::unique_ptr<framework::Plugin>> {
                             BERTH_ASSIGN_OR_RETURN(backfill::BackfillOptions options,
                                                    backfill::BackfillOptions::FromArgs(args));
                             return std::unique_ptr<framework::Plugin>(
                                 std::make_unique<backfill::BackfillPlugin>(options));
                           });
}

Status RegisterBackfillPolicies(framework::PolicyRegistry& registry) {
  Profile p;
  p.queue_sort = "fifo";
  p.admit = {PluginRef{"backfill", {}}};
  p.filter = {PluginRef{"fit", {}}, PluginRef{"backfill", {}}};
  p.score = {PluginRef{"bestfit", {}}};
  p.permit = {PluginRef{"gang", {}}};
  return registry.Register("backfill", std::move(p),
                           "FIFO with EASY backfill: a reservation for the first job that does not fit; later jobs "
                           "start only if predicted to end before it or on GPUs it does not need");
}

}  // namespace berth::plugins
