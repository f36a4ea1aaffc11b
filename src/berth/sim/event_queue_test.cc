// The event queue pops by (time, push order), whatever the push order.
#include "berth/sim/event_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "berth/common/rng.h"

namespace berth::sim {
namespace {

TEST(EventQueue, SameTimeEventsPopInPushOrder) {
  EventQueue q;
  q.Push(10, EventKind::kSample, 7);
  q.Push(5, EventKind::kArrival, 1);
  q.Push(10, EventKind::kArrival, 2);
  q.Push(10, EventKind::kCompletion, 3, /*generation=*/2);
  q.Push(5, EventKind::kArrival, 4);
  std::vector<int64_t> subjects;
  std::vector<TimeUs> times;
  while (!q.empty()) {
    SimEvent e = q.Pop();
    subjects.push_back(e.subject);
    times.push_back(e.time);
    if (e.subject == 3) {
      EXPECT_EQ(e.kind, EventKind::kCompletion);
      EXPECT_EQ(e.generation, 2);
    }
  }
  EXPECT_EQ(subjects, (std::vector<int64_t>{1, 4, 7, 2, 3}));
  EXPECT_EQ(times, (std::vector<TimeUs>{5, 5, 10, 10, 10}));
}

TEST(EventQueue, PopsSortedByTimeThenSequence) {
  Rng rng(3);
  EventQueue q;
  struct Pushed { TimeUs time; int64_t seq; };
  std::vector<Pushed> pushed;
  for (int i = 0; i < 5000; ++i) {
    const TimeUs t = static_cast<TimeUs>(rng.Uniform(200));
    pushed.push_back({t, q.Push(t, EventKind::kArrival, i)});
    if (i % 3 == 0) {  // interleave pops with pushes
      SimEvent e = q.Pop();
      auto it = std::find_if(pushed.begin(), pushed.end(), [&](const Pushed& p) { return p.seq == e.seq; });
      ASSERT_NE(it, pushed.end());
      for (const Pushed& p : pushed)
        EXPECT_TRUE(p.time > e.time || (p.time == e.time && p.seq >= e.seq)) << "popped out of order";
      pushed.erase(it);
    }
  }
  TimeUs last_t = -1;
  int64_t last_seq = -1;
  while (!q.empty()) {
    SimEvent e = q.Pop();
    ASSERT_TRUE(e.time > last_t || (e.time == last_t && e.seq > last_seq));
    last_t = e.time;
    last_seq = e.seq;
  }
  EXPECT_EQ(q.pushed(), 5000);
}

}  // namespace
}  // namespace berth::sim
