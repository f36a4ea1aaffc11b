// The discrete-event queue.
#include "berth/sim/event_queue.h"

#include <algorithm>
#include <cassert>

namespace berth::sim {
namespace {

// Heap order: std::push_heap keeps the "largest" on top, so "larger" = later.
bool Later(const SimEvent& a, const SimEvent& b) {
  if (a.time != b.time) return a.time > b.time;
  return a.seq > b.seq;
}

}  // namespace

const char* EventKindName(EventKind kind) {
  switch (kind) {
    case EventKind::kArrival: return "arrival";
    case EventKind::kCompletion: return "completion";
    case EventKind::kSample: return "sample";
    case EventKind::kFault: return "fault";
    case EventKind::kNodeUp: return "node-up";
    case EventKind::kScheduleRound: return "schedule-round";
    case EventKind::kEnd: return "end";
    case EventKind::kBudgetRenewal: return "budget-renewal";
    case EventKind::kGuardExpiry: return "guard-expiry";
  }
  return "unknown";
}

int64_t EventQueue::Push(TimeUs time, EventKind kind, int64_t subject, int32_t generation) {
  SimEvent e;
  e.time = time;
  e.seq = next_seq_++;
  e.subject = subject;
  e.generation = generation;
  e.kind = kind;
  heap_.push_back(e);
  std::push_heap(heap_.begin(), heap_.end(), Later);
  return e.seq;
}

SimEvent EventQueue::Pop() {
  assert(!heap_.empty());
  std::pop_heap(heap_.begin(), heap_.end(), Later);
  SimEvent e = heap_.back();
  heap_.pop_back();
  return e;
}

}  // namespace berth::sim
