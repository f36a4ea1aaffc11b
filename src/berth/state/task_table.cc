// TaskTable: linear probing with backward-shift deletion.
#include "berth/state/task_table.h"

#include <cassert>

namespace berth::state {

size_t TaskTable::Home(TaskKey key) const {
  // Fibonacci hashing of (job, index): the high bits of the product are well
  // mixed even when job ids are consecutive.
  const uint64_t h = (static_cast<uint64_t>(key.job.value()) * 0x9E3779B97F4A7C15ull) ^
                     (static_cast<uint64_t>(static_cast<uint32_t>(key.index)) * 0xC2B2AE3D27D4EB4Full);
  return static_cast<size_t>((h ^ (h >> 29)) * 0x9E3779B97F4A7C15ull >> 32) & (slots_.size() - 1);
}

size_t TaskTable::Probe(TaskKey key) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = Home(key);; i = (i + 1) & mask) {
    const int32_t r = slots_[i];
    if (r == kEmpty || record(r).key == key) return i;
  }
}

const Allocation* TaskTable::Find(TaskKey key) const {
  if (slots_.empty()) return nullptr;
  const int32_t r = slots_[Probe(key)];
  return r == kEmpty ? nullptr : &record(r).alloc;
}

void TaskTable::Grow() {
  const size_t capacity = slots_.empty() ? 64 : slots_.size() * 2;
  slots_.assign(capacity, kEmpty);
  for (size_t r = 0; r < size_; ++r) slots_[Probe(record(r).key)] = static_cast<int32_t>(r);
}

int32_t TaskTable::node_slot(TaskKey key) const { return record(slots_[Probe(key)]).node_slot; }

void TaskTable::set_node_slot(TaskKey key, int32_t slot) { mutable_record(slots_[Probe(key)]).node_slot = slot; }

void TaskTable::Insert(TaskKey key, const Allocation& alloc, int32_t node_slot) {
  if ((size_ + 1) * 2 > slots_.size()) Grow();
  const size_t slot = Probe(key);
  assert(slots_[slot] == kEmpty);
  const size_t page = size_ >> kPageBits;
  if (page == pages_.size()) {
    pages_.emplace_back();
    pages_.back().reserve(kPageSize);
  }
  pages_[page].push_back({key, alloc, node_slot});
  slots_[slot] = static_cast<int32_t>(size_++);
}

TaskTable::Record TaskTable::Erase(TaskKey key) {
  const size_t mask = slots_.size() - 1;
  size_t hole = Probe(key);
  const int32_t r = slots_[hole];
  assert(r != kEmpty);
  const Record out = record(r);
  // Backward shift: pull later members of the probe run into the hole when
  // their home is not between the hole and where they sit.
  for (size_t j = (hole + 1) & mask; slots_[j] != kEmpty; j = (j + 1) & mask) {
    const size_t home = Home(record(slots_[j]).key);
    const bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (!stays) {
      slots_[hole] = slots_[j];
      hole = j;
    }
  }
  slots_[hole] = kEmpty;
  // Move the last record into the freed place and repoint its slot.
  const int32_t last = static_cast<int32_t>(size_) - 1;
  if (r != last) {
    mutable_record(r) = record(last);
    slots_[Probe(record(r).key)] = r;
  }
  auto& page = pages_[static_cast<size_t>(last) >> kPageBits];
  page.pop_back();
  --size_;
  // Keep one empty page as slack, free a second.
  if (page.empty() && pages_.size() >= 2 && pages_[pages_.size() - 2].empty()) pages_.pop_back();
  return out;
}

std::vector<size_t> TaskTable::HeapBlocks() const {
  std::vector<size_t> out;
  if (!pages_.empty()) out.push_back(pages_.capacity() * sizeof(pages_[0]));
  for (const auto& p : pages_)
    if (p.capacity()) out.push_back(p.capacity() * sizeof(Record));
  if (!slots_.empty()) out.push_back(slots_.capacity() * sizeof(int32_t));
  return out;
}

}  // namespace berth::state
