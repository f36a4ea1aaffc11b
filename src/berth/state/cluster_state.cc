// ClusterState: Apply and the incremental indexes.
#include "berth/state/cluster_state.h"

#include <algorithm>
#include <bit>

#include "berth/common/bits.h"

namespace berth::state {

using cluster::Cluster;
using cluster::kNumLevels;

ClusterState::ClusterState(const Cluster& cluster) : cluster_(&cluster) {
  const int32_t n = cluster.num_nodes();
  gpu_free_.assign(cluster.total_gpus(), kMilliPerGpu);
  gpu_mem_free_.assign(cluster.total_gpus(), 0);
  for (const auto& node : cluster.nodes())
    if (node.gpu_count > 0 && node.gpu_type.valid())
      std::fill_n(gpu_mem_free_.begin() + node.first_gpu, node.gpu_count,
                  cluster.gpu_types()[node.gpu_type.value()].memory_mib);
  up_.assign(n, 1);
  free_cpu_.resize(n);
  free_mem_.resize(n);
  node_free_milli_.resize(n);
  full_free_mask_.resize(n);
  node_version_.assign(n, 0);
  gpu_down_mask_.assign(n, 0);
  tasks_on_.resize(n);
  domain_full_free_.assign(cluster.domains().size(), 0);
  type_full_free_.assign(cluster.gpu_types().size(), 0);
  type_free_milli_.assign(cluster.gpu_types().size(), 0);
  buckets_.resize(cluster.gpu_types().size());
  std::vector<int> max_k(cluster.gpu_types().size(), 0);
  for (const auto& node : cluster.nodes())
    if (node.gpu_count > 0) max_k[node.gpu_type.value()] = std::max(max_k[node.gpu_type.value()], node.gpu_count);
  for (size_t t = 0; t < buckets_.size(); ++t) buckets_[t].assign(max_k[t] + 1, DenseBitset(n));
  share_buckets_.assign(cluster.gpu_types().size(), std::vector<DenseBitset>(kNumShareClasses, DenseBitset(n)));
  for (int32_t i = 0; i < n; ++i) {
    const auto& node = cluster.nodes()[i];
    free_cpu_[i] = node.cpu_milli;
    free_mem_[i] = node.memory_mib;
    node_free_milli_[i] = node.gpu_count * kMilliPerGpu;
    full_free_mask_[i] = node.gpu_count == 64 ? ~uint64_t{0} : (uint64_t{1} << node.gpu_count) - 1;
    AddNodeToIndexes(NodeId(i), +1);
  }
}

void ClusterState::AddNodeToIndexes(NodeId n, int sign) {
  const auto& node = cluster_->node(n);
  const int i = n.value();
  if (!up_[i]) return;
  const int k = PopCount(full_free_mask_[i]);
  for (int l = 0; l < kNumLevels; ++l) domain_full_free_[node.domain[l].value()] += sign * k;
  free_full_total_ += sign * k;
  if (node.gpu_count == 0) return;
  const int t = node.gpu_type.value();
  type_full_free_[t] += sign * k;
  type_free_milli_[t] += sign * node_free_milli_[i];
  if (sign > 0) buckets_[t][k].Set(i); else buckets_[t][k].Reset(i);
  // Share classes of the partially used GPUs. Called with -1 before a change
  // and +1 after it, so the classes removed are the ones added last time.
  uint64_t classes = 0;
  const MilliGpu* free = &gpu_free_[node.first_gpu];
  for (int g = 0; g < node.gpu_count; ++g)
    if (free[g] > 0 && free[g] < kMilliPerGpu) classes |= uint64_t{1} << ShareClassOf(free[g]);
  auto& by_class = share_buckets_[t];
  for (; classes; classes &= classes - 1) {
    const int c = std::countr_zero(classes);
    if (sign > 0) by_class[c].Set(i); else by_class[c].Reset(i);
  }
}

Status ClusterState::CheckPlace(const PlaceTask& e) const {
  const Allocation& a = e.alloc;
  if (!a.node.valid() || a.node.value() >= cluster_->num_nodes())
    return InvalidArgument("place: no node " + std::to_string(a.node.value()));
  const auto& node = cluster_->node(a.node);
  const int i = a.node.value();
  if (allocs_.Contains(e.task))
    return AlreadyExists("place: task " + std::to_string(e.task.job.value()) + "/" +
                         std::to_string(e.task.index) + " already holds resources");
  if (!up_[i]) return FailedPrecondition("place: node " + node.name + " is down");
  if (a.cpu_milli < 0 || a.memory_mib < 0 || a.milli_per_gpu < 0 || a.milli_per_gpu > kMilliPerGpu)
    return InvalidArgument("place: bad quantities");
  if (a.gpu_mask != 0 && a.milli_per_gpu == 0) return InvalidArgument("place: GPUs with zero share");
  if (a.gpu_memory_mib < 0 || (a.gpu_memory_mib > 0 && a.gpu_mask == 0))
    return InvalidArgument("place: bad GPU memory");
  if (node.gpu_count < 64 && (a.gpu_mask >> node.gpu_count) != 0)
    return InvalidArgument("place: node " + node.name + " has no such GPU");
  if (a.cpu_milli > free_cpu_[i]) return FailedPrecondition("place: not enough CPU on " + node.name);
  if (a.memory_mib > free_mem_[i]) return FailedPrecondition("place: not enough memory on " + node.name);
  for (uint64_t m = a.gpu_mask; m; m &= m - 1) {
    int g = __builtin_ctzll(m);
    if (gpu_free_[node.first_gpu + g] < a.milli_per_gpu)
      return FailedPrecondition("place: GPU " + std::to_string(g) + " of " + node.name + " lacks capacity");
    if (a.gpu_memory_mib > gpu_mem_free_[node.first_gpu + g])
      return FailedPrecondition("place: GPU " + std::to_string(g) + " of " + node.name + " lacks GPU memory");
  }
  return Status::Ok();
}

bool ClusterState::GpuMemoryFits(NodeId n, int32_t gpus, MilliGpu milli, MiB mem) const {
  if (gpus <= 0 || mem <= 0) return true;
  const auto& node = cluster_->node(n);
  if (node.gpu_count < gpus || !node.gpu_type.valid() || cluster_->gpu_types()[node.gpu_type.value()].memory_mib < mem)
    return false;
  // A fully free GPU holds no task, so all its memory is unallocated.
  if (milli >= kMilliPerGpu) return full_free_gpus(n) >= gpus;
  int ok = 0;
  for (int g = 0; g < node.gpu_count; ++g)
    if (GpuHolds(n, g, milli, mem) && ++ok >= gpus) return true;
  return false;
}

Status ClusterState::Check(const Event& event) const {
  if (auto* p = std::get_if<PlaceTask>(&event)) return CheckPlace(*p);
  if (auto* r = std::get_if<ReleaseTask>(&event)) {
    if (!allocs_.Contains(r->task)) return NotFound("release: task holds nothing");
    return Status::Ok();
  }
  if (auto* g = std::get_if<SetGpuUp>(&event)) {
    if (!g->node.valid() || g->node.value() >= cluster_->num_nodes()) return InvalidArgument("GPU up/down: no such node");
    const auto& node = cluster_->node(g->node);
    if (g->gpu < 0 || g->gpu >= node.gpu_count)
      return InvalidArgument("GPU up/down: node " + node.name + " has no GPU " + std::to_string(g->gpu));
    const bool down = (gpu_down_mask_[g->node.value()] >> g->gpu) & 1;
    if (!g->up && !down && gpu_free_[node.first_gpu + g->gpu] != kMilliPerGpu)
      return FailedPrecondition("GPU down: GPU " + std::to_string(g->gpu) + " of " + node.name +
                                " is in use; release its tasks first");
    return Status::Ok();
  }
  const auto& u = std::get<SetNodeUp>(event);
  if (!u.node.valid() || u.node.value() >= cluster_->num_nodes()) return InvalidArgument("node up/down: no such node");
  return Status::Ok();
}

Status ClusterState::Apply(const Event& event) {
  BERTH_RETURN_IF_ERROR(Check(event));
  if (auto* p = std::get_if<PlaceTask>(&event)) {
    const Allocation& a = p->alloc;
    const int i = a.node.value();
    const auto& node = cluster_->node(a.node);
    AddNodeToIndexes(a.node, -1);
    for (uint64_t m = a.gpu_mask; m; m &= m - 1) {
      int g = __builtin_ctzll(m);
      gpu_free_[node.first_gpu + g] -= a.milli_per_gpu;
      gpu_mem_free_[node.first_gpu + g] -= a.gpu_memory_mib;
      full_free_mask_[i] &= ~(uint64_t{1} << g);
    }
    free_cpu_[i] -= a.cpu_milli;
    free_mem_[i] -= a.memory_mib;
    node_free_milli_[i] -= a.total_milli();
    allocated_milli_ += a.total_milli();
    ++node_version_[i];
    ++version_;
    auto& list = tasks_on_[i];
    allocs_.Insert(p->task, a, static_cast<int32_t>(list.size()));
    list.push_back(p->task);
    AddNodeToIndexes(a.node, +1);
    return Status::Ok();
  }
  if (auto* r = std::get_if<ReleaseTask>(&event)) {
    const TaskTable::Record gone = allocs_.Erase(r->task);
    const Allocation& a = gone.alloc;
    const int i = a.node.value();
    const auto& node = cluster_->node(a.node);
    AddNodeToIndexes(a.node, -1);
    for (uint64_t m = a.gpu_mask; m; m &= m - 1) {
      int g = __builtin_ctzll(m);
      MilliGpu& f = gpu_free_[node.first_gpu + g];
      f += a.milli_per_gpu;
      gpu_mem_free_[node.first_gpu + g] += a.gpu_memory_mib;
      if (f == kMilliPerGpu) full_free_mask_[i] |= uint64_t{1} << g;
    }
    free_cpu_[i] += a.cpu_milli;
    free_mem_[i] += a.memory_mib;
    node_free_milli_[i] += a.total_milli();
    allocated_milli_ -= a.total_milli();
    ++node_version_[i];
    ++version_;
    // Constant time: the node's last task takes the released one's slot.
    auto& list = tasks_on_[i];
    const size_t slot = static_cast<size_t>(gone.node_slot);
    if (slot + 1 != list.size()) {
      list[slot] = list.back();
      allocs_.set_node_slot(list[slot], static_cast<int32_t>(slot));
    }
    list.pop_back();
    AddNodeToIndexes(a.node, +1);
    return Status::Ok();
  }
  if (auto* g = std::get_if<SetGpuUp>(&event)) {
    const int i = g->node.value();
    const uint64_t bit = uint64_t{1} << g->gpu;
    const bool down = gpu_down_mask_[i] & bit;
    if (down != g->up) return Status::Ok();  // already so
    MilliGpu& f = gpu_free_[cluster_->node(g->node).first_gpu + g->gpu];
    AddNodeToIndexes(g->node, -1);
    if (g->up) {
      gpu_down_mask_[i] &= ~bit;
      f = kMilliPerGpu;
      full_free_mask_[i] |= bit;
      node_free_milli_[i] += kMilliPerGpu;
    } else {
      gpu_down_mask_[i] |= bit;
      f = 0;
      full_free_mask_[i] &= ~bit;
      node_free_milli_[i] -= kMilliPerGpu;
    }
    AddNodeToIndexes(g->node, +1);
    ++node_version_[i];
    return Status::Ok();
  }
  const auto& u = std::get<SetNodeUp>(event);
  const int i = u.node.value();
  if (static_cast<bool>(up_[i]) == u.up) return Status::Ok();
  if (!u.up) AddNodeToIndexes(u.node, -1);
  up_[i] = u.up;
  if (u.up) AddNodeToIndexes(u.node, +1);
  ++node_version_[i];
  ++version_;
  return Status::Ok();
}

Status ClusterState::CheckIndexes() const {
  // Recompute from the cluster and the allocations alone.
  ClusterState fresh(*cluster_);
  for (size_t i = 0; i < up_.size(); ++i)
    if (!up_[i]) (void)fresh.Apply(SetNodeUp{NodeId(static_cast<int32_t>(i)), false});
  for (size_t i = 0; i < gpu_down_mask_.size(); ++i)
    for (uint64_t m = gpu_down_mask_[i]; m; m &= m - 1)
      (void)fresh.Apply(SetGpuUp{NodeId(static_cast<int32_t>(i)), std::countr_zero(m), false});
  // Re-place in key order: determinism of the recomputation does not matter for
  // equality, but sorted order makes failures reproducible.
  std::vector<TaskTable::Record> all;
  all.reserve(allocs_.size());
  for (size_t r = 0; r < allocs_.size(); ++r) all.push_back(allocs_.record(r));
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  for (const auto& [key, alloc, slot] : all) {
    if (slot < 0 || static_cast<size_t>(slot) >= tasks_on_[alloc.node.value()].size() ||
        tasks_on_[alloc.node.value()][slot] != key)
      return Internal("index mismatch: a task's slot in its node's task list");
    // Bypass the up check: tasks may sit on nodes that went down later.
    const int i = alloc.node.value();
    const bool was_up = fresh.up_[i];
    fresh.up_[i] = 1;
    if (!was_up) fresh.AddNodeToIndexes(alloc.node, +1);
    Status s = fresh.Apply(PlaceTask{key, alloc});
    if (!was_up) fresh.AddNodeToIndexes(alloc.node, -1);
    fresh.up_[i] = was_up;
    if (!s.ok()) return Internal("recompute: stored allocation does not fit: " + s.message());
  }
  if (fresh.gpu_down_mask_ != gpu_down_mask_) return Internal("index mismatch: GPUs down");
  if (fresh.gpu_free_ != gpu_free_) return Internal("index mismatch: per-GPU free milli");
  if (fresh.gpu_mem_free_ != gpu_mem_free_) return Internal("index mismatch: per-GPU free GPU memory");
  if (fresh.free_cpu_ != free_cpu_) return Internal("index mismatch: node free CPU");
  if (fresh.free_mem_ != free_mem_) return Internal("index mismatch: node free memory");
  if (fresh.node_free_milli_ != node_free_milli_) return Internal("index mismatch: node free milli-GPU");
  if (fresh.full_free_mask_ != full_free_mask_) return Internal("index mismatch: node fully-free GPU mask");
  for (size_t i = 0; i < tasks_on_.size(); ++i) {
    std::vector<TaskKey> sorted = tasks_on_[i];
    std::sort(sorted.begin(), sorted.end());
    if (sorted != fresh.tasks_on_[i]) return Internal("index mismatch: tasks per node");
  }
  if (fresh.domain_full_free_ != domain_full_free_) return Internal("index mismatch: domain free GPUs");
  if (fresh.type_full_free_ != type_full_free_) return Internal("index mismatch: type free GPUs");
  if (fresh.type_free_milli_ != type_free_milli_) return Internal("index mismatch: type free milli-GPU");
  if (fresh.buckets_ != buckets_) return Internal("index mismatch: node buckets by free GPUs");
  if (fresh.share_buckets_ != share_buckets_) return Internal("index mismatch: node buckets by share class");
  if (fresh.allocated_milli_ != allocated_milli_) return Internal("index mismatch: allocated milli-GPU");
  if (fresh.free_full_total_ != free_full_total_) return Internal("index mismatch: total free GPUs");
  return Status::Ok();
}

StateMemory ClusterState::Memory() const {
  // A heap block as glibc's malloc lays it out: the request plus an 8-byte
  // header, rounded up to 16 bytes, at least 32.
  auto block = [](size_t n) -> size_t { return n == 0 ? 0 : std::max<size_t>(32, (n + 8 + 15) / 16 * 16); };
  auto bytes = [&](const auto& v) { return block(v.capacity() * sizeof(v[0])); };
  StateMemory m;
  m.per_gpu = bytes(gpu_free_) + bytes(gpu_mem_free_);
  m.per_node = bytes(up_) + bytes(free_cpu_) + bytes(free_mem_) + bytes(node_free_milli_) + bytes(full_free_mask_) +
               bytes(node_version_) + bytes(gpu_down_mask_) + bytes(tasks_on_);
  m.indexes = bytes(domain_full_free_) + bytes(type_full_free_) + bytes(type_free_milli_);
  for (const auto* by_type : {&buckets_, &share_buckets_}) {
    m.indexes += bytes(*by_type);
    for (const auto& sets : *by_type) {
      m.indexes += bytes(sets);
      for (const auto& b : sets) m.indexes += block(b.MemoryBytes());
    }
  }
  for (const auto& list : tasks_on_) m.task_lists += bytes(list);
  for (size_t b : allocs_.HeapBlocks()) m.task_records += block(b);
  return m;
}

}  // namespace berth::state
