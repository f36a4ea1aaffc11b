// How placement changes a job's runtime in the replay: a gang whose tasks span
// several nodes communicates over the slowest link level it spans, and its
// runtime stretches with the communication share of its step time times the
// bandwidth lost against NVLink:
//
//   stretch = 1 + f x (B_nvlink / B_level - 1)
//
// f = `comm_fraction`: the share of a step spent communicating when the whole
// gang is inside one NVLink domain (0 turns the model off: the trace's recorded
// runtimes are used as they are, which is the default). B_level is the
// bandwidth per GPU of the narrowest domain that holds every task, divided by
// its oversubscription: the cluster's own figure (cluster YAML `levels:`) when
// it gives one, else the defaults below (Gbit/s per GPU: NVLink 3,600, leaf
// 400, spine 200, cluster 100, region 25). A job whose tasks all sit on one
// node is not stretched. Example: f = 0.2, a gang spanning two leaves of one
// spine: 1 + 0.2 x (3600 / 200 - 1) = 4.4x.
#pragma once

#include <span>

#include "berth/cluster/cluster.h"
#include "berth/framework/plugin.h"

namespace berth::sim {

struct RuntimeModel {
  double comm_fraction = 0;
  std::array<double, cluster::kNumLevels> default_gbps = {25, 100, 200, 400, 3600};  // region..nvlink

  Status Validate() const;
  // The narrowest level whose one domain holds every placement; nullopt when
  // all tasks share one node (or there are none).
  static std::optional<cluster::Level> SpannedLevel(const cluster::Cluster& c,
                                                    std::span<const framework::TaskPlacement> placements);
  // The runtime multiplier (>= 1) for a job placed so.
  double Stretch(const cluster::Cluster& c, std::span<const framework::TaskPlacement> placements) const;
};

}  // namespace berth::sim
