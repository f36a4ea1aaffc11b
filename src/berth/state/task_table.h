// TaskTable: the map task -> allocation inside ClusterState, kept compact.
//
// Records are numbered densely and kept in pages of 1,024 (64 bytes each, no
// per-task heap block, at most one page of slack, no copying as it grows); an
// open-addressing index of record numbers (linear probing, load <= 1/2) finds
// them. Erase moves the last record into the hole. A pointer from Find stays
// valid until the next Insert or Erase. Nothing may decide by the order of
// record(i): it depends on the history of inserts and erases.
//
//   TaskTable t;
//   t.Insert(TaskKey{JobId(7), 0}, alloc);
//   const Allocation* a = t.Find(TaskKey{JobId(7), 0});
//   Allocation gone = t.Erase(TaskKey{JobId(7), 0}).alloc;
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "berth/common/ids.h"
#include "berth/state/events.h"

namespace berth::state {

class TaskTable {
 public:
  struct Record {
    TaskKey key;
    Allocation alloc;
    // Where the key sits in its node's task list (ClusterState::tasks_on),
    // so that a release removes it in constant time.
    int32_t node_slot = -1;
  };

  const Allocation* Find(TaskKey key) const;
  bool Contains(TaskKey key) const { return Find(key) != nullptr; }
  // Adds a record; `key` must not be present.
  void Insert(TaskKey key, const Allocation& alloc, int32_t node_slot = -1);
  // The node-list slot of `key` (present), and a new one for it.
  int32_t node_slot(TaskKey key) const;
  void set_node_slot(TaskKey key, int32_t slot);
  // Removes the record of `key`, which must be present, and returns it.
  Record Erase(TaskKey key);

  size_t size() const { return size_; }
  // Record i, 0 <= i < size().
  const Record& record(size_t i) const { return pages_[i >> kPageBits][i & (kPageSize - 1)]; }
  // The heap blocks held: one per page of records, and the index.
  std::vector<size_t> HeapBlocks() const;

 private:
  static constexpr int32_t kEmpty = -1;
  static constexpr int kPageBits = 10;
  static constexpr size_t kPageSize = size_t{1} << kPageBits;
  Record& mutable_record(size_t i) { return pages_[i >> kPageBits][i & (kPageSize - 1)]; }
  size_t Home(TaskKey key) const;
  // The slot holding `key`, or the empty slot where it would go.
  size_t Probe(TaskKey key) const;
  void Grow();

  // Page p holds records [p * kPageSize, (p + 1) * kPageSize); each page's
  // capacity is kPageSize. At most one empty page is kept at the end.
  std::vector<std::vector<Record>> pages_;
  size_t size_ = 0;
  std::vector<int32_t> slots_;  // record number or kEmpty; size a power of two
};

}  // namespace berth::state
