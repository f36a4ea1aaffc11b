// Heterogeneity-aware score plugins, bound to a throughput model:
//   hetero-speed  the node whose accelerator type runs the job's class fastest
//                 (the job finishes soonest: its remaining work is the same
//                 wherever it goes, so the fastest type ends it first);
//   hetero-cost   the lowest cost per unit of work: price_per_hour / speed.
// The class is JobSpec::job_class with the job's GPU count as the scale. A
// class the model has never seen is ranked by the spec-based relative speed.
// Scores are min-max normalized to 0..100 over the feasible nodes.
//
// The policies of the same names (RegisterHeteroPolicies) put these scores
// in front of best fit: FIFO order without head-of-line blocking, the fit
// filter, the score at weight 100 (so the accelerator type decides) plus best
// fit at weight 1 (which breaks ties within a type), gang permit. A profile
// naming either plugin needs them registered with a model first:
//
//   RegisterHeteroPolicies(policies);
//   if (UsesHeteroPlugins(profile)) {
//     auto model = LoadThroughputModel("data/accelerators.yaml", "");  // specs only
//     RegisterHeteroPlugins(plugins, *model);   // model: shared, immutable
//   }
#pragma once

#include <memory>
#include <string>

#include "berth/framework/registry.h"
#include "berth/hetero/throughput.h"

namespace berth::hetero {

Status RegisterHeteroPlugins(framework::PluginRegistry& registry, std::shared_ptr<const ThroughputModel> model);
// Registers the policies `hetero-speed` and `hetero-cost` (above).
Status RegisterHeteroPolicies(framework::PolicyRegistry& registry);
// Whether the profile names hetero-speed or hetero-cost at any point.
bool UsesHeteroPlugins(const framework::Profile& profile);
// The model the plugins read: the catalog's specs, fitted to Gavel's
// measured throughput table when `throughputs` names one ("" = specs only).
// Errors name the file.
StatusOr<std::shared_ptr<const ThroughputModel>> LoadThroughputModel(const std::string& catalog,
                                                                     const std::string& throughputs);

}  // namespace berth::hetero
