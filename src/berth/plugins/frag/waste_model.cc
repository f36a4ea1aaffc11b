// The expected-waste measure of the berth-frag policy.
#include "berth/plugins/frag/waste_model.h"

#include <algorithm>

namespace berth::plugins::frag {

double CpuPerGpuMilli(const framework::WorkloadFacts& facts) {
  return facts.gpu_task_milli > 0 ? facts.gpu_task_cpu / facts.gpu_task_milli : 0;
}

double CpuPerGpuMilli(std::span<const job::JobSpec> workload) {
  return CpuPerGpuMilli(framework::WorkloadFacts::Of(workload));
}

WasteModel::WasteModel(const fgd::TypicalPods& typical, std::span<const job::JobSpec> workload,
                       const cluster::Cluster& cluster, WasteModelOptions options)
    : WasteModel(typical, CpuPerGpuMilli(workload), cluster, options) {}

WasteModel::WasteModel(const fgd::TypicalPods& typical, double kappa, const cluster::Cluster& cluster,
                       WasteModelOptions options)
    : kappa_(kappa), options_(options) {
  double single_weight = 0;
  for (const auto& p : typical.pods) {
    if (p.shape.gpus == 0) continue;
    Pod pod;
    pod.cpu = p.shape.cpu_milli;
    pod.milli = std::clamp<MilliGpu>(p.shape.milli_per_gpu, 1, kMilliPerGpu);
    pod.gpus = p.shape.gpus;
    pod.weight = p.weight;
    const cluster::Cluster::TypeSetParse parsed = cluster.ParseTypeSet(p.shape.gpu_spec);
    pod.any_type = parsed.set.empty() && !parsed.unknown;
    pod.types = parsed.set;
    if (pod.gpus == 1) single_weight += pod.weight;
    pods_.push_back(pod);
  }

  // R per GPU type, by increasing free milli (R(f) reads only smaller f).
  const size_t types = std::max<size_t>(1, cluster.gpu_types().size());
  gpu_waste_.assign(types, std::vector<double>(kMilliPerGpu + 1, 0.0));
  for (size_t t = 0; t < types; ++t) {
    const GpuTypeId type(static_cast<int16_t>(t));
    std::vector<double>& r = gpu_waste_[t];
    for (MilliGpu f = 1; f <= kMilliPerGpu; ++f) {
      if (single_weight <= 0) {
        r[f] = f;
        continue;
      }
      double sum = 0;
      for (const Pod& p : pods_) {
        if (p.gpus != 1) continue;
        const bool fits = p.Uses(type) && p.milli <= f;
        sum += p.weight * (fits ? r[f - p.milli] : static_cast<double>(f));
      }
      r[f] = sum / single_weight;
    }
  }
}

double WasteModel::GpuWaste(GpuTypeId type, MilliGpu free) const {
  if (!type.valid() || static_cast<size_t>(type.value()) >= gpu_waste_.size()) return free;
  return gpu_waste_[type.value()][std::clamp<MilliGpu>(free, 0, kMilliPerGpu)];
}

double WasteModel::Lookahead(std::span<const MilliGpu> gpu_free, MilliCpu cpu_free, GpuTypeId type) const {
  int64_t total = 0;
  for (MilliGpu g : gpu_free) total += g;
  if (total == 0) return 0;
  const double total_d = static_cast<double>(total);
  const std::vector<double>* r =
      type.valid() && static_cast<size_t>(type.value()) < gpu_waste_.size() ? &gpu_waste_[type.value()] : nullptr;
  double waste = 0;
  for (const Pod& p : pods_) {
    if (cpu_free < p.cpu || !p.Uses(type) || r == nullptr) {
      waste += p.weight * total_d;
      continue;
    }
    if (p.gpus == 1) {
      double l = 0;
      for (MilliGpu g : gpu_free) {
        if (g < p.milli) l += g;
        else if (options_.lookahead) l += (*r)[g - p.milli];
      }
      waste += p.weight * l;
      continue;
    }
    int32_t fitting = 0;
    int64_t below = 0;
    for (MilliGpu g : gpu_free) {
      if (g >= p.milli) ++fitting;
      else below += g;
    }
    waste += p.weight * (fitting >= p.gpus ? static_cast<double>(below) : total_d);
  }
  return waste;
}

double WasteModel::CpuStranded(std::span<const MilliGpu> gpu_free, MilliCpu cpu_free) const {
  if (kappa_ <= 0) return 0;
  int64_t total = 0;
  for (MilliGpu g : gpu_free) total += g;
  return std::max(0.0, static_cast<double>(total) - static_cast<double>(cpu_free) / kappa_);
}

double WasteModel::NodeWaste(std::span<const MilliGpu> gpu_free, MilliCpu cpu_free, GpuTypeId type) const {
  double w = Lookahead(gpu_free, cpu_free, type);
  if (options_.cpu_weight != 0) w += options_.cpu_weight * CpuStranded(gpu_free, cpu_free);
  return w;
}

double WasteModel::NodeWaste(const state::ClusterState& state, NodeId n) const {
  const cluster::Node& node = state.cluster().node(n);
  return NodeWaste({state.gpu_free_array(n), static_cast<size_t>(node.gpu_count)}, state.free_cpu(n),
                   node.gpu_type);
}

}  // namespace berth::plugins::frag
