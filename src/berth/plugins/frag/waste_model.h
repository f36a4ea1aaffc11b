// The measure behind the "berth-frag" policy: the GPU capacity of a node that
// is expected to end up wasted, W(n) = L(n) + S(n), in milli-GPU.
//
// L(n), look-ahead fragmentation, extends FGD's fragmentation F(n)
// (../fgd/fragmentation.h) from one typical pod to the ones after it. FGD
// counts the GPUs a typical pod fits on as fully usable; here a GPU with f
// milli free that pod t (m_t milli) fits on is worth its expected waste after
// t took its share, R(f - m_t), where R is FGD's view applied recursively:
//   R(0) = 0,  R(f) = sum over single-GPU typical pods t (weights renormalized
//              among them) of  R(f - m_t) if t may use the GPU type and
//              m_t <= f, else f.
// R is a table per GPU type (f = 0..1000). For node n with free milli g_i per
// GPU (total G), CPU left c:
//   L(n) = sum over GPU typical pods t of w_t * l_t(n), where
//   l_t = G                               if t's spec excludes n's type or c < t.cpu
//   l_t = sum_i (g_i >= m_t ? R(g_i - m_t) : g_i)              single-GPU t
//   l_t = (k_t GPUs have >= m_t free) ? sum_{g_i < m_t} g_i : G   k_t-GPU t
// CPU-only typical pods are left out: FGD counts w_t * G for them wherever
// they fit, which shifts every node's delta by the same amount.
//
// S(n), CPU stranding: the workload's GPU tasks request kappa CPU milli per
// milli-GPU on average (sum of CPU over sum of GPU milli); a node whose CPU
// cannot feed its free GPUs at that rate strands the difference:
//   S(n) = max(0, G - c / kappa).
// FGD sees CPU only when a typical pod's request stops fitting (a threshold);
// S gives the gradient before that point, and keeps CPU-only tasks off the
// nodes whose GPUs still need the CPU.
//
// Worked example: one typical pod (1 GPU x 500 milli, 4 cores, weight 1), so
// kappa = 4000 / 500 = 8 and R(f) = f mod 500 (R(700) = 200, R(1000) = 0).
// Node with g = [700, 1000 x 7], 64 cores: L = R(200) + 7 R(500) = 200 (FGD's
// F: 0, the 700 fits a pod), S = max(0, 7700 - 8000) = 0, W = 200. With 40
// cores: S = 7700 - 5000 = 2700, W = 2900.
#pragma once

#include <span>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/job/job.h"
#include "berth/plugins/fgd/typical_pods.h"
#include "berth/state/cluster_state.h"

namespace berth::plugins::frag {

struct WasteModelOptions {
  // false: l_t counts a fitting GPU as 0, as FGD does (R unused).
  bool lookahead = true;
  // Multiplies S(n); 0 leaves CPU to the typical pods' thresholds, as FGD.
  double cpu_weight = 1.0;
};

// Immutable once built; NodeWaste costs one pass over the GPUs per typical pod.
class WasteModel {
 public:
  // `workload`: the tasks kappa is measured on (the trace as read).
  WasteModel(const fgd::TypicalPods& typical, std::span<const job::JobSpec> workload,
             const cluster::Cluster& cluster, WasteModelOptions options = {});
  // The same with kappa given (CpuPerGpuMilli of the workload or of its facts).
  WasteModel(const fgd::TypicalPods& typical, double kappa, const cluster::Cluster& cluster,
             WasteModelOptions options = {});

  // W(n) = L(n) + cpu_weight * S(n) for a node of GPU type `type` (invalid
  // for a CPU-only node) whose GPUs have `gpu_free[i]` milli free and
  // `cpu_free` CPU left.
  double NodeWaste(std::span<const MilliGpu> gpu_free, MilliCpu cpu_free, GpuTypeId type) const;
  double NodeWaste(const state::ClusterState& state, NodeId n) const;

  // The parts, for tests and analysis.
  double Lookahead(std::span<const MilliGpu> gpu_free, MilliCpu cpu_free, GpuTypeId type) const;
  double CpuStranded(std::span<const MilliGpu> gpu_free, MilliCpu cpu_free) const;
  // R(f) of a GPU of type `type`, f in 0..1000.
  double GpuWaste(GpuTypeId type, MilliGpu free) const;
  // CPU milli per milli-GPU (0 when the workload has no GPU tasks: S = 0).
  double kappa() const { return kappa_; }

 private:
  struct Pod {
    MilliCpu cpu = 0;
    MilliGpu milli = 0;
    int32_t gpus = 0;
    double weight = 0;
    bool any_type = true;
    cluster::GpuTypeSet types;
    bool Uses(GpuTypeId t) const { return any_type || types.Contains(t); }
  };
  std::vector<Pod> pods_;                 // GPU typical pods, in typical order
  std::vector<std::vector<double>> gpu_waste_;  // [type][free milli] = R
  double kappa_ = 0;
  WasteModelOptions options_;
};

// kappa of a workload: CPU milli per milli-GPU over its GPU tasks (0 if none).
double CpuPerGpuMilli(std::span<const job::JobSpec> workload);
// The same from the workload's facts (equal on the same jobs).
double CpuPerGpuMilli(const framework::WorkloadFacts& facts);

}  // namespace berth::plugins::frag
