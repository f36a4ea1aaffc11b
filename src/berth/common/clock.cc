// The system clock, and the monotonic time the service measures waits with.
#include "berth/common/clock.h"

#include <chrono>

namespace berth {

TimeUs SystemClock::Now() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TimeUs SteadyNowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace berth
