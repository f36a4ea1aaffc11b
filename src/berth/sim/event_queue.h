// The simulator's discrete-event queue: events ordered by (time, sequence
// number), where the sequence number is the push order. The order is total, so
// a replay pops events in the same order on every run and platform. Push and
// Pop are O(log n) (a binary heap over a vector).
//
//   EventQueue q;
//   q.Push(SecondsToUs(10), EventKind::kArrival, /*subject=*/0);
//   q.Push(SecondsToUs(10), EventKind::kSample, 0);   // after the arrival: same time, later seq
//   while (!q.empty()) { SimEvent e = q.Pop(); ... }
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "berth/common/quantity.h"

namespace berth::sim {

enum class EventKind : uint8_t {
  kArrival,     // subject: the job's trace index; the job is submitted
  kCompletion,  // subject: the job's trace index; generation: the start it ends
  kSample,      // subject: the sample tick number; metrics are recorded
  kFault,       // subject: the fault's index (FaultDriver); generation: its phase (start, deadline, end)
  kNodeUp,      // subject: node id (reserved)
  kScheduleRound,  // a periodic scheduling round (reserved: batch schedulers)
  kEnd,         // the replay stops here (ReplayOptions::until)
  kBudgetRenewal,  // a queue's spent budget renews: a scheduling pass
  kGuardExpiry,    // a running job passes the min-runtime guard while a service replica waits: a pass
};
const char* EventKindName(EventKind kind);

struct SimEvent {
  TimeUs time = 0;
  int64_t seq = 0;  // push order; breaks ties between events at the same time
  int64_t subject = 0;
  // kCompletion: the job's start number (1 for its first start). A completion
  // whose generation is not the job's current one is stale (the job was
  // preempted and restarted since) and is ignored.
  int32_t generation = 0;
  EventKind kind = EventKind::kArrival;
};

class EventQueue {
 public:
  void Reserve(size_t n) { heap_.reserve(n); }
  // Adds an event; returns its sequence number.
  int64_t Push(TimeUs time, EventKind kind, int64_t subject, int32_t generation = 0);
  // The earliest event (lowest time, then lowest seq). Requires !empty().
  const SimEvent& Top() const { return heap_.front(); }
  // Removes and returns the earliest event. Requires !empty().
  SimEvent Pop();
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  int64_t pushed() const { return next_seq_; }

 private:
  std::vector<SimEvent> heap_;  // a min-heap under Later(): heap_[0] is the earliest
  int64_t next_seq_ = 0;
};

}  // namespace berth::sim
