// Heterogeneity-aware score plugins, bound to a throughput model:
//   hetero-speed  the node whose accelerator type runs the job's class fastest
//                 (the job finishes soonest: its remaining work is the same
//                 wherever it goes, so the fastest type ends it first);
//   hetero-cost   the lowest cost per unit of work: price_per_hour / speed.
// The class is JobSpec::job_class with the job's GPU count as the scale. A
// class the model has never seen is ranked by the spec-based relative speed.
// Scores are min-max normalized to 0..100 over the feasible nodes.
//
//   RegisterHeteroPlugins(registry, model);   // model: shared, immutable
//   profile.score = {{"hetero-speed"}, {"bestfit"}};
#pragma once

#include <memory>

#include "berth/framework/registry.h"
#include "berth/hetero/throughput.h"

namespace berth::hetero {

Status RegisterHeteroPlugins(framework::PluginRegistry& registry, std::shared_ptr<const ThroughputModel> model);

}  // namespace berth::hetero
