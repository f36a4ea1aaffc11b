// Where one turn of the scheduling loop spends its time: the steady clock read
// at the end of each phase (Mark), for the loop's slow-turn log line and the
// turn histogram. Phases a turn skips (no pass) stay at zero.
#pragma once

#include <array>
#include <chrono>

#include "berth/common/quantity.h"

namespace berth::server {

class TurnClock {
 public:
  enum Phase { kWork, kChecks, kPublish, kServices, kPass, kPassPublish, kPhases };
  static const char* Name(int p) {
    static constexpr const char* kNames[kPhases] = {"work", "checks", "publish", "services", "pass", "pass_publish"};
    return p >= 0 && p < kPhases ? kNames[p] : "?";
  }
  TurnClock() : start_(Clock::now()), last_(start_) {}
  // Ends phase `p` now: it took the time since the previous Mark.
  void Mark(Phase p) {
    const auto now = Clock::now();
    spent_[p] += std::chrono::duration_cast<std::chrono::microseconds>(now - last_).count();
    last_ = now;
  }
  TimeUs spent(int p) const { return spent_[p]; }
  TimeUs total() const { return std::chrono::duration_cast<std::chrono::microseconds>(last_ - start_).count(); }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_, last_;
  std::array<TimeUs, kPhases> spent_{};
};

}  // namespace berth::server
