// Room on nodes under tentative evictions (see room.h).
#include "berth/plugins/preempt/room.h"

#include <algorithm>
#include <bit>

#include "berth/common/bits.h"

namespace berth::plugins::preempt {

namespace {
constexpr int32_t kNoLimit = 1 << 20;

// Whether a node's GPUs could hold a task of `shape` at all: enough GPUs, an
// accepted type, and the GPU memory the shape states.
bool NodeAccepts(const cluster::Cluster& c, const cluster::Node& node, const TaskShape& shape) {
  if (shape.gpus <= 0) return true;
  if (node.gpu_count < shape.gpus || !shape.types.Accepts(node.gpu_type)) return false;
  if (shape.gpu_memory <= 0) return true;
  return node.gpu_type.valid() && c.gpu_types()[node.gpu_type.value()].memory_mib >= shape.gpu_memory;
}
}  // namespace

std::optional<GangNeed> GangNeed::From(const job::JobSpec& job) {
  GangNeed need;
  for (const auto& g : job.groups) {
    if (g.gpu_types_unknown) return std::nullopt;
    // A service replica's GPU share reclaims a whole GPU; other shares are not searched.
    const bool replica = job.service.has_value() || job.replica_of.valid();
    if (g.gpus > 0 && g.milli_per_gpu != kMilliPerGpu && !replica) return std::nullopt;
    const int32_t count = g.gang_min();
    if (count <= 0) continue;
    auto same = std::find_if(need.shapes.begin(), need.shapes.end(), [&](const TaskShape& s) {
      return s.gpus == g.gpus && s.cpu == g.cpu_milli && s.mem == g.memory_mib && s.types == g.gpu_types &&
             s.gpu_memory == g.gpu_memory_mib;
    });
    if (same != need.shapes.end()) {
      same->count += count;
    } else {
      need.shapes.push_back({g.gpus, g.cpu_milli, g.memory_mib, g.gpu_types, count, g.gpus > 0 ? g.gpu_memory_mib : 0});
    }
    need.gpus += int64_t{count} * g.gpus;
    need.tasks += count;
  }
  if (need.shapes.empty()) return std::nullopt;
  std::stable_sort(need.shapes.begin(), need.shapes.end(),
                   [](const TaskShape& a, const TaskShape& b) { return a.gpus > b.gpus; });
  return need;
}

int32_t TasksThatFit(const TaskShape& shape, int32_t gpus, MilliCpu cpu, MiB mem) {
  int64_t fit = kNoLimit;
  if (shape.gpus > 0) fit = std::min<int64_t>(fit, gpus / shape.gpus);
  if (shape.cpu > 0) fit = std::min<int64_t>(fit, cpu / shape.cpu);
  if (shape.mem > 0) fit = std::min<int64_t>(fit, mem / shape.mem);
  return static_cast<int32_t>(std::max<int64_t>(0, fit));
}

void Room::Attach(const state::ClusterState& state, std::span<const uint8_t> ruled_out) {
  ruled_out_ = ruled_out;
  const cluster::Cluster& c = state.cluster();
  if (state_ == nullptr || &state_->cluster() != &c || extra_mask_.size() != static_cast<size_t>(c.num_nodes())) {
    freed_milli_.assign(static_cast<size_t>(c.total_gpus()), 0);
    extra_mask_.assign(c.num_nodes(), 0);
    reserved_mask_.assign(c.num_nodes(), 0);
    cpu_.assign(c.num_nodes(), 0);
    mem_.assign(c.num_nodes(), 0);
    touched_flag_.assign(c.num_nodes(), 0);
    touched_.clear();
  } else {
    Clear();
  }
  state_ = &state;
}

void Room::Touch(int32_t n) {
  if (!touched_flag_[n]) {
    touched_flag_[n] = 1;
    touched_.push_back(n);
  }
}

void Room::Clear() {
  const cluster::Cluster& c = state_->cluster();
  for (int32_t n : touched_) {
    const auto& node = c.node(NodeId(n));
    std::fill_n(freed_milli_.begin() + node.first_gpu, node.gpu_count, 0);
    extra_mask_[n] = reserved_mask_[n] = 0;
    cpu_[n] = 0;
    mem_[n] = 0;
    touched_flag_[n] = 0;
  }
  touched_.clear();
}

void Room::Evict(const framework::RunningJob& v, int sign, int32_t begin, int32_t end,
                 std::vector<int32_t>* changed) {
  for (const auto& p : v.placements) {
    const int32_t n = p.alloc.node.value();
    if (n < begin || n >= end) continue;
    Touch(n);
    if (changed) changed->push_back(n);
    const NodeId node(n);
    cpu_[n] += sign * p.alloc.cpu_milli;
    mem_[n] += sign * p.alloc.memory_mib;
    if (p.alloc.milli_per_gpu == kMilliPerGpu) {
      // A whole-GPU task holds its GPUs alone: they are free exactly while it is evicted.
      if (sign > 0) {
        extra_mask_[n] |= p.alloc.gpu_mask;
      } else {
        extra_mask_[n] &= ~p.alloc.gpu_mask;
      }
      continue;
    }
    const int32_t first = state_->cluster().node(node).first_gpu;
    const uint64_t whole = state_->full_free_mask(node);
    for (uint64_t m = p.alloc.gpu_mask; m; m &= m - 1) {
      const int g = std::countr_zero(m);
      int32_t& f = freed_milli_[first + g];
      f += sign * p.alloc.milli_per_gpu;
      const uint64_t bit = uint64_t{1} << g;
      if (!(whole & bit) && state_->gpu_free(node, g) + f >= kMilliPerGpu) {
        extra_mask_[n] |= bit;
      } else {
        extra_mask_[n] &= ~bit;
      }
    }
  }
}

void Room::Reserve(NodeId n, const TaskShape& shape) {
  Touch(n.value());
  uint64_t avail = FreeMask(n);
  for (int k = 0; k < shape.gpus && avail; ++k) {
    const uint64_t low = avail & (~avail + 1);
    reserved_mask_[n.value()] |= low;
    avail &= avail - 1;
  }
  cpu_[n.value()] -= shape.cpu;
  mem_[n.value()] -= shape.mem;
}

uint64_t Room::FreeMask(NodeId n) const {
  return (state_->full_free_mask(n) | extra_mask_[n.value()]) & ~reserved_mask_[n.value()];
}

uint64_t Room::MaskWithExtra(NodeId n, const int32_t* milli) const {
  const auto& node = state_->cluster().node(n);
  uint64_t mask = FreeMask(n);
  for (int g = 0; g < node.gpu_count; ++g) {
    if (milli[g] == 0) continue;
    const uint64_t bit = uint64_t{1} << g;
    if (!(reserved_mask_[n.value()] & bit) &&
        state_->gpu_free(n, g) + freed_milli_[node.first_gpu + g] + milli[g] >= kMilliPerGpu)
      mask |= bit;
  }
  return mask;
}

int32_t Room::SlotsWith(NodeId n, const TaskShape& shape, uint64_t extra_mask, MilliCpu cpu, MiB mem) const {
  if (!state_->up(n)) return 0;
  if (!ruled_out_.empty() && ruled_out_[static_cast<size_t>(n.value())]) return 0;
  const auto& node = state_->cluster().node(n);
  if (!NodeAccepts(state_->cluster(), node, shape)) return 0;
  const int32_t gpus = PopCount(FreeMask(n) | extra_mask);
  return TasksThatFit(shape, gpus, state_->free_cpu(n) + cpu_[n.value()] + cpu,
                      state_->free_memory(n) + mem_[n.value()] + mem);
}

int32_t Room::Slots(NodeId n, const TaskShape& shape) const { return SlotsWith(n, shape, 0, 0, 0); }

int64_t Room::SlotsIn(const TaskShape& shape, int32_t begin, int32_t end) const {
  int64_t slots = 0;
  for (int32_t n = begin; n < end; ++n) slots += Slots(NodeId(n), shape);
  return slots;
}

bool Room::Fits(const GangNeed& need, int32_t begin, int32_t end) const {
  if (need.shapes.size() == 1) return SlotsIn(need.shapes[0], begin, end) >= need.shapes[0].count;
  std::vector<int32_t> left;
  left.reserve(need.shapes.size());
  int64_t total = 0;
  for (const auto& s : need.shapes) {
    left.push_back(s.count);
    total += s.count;
  }
  for (int32_t n = begin; n < end && total > 0; ++n) {
    const NodeId node(n);
    if (!state_->up(node)) continue;
    const auto& nd = state_->cluster().node(node);
    int32_t gpus = PopCount(FreeMask(node));
    MilliCpu cpu = state_->free_cpu(node) + cpu_[n];
    MiB mem = state_->free_memory(node) + mem_[n];
    for (size_t i = 0; i < need.shapes.size(); ++i) {
      const TaskShape& s = need.shapes[i];
      if (left[i] == 0) continue;
      if (!NodeAccepts(state_->cluster(), nd, s)) continue;
      const int32_t t = std::min(left[i], TasksThatFit(s, gpus, cpu, mem));
      left[i] -= t;
      total -= t;
      gpus -= t * s.gpus;
      cpu -= t * s.cpu;
      mem -= t * s.mem;
    }
  }
  return total == 0;
}

}  // namespace berth::plugins::preempt
