// The clock seam: the simulator injects a simulated clock, the server a real
// one. Nothing in the core reads the wall clock directly.
#pragma once

#include "berth/common/quantity.h"

namespace berth {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimeUs Now() const = 0;
};

// A clock that moves only when told to: the simulator's, and the tests'.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimeUs start = 0) : now_(start) {}
  TimeUs Now() const override { return now_; }
  void Set(TimeUs t) { now_ = t; }
  void Advance(TimeUs dt) { now_ += dt; }

 private:
  TimeUs now_;
};

// Wall-clock time (microseconds since the Unix epoch).
class SystemClock final : public Clock {
 public:
  TimeUs Now() const override;
};

// Microseconds on the monotonic clock: for timeouts, heartbeat ages and
// latencies in the service and the stores, never for decisions.
TimeUs SteadyNowUs();

}  // namespace berth
