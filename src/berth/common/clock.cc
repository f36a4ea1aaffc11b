// The system clock.
#include "berth/common/clock.h"

#include <chrono>

namespace berth {

TimeUs SystemClock::Now() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace berth
