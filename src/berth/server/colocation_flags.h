// The co-location set-up of `berth serve` (docs/service.md, "Reserved nodes
// for services"): the services' reserved nodes, the mode and the overcommit
// ratios, turned into the args of the colocation filter
// (plugins/colocation/colocation.h) that the daemon adds to its policy's
// profile, as the simulator's services file does (docs/services.md).
//
//   ServeColocation c{.reserved = "node-0,node-1", .overcommit = 0.5};
//   StatusOr<framework::PluginArgs> a = ColocationArgs(c, cluster, &queue_file);
//   // {reserved: "0,1", mode: colocate, overcommit: "0.500", spill: true, queue.NAME: ...}
#pragma once

#include <string>

#include "berth/cluster/cluster.h"
#include "berth/common/status.h"
#include "berth/framework/plugin.h"
#include "berth/tenancy/queue_yaml.h"

namespace berth::server {

struct ServeColocation {
  std::string reserved;           // --reserved-nodes: node names, ids or id ranges ("node-0,node-1", "0-11,14")
  std::string mode = "colocate";  // --colocation-mode: colocate | static
  double overcommit = 1.0;        // --overcommit: best effort's share of each reserved node's GPUs
  bool spill = true;              // --colocation-spill: replicas a fragmented reservation cannot hold
};

// Checks the mode and the ratio (the flags that need no cluster); errors
// name the flag.
Status ValidateColocation(const ServeColocation& c);

// The colocation filter's args: empty when no node is reserved. The queue
// file's per-queue `overcommit` ratios become queue.NAME args. Errors name
// the flag (or the queue file's queue).
StatusOr<framework::PluginArgs> ColocationArgs(const ServeColocation& c, const cluster::Cluster& cluster,
                                               const tenancy::QueueFile* queues);

}  // namespace berth::server
