// What the preemption post-filters keep between blocked jobs while the
// scheduler does not change, so that a pass over a long queue of jobs that
// cannot start does not rebuild the view of every running job for each one.
//
// Valid for one SchedulerView::epoch at one clock reading, on one state,
// ledger and running-job array (Sync forgets everything otherwise; epoch 0
// keeps nothing). Inside it, the answers are exactly those of a fresh
// computation, because each depends only on what its key holds:
//   - the guard summary: the lowest priority among running jobs past their
//     min-runtime guard (best effort is never shielded). Without the reclaim
//     right and without budgets, a job can evict only a lower-priority job
//     past its guard (eligibility.h), so a job at or below that priority
//     finds no candidate at all;
//   - eligibilities by preemptor class: Eligibility::Build reads of the
//     preemptor only its leaf queue, priority, dimension, reclaim right, the
//     job that last evicted it and the min-runtime guard it is held to (a
//     service replica's reclaim under a reservation has none);
//   - the "why no plan" text, by queue and dimension;
//   - "no plan" verdicts by class, task shapes, required level and the nodes
//     ruled out: a victim search reads of the preemptor nothing else. Only
//     failures are kept: a plan changes the scheduler, which ends the epoch.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <unordered_set>
#include <vector>

#include "berth/plugins/preempt/eligibility.h"
#include "berth/plugins/preempt/room.h"

namespace berth::plugins::preempt {

// The preemptor as Eligibility::Build sees it.
struct PreemptorClass {
  int32_t queue = -1;
  int32_t priority = 0;
  int32_t dim = 0;
  bool reclaim = false;
  int64_t preempted_by = -1;  // JobId value, -1: none
  TimeUs guard = 0;           // the min-runtime guard its candidates are past
  bool operator==(const PreemptorClass&) const = default;
};

class PreemptCache {
 public:
  // Binds to the view; false (and nothing kept) when its epoch is 0.
  bool Sync(const framework::SchedulerView& view, TimeUs min_runtime);

  // True when no running job can be a candidate for a job of priority `pj`
  // that has no reclaim right, in a tree without budgets. `view` is the one
  // of the last Sync; the guard summary is computed at the first call of the
  // epoch (a pass of reclaims alone never needs it).
  bool NoneBelow(const framework::SchedulerView& view, int32_t pj) {
    if (!min_evictable_known_) {
      min_evictable_priority_ = MinEvictablePriority(view, min_runtime_);
      min_evictable_known_ = true;
    }
    return pj <= min_evictable_priority_;
  }
  // The guard summary itself: the lowest priority among the view's running
  // jobs past `min_runtime` in their run or best effort (INT32_MAX: none).
  static int32_t MinEvictablePriority(const framework::SchedulerView& view, TimeUs min_runtime);

  // The class's eligibility built in this epoch, or nullptr; `found` is
  // Build's result for it.
  Eligibility* Find(const PreemptorClass& c, bool& found);
  // A slot for the class's eligibility (reuses the oldest when full); the
  // caller builds it and records Build's result with SetFound.
  Eligibility& Slot(const PreemptorClass& c);
  void SetFound(bool found) { slots_[last_slot_].found = found; }

  // "No plan" verdicts. The key also names the ruled-out nodes by content.
  bool KnownNoPlan(const PreemptorClass& c, const GangNeed& need, int32_t level, std::span<const uint8_t> ruled_out);
  void AddNoPlan();  // for the key of the last KnownNoPlan

  // A post-filter's WhyNoPlan text for a queue and dimension (it reads of the
  // job nothing else), or nullptr; and keeping one.
  const std::string* Why(int32_t queue, int32_t dim) const;
  void SetWhy(int32_t queue, int32_t dim, std::string why);

 private:
  struct KeyHash {
    size_t operator()(const std::vector<int64_t>& k) const;
  };
  struct ClassSlot {
    PreemptorClass cls;
    bool used = false;
    bool found = false;
    std::unique_ptr<Eligibility> elig;
  };
  static constexpr size_t kSlots = 8;

  uint64_t epoch_ = 0;
  TimeUs now_ = 0;
  TimeUs min_runtime_ = 0;
  const void* state_ = nullptr;
  const void* ledger_ = nullptr;
  const void* running_ = nullptr;
  size_t running_size_ = 0;
  int32_t min_evictable_priority_ = 0;
  bool min_evictable_known_ = false;
  std::vector<ClassSlot> slots_;
  size_t next_slot_ = 0, last_slot_ = 0;
  std::unordered_set<std::vector<int64_t>, KeyHash> no_plan_;
  std::vector<int64_t> key_;
  std::vector<std::pair<std::pair<int32_t, int32_t>, std::string>> why_;
  std::vector<uint8_t> ruled_out_;  // the last ruled-out set seen, named by ruled_out_id_
  int64_t ruled_out_id_ = 0;
};

}  // namespace berth::plugins::preempt
