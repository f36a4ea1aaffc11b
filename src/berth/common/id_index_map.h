// A map from a strong id to an int32 index (e.g. a job's record number), kept
// in one flat array with linear probing: a lookup is one or two cache lines,
// where std::unordered_map follows a bucket and then a node. Deletion shifts
// the following entries back (no tombstones), so lookups stay short however
// many ids come and go. There is no iteration, so nothing depends on the
// order of the slots.
//
//   IdIndexMap<JobId> m;
//   m.Insert(id, 7);                 // id must not be present
//   if (const int32_t* i = m.Find(id)) use(*i);
//   m.Erase(id);                     // returns whether it was present
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace berth {

template <typename IdT>
class IdIndexMap {
 public:
  const int32_t* Find(IdT id) const {
    if (size_ == 0) return nullptr;
    const int64_t key = id.value();
    for (size_t s = Home(key);; s = (s + 1) & mask_) {
      const Slot& slot = slots_[s];
      if (slot.index == kEmpty) return nullptr;
      if (slot.key == key) return &slot.index;
    }
  }
  bool Contains(IdT id) const { return Find(id) != nullptr; }

  // Adds `id` -> `index` (index >= 0); `id` must not be present.
  void Insert(IdT id, int32_t index) {
    if ((size_ + 1) * 4 > slots_.size() * 3) Grow();
    Place(id.value(), index);
    ++size_;
  }

  // Removes `id`; false when it was not present.
  bool Erase(IdT id) {
    if (size_ == 0) return false;
    const int64_t key = id.value();
    size_t hole = Home(key);
    for (;; hole = (hole + 1) & mask_) {
      if (slots_[hole].index == kEmpty) return false;
      if (slots_[hole].key == key) break;
    }
    // Backward shift: move each later entry of the run into the hole when
    // its home does not lie (cyclically) after the hole.
    for (size_t s = (hole + 1) & mask_;; s = (s + 1) & mask_) {
      if (slots_[s].index == kEmpty) break;
      const size_t home = Home(slots_[s].key);
      const bool stays = hole <= s ? (hole < home && home <= s) : (hole < home || home <= s);
      if (stays) continue;
      slots_[hole] = slots_[s];
      hole = s;
    }
    slots_[hole].index = kEmpty;
    --size_;
    return true;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  static constexpr int32_t kEmpty = -1;
  struct Slot {
    int64_t key = 0;
    int32_t index = kEmpty;
  };

  size_t Home(int64_t key) const {
    // splitmix64's finalizer: sequential ids spread over the table.
    uint64_t x = static_cast<uint64_t>(key);
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return static_cast<size_t>(x) & mask_;
  }
  void Place(int64_t key, int32_t index) {
    size_t s = Home(key);
    while (slots_[s].index != kEmpty) s = (s + 1) & mask_;
    slots_[s] = {key, index};
  }
  void Grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 16 : old.size() * 2, Slot{});
    mask_ = slots_.size() - 1;
    for (const Slot& s : old)
      if (s.index != kEmpty) Place(s.key, s.index);
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace berth
