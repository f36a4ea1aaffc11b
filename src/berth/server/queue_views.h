// The ledger's figures of every queue of a tree, as `GET /v1/queues` and the
// per-queue gauges of /metrics show them (read_view.h's QueueViews): per
// queue its parent, weight, guarantee, usage and borrowing over every GPU type
// and per type ("*" first), its dominant share and its budget, in the tree's
// unit (GPUs, or reference GPUs with `unit: normalized`). Built on the
// scheduling thread by `berth serve` and by the Kubernetes scheduler alike.
//
//   QueueViews q = BuildQueueViews(sched.ledger(), cluster, clock.Now());
#pragma once

#include <map>
#include <string>

#include "berth/cluster/cluster.h"
#include "berth/common/quantity.h"
#include "berth/server/read_view.h"
#include "berth/tenancy/ledger.h"

namespace berth::server {

QueueViews BuildQueueViews(const tenancy::Ledger& ledger, const cluster::Cluster& cluster, TimeUs now);

// The body of GET /v1/queues: the items (by queue name, so sorted by it), the
// tree's unit and, with `normalized`, its reference type.
nlohmann::json QueuesBody(std::map<std::string, nlohmann::json> items, const QueueViews& views);

}  // namespace berth::server
