// The queue ledger's normalized units from the throughput model: a GPU of
// type t running job j is worth speed(class of j, t) / speed(class, reference)
// reference GPUs (Normalizer::Factor: the measured table where the class is
// known, the spec-based estimate otherwise). The class is JobSpec::job_class
// at a scale of the job's GPU count (as hetero-speed ranks types); a job
// without a class, and the capacity of a type, use the spec-based estimate.
//
//   auto model = LoadThroughputModel("data/accelerators.yaml", throughputs);
//   auto speeds = MakeLedgerSpeeds(*model, "H100", cluster);
//   SchedulerOptions o;  o.queues = tree;  o.speeds = *speeds;
//
// Errors: the reference, or a GPU type of the cluster, is not in the catalog.
// The factors are cached per (class, scale); the cache is guarded, so the
// model may be read from any thread.
#pragma once

#include <memory>
#include <string>

#include "berth/cluster/cluster.h"
#include "berth/common/status.h"
#include "berth/hetero/throughput.h"
#include "berth/tenancy/queue_tree.h"
#include "berth/tenancy/units.h"

namespace berth::hetero {

StatusOr<std::shared_ptr<const tenancy::SpeedModel>> MakeLedgerSpeeds(std::shared_ptr<const ThroughputModel> model,
                                                                     const std::string& reference,
                                                                     const cluster::Cluster& cluster);

// The speeds a tree needs: null when it counts GPUs and names no reference;
// else the model of
// `catalog` fitted to `throughputs` ("" = specs only) against the tree's
// reference. Errors name the file or the type.
StatusOr<std::shared_ptr<const tenancy::SpeedModel>> SpeedsForTree(const tenancy::QueueTree& tree,
                                                                  const std::string& catalog,
                                                                  const std::string& throughputs,
                                                                  const cluster::Cluster& cluster);

// Budgets in money: adds the catalog's price_per_hour (by name and alias) for
// every GPU type the tree's `prices` do not name. Nothing to do (and no file
// read) when no queue has a budget in money.
Status AddCatalogPrices(tenancy::QueueTree& tree, const std::string& catalog);

}  // namespace berth::hetero
