// FGD's fragmentation measure (Weng et al., ATC'23), as the original simulator
// computes it (pkg/utils/frag.go there; ../shared/docs/FGD-PROTOCOL.md here).
//
// For a node with free milli-GPU g_i per GPU (total G), CPU left c and GPU
// type m, each typical pod t (weight w_t) falls in one category:
//   CPU-only t:            xl (c >= t.cpu) or xr (CPU short)
//   t's spec excludes m:   no_access
//   otherwise, with "GPU fits" = at least t.count GPUs have g_i >= t.milli:
//                          q3 (fits, CPU fits), q4 (fits, CPU short),
//                          q2 (no fit, CPU fits), q1 (neither).
// Amounts: for q3, w_t * (sum of the g_i below t.milli) goes to q2 and the rest
// of w_t * G to q3; every other category gets w_t * G. The node's
// fragmentation F(n) is the sum of every category but q3 (xl included: a
// CPU-only pod leaves the GPUs idle). Cluster: frag = sum of F(n), idle = sum
// of G, rate = frag / idle, share = frag / capacity.
//
// Worked example: one typical pod (1 GPU x 500 milli, 4 cores, weight 1) on an
// 8-GPU node with g = [300, 1000 x 7], 64 cores free: it fits (q3), and the
// 300 milli below 500 are fragment: F = 300.
//
// Every amount is accumulated in the original's order (per category, in
// typical-pod order, then the categories summed in index order), so that
// F(n) is bit-identical to the original's and score truncation agrees.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/job/job.h"
#include "berth/plugins/fgd/typical_pods.h"
#include "berth/state/cluster_state.h"

namespace berth::plugins::fgd {

// Category indexes, in the original's order.
enum FragCategory : int { kQ1LackBoth = 0, kQ2LackGpu, kQ3Satisfied, kQ4LackCpu, kXlSatisfied, kXrLackCpu, kNoAccess };
inline constexpr int kNumFragCategories = 7;
using FragAmounts = std::array<double, kNumFragCategories>;

// The typical pods resolved against a cluster's GPU types, for the hot path.
// Immutable; cheap to evaluate (one pass over the GPUs per typical pod).
class FragModel {
 public:
  FragModel(const TypicalPods& typical, const cluster::Cluster& cluster);

  // F(n) for a node whose GPUs have `gpu_free[i]` milli free, with `cpu_free`
  // CPU left and GPU type `type` (invalid for a CPU-only node).
  double NodeFrag(std::span<const MilliGpu> gpu_free, MilliCpu cpu_free, GpuTypeId type) const;
  // Every category's amount (q3 included), for analysis and tests.
  FragAmounts NodeAmounts(std::span<const MilliGpu> gpu_free, MilliCpu cpu_free, GpuTypeId type) const;
  // F(n) of node n of `state` as it stands.
  double NodeFrag(const state::ClusterState& state, NodeId n) const;

  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    MilliCpu cpu = 0;
    MilliGpu milli = 0;    // 0: CPU-only
    int32_t need = 0;      // GPUs that must have >= milli free (at least 1 for GPU pods)
    double weight = 0;
    bool any_type = true;  // the spec names no type
    cluster::GpuTypeSet types;  // accepted types when !any_type (empty: none)
  };
  std::vector<Entry> entries_;
};

struct ClusterFragmentation {
  double frag_milli = 0;       // sum of F(n) over the nodes that are up
  int64_t idle_milli = 0;      // free milli-GPU on those nodes
  int64_t capacity_milli = 0;  // every GPU of the cluster
  double rate() const { return idle_milli > 0 ? frag_milli / static_cast<double>(idle_milli) : 0; }
  double share() const { return capacity_milli > 0 ? frag_milli / static_cast<double>(capacity_milli) : 0; }
};

ClusterFragmentation MeasureCluster(const FragModel& model, const state::ClusterState& state);

// For drivers at the end of a run: the typical pods of `workload` (the trace as
// read), then the cluster's fragmentation under them.
ClusterFragmentation MeasureFragmentation(std::span<const job::JobSpec> workload, const state::ClusterState& state,
                                          int coverage_percent = 95);

}  // namespace berth::plugins::fgd
