// The preemption post-filters' per-epoch cache (see preempt_cache.h).
#include "berth/plugins/preempt/preempt_cache.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace berth::plugins::preempt {

bool PreemptCache::Sync(const framework::SchedulerView& view, TimeUs min_runtime) {
  if (view.epoch == 0) {
    epoch_ = 0;
    return false;
  }
  if (view.epoch == epoch_ && view.now == now_ && min_runtime == min_runtime_ && &view.state == state_ &&
      &view.ledger == ledger_ && view.running.data() == running_ && view.running.size() == running_size_)
    return true;
  epoch_ = view.epoch;
  now_ = view.now;
  min_runtime_ = min_runtime;
  state_ = &view.state;
  ledger_ = &view.ledger;
  running_ = view.running.data();
  running_size_ = view.running.size();
  for (ClassSlot& s : slots_) s.used = false;
  next_slot_ = 0;
  no_plan_.clear();
  why_.clear();
  min_evictable_known_ = false;
  return true;
}

int32_t PreemptCache::MinEvictablePriority(const framework::SchedulerView& view, TimeUs min_runtime) {
  // The same guard as Eligibility::Build's.
  int32_t lowest = std::numeric_limits<int32_t>::max();
  for (const framework::RunningJob& v : view.running) {
    if (view.now - v.start_time < min_runtime && !v.best_effort) continue;
    lowest = std::min(lowest, v.priority);
  }
  return lowest;
}

Eligibility* PreemptCache::Find(const PreemptorClass& c, bool& found) {
  for (size_t i = 0; i < slots_.size(); ++i) {
    ClassSlot& s = slots_[i];
    if (s.used && s.cls == c) {
      found = s.found;
      last_slot_ = i;
      return s.elig.get();
    }
  }
  return nullptr;
}

Eligibility& PreemptCache::Slot(const PreemptorClass& c) {
  if (slots_.size() < kSlots) {
    slots_.emplace_back();
    slots_.back().elig = std::make_unique<Eligibility>();
    last_slot_ = slots_.size() - 1;
  } else {
    // Unused slots first, then round robin.
    auto unused = std::find_if(slots_.begin(), slots_.end(), [](const ClassSlot& s) { return !s.used; });
    last_slot_ = unused != slots_.end() ? static_cast<size_t>(unused - slots_.begin()) : next_slot_;
    next_slot_ = (last_slot_ + 1) % kSlots;
  }
  ClassSlot& s = slots_[last_slot_];
  s.cls = c;
  s.used = true;
  s.found = false;
  return *s.elig;
}

bool PreemptCache::KnownNoPlan(const PreemptorClass& c, const GangNeed& need, int32_t level,
                               std::span<const uint8_t> ruled_out) {
  int64_t ruled = 0;
  if (!ruled_out.empty()) {
    if (ruled_out.size() != ruled_out_.size() || std::memcmp(ruled_out.data(), ruled_out_.data(), ruled_out.size()) != 0) {
      ruled_out_.assign(ruled_out.begin(), ruled_out.end());
      ++ruled_out_id_;
    }
    ruled = ruled_out_id_;  // >= 1: the first non-empty set differs from the empty copy
  }
  key_.clear();
  key_.insert(key_.end(), {c.queue, c.priority, c.dim, c.reclaim ? 1 : 0, c.preempted_by, c.guard, level, ruled,
                           static_cast<int64_t>(need.shapes.size())});
  for (const TaskShape& s : need.shapes)
    key_.insert(key_.end(), {s.gpus, s.cpu, s.mem, static_cast<int64_t>(s.types.bits()), s.count, s.gpu_memory});
  return no_plan_.count(key_) > 0;
}

void PreemptCache::AddNoPlan() { no_plan_.insert(key_); }

const std::string* PreemptCache::Why(int32_t queue, int32_t dim) const {
  for (const auto& [key, why] : why_)
    if (key.first == queue && key.second == dim) return &why;
  return nullptr;
}

void PreemptCache::SetWhy(int32_t queue, int32_t dim, std::string why) {
  why_.push_back({{queue, dim}, std::move(why)});
}

size_t PreemptCache::KeyHash::operator()(const std::vector<int64_t>& k) const {
  uint64_t h = 1469598103934665603ull;
  for (int64_t x : k) {
    h ^= static_cast<uint64_t>(x) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 1099511628211ull;
  }
  return static_cast<size_t>(h);
}

}  // namespace berth::plugins::preempt
