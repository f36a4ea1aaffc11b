// The queue tree of the Kubernetes scheduler and what it charges: the tree
// from Queue objects (berth.dev/v1alpha1, written as a queue file and read by
// the same parser) or the --queues file, and, when the tree counts
// H100-equivalents (`unit: normalized`) or names a reference, the speeds that
// convert a pod's GPUs on the type it lands on (hetero::SpeedsForTree over
// --catalog and --throughputs), as in `berth simulate` and `berth serve`.
//
//   auto tree = TreeFromQueueObjects(objects, file_or_null, cluster);
//   scheduler::SchedulerOptions so;
//   Status s = SetQueueCharging(*tree, catalog, throughputs, cluster, so);
//
// Queue objects take `unit` and `reference` from any object that sets them
// (spec.unit, spec.reference; they must agree), else from the queue file's
// header when there is one. Errors name the Queue object and field.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "berth/cluster/cluster.h"
#include "berth/common/status.h"
#include "berth/scheduler/scheduler.h"
#include "berth/tenancy/queue_tree.h"
#include "berth/tenancy/queue_yaml.h"

namespace berth::kube {

// Queue name -> the object's spec. `file` (may be null) gives the defaults of
// unit and reference.
StatusOr<std::shared_ptr<const tenancy::QueueTree>> TreeFromQueueObjects(
    const std::map<std::string, nlohmann::json>& specs, const tenancy::QueueFile* file, const cluster::Cluster& c);

// Sets so.queues = tree and, for a tree that needs them, so.speeds. Errors: the
// catalog or the throughput table cannot be read, or a GPU type of the
// cluster is not in the catalog.
Status SetQueueCharging(std::shared_ptr<const tenancy::QueueTree> tree, const std::string& catalog,
                        const std::string& throughputs, const cluster::Cluster& c, scheduler::SchedulerOptions& so);

}  // namespace berth::kube
