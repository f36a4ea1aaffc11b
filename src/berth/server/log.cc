// Logger: a timestamped JSON line per event.
#include "berth/server/log.h"

#include <chrono>
#include <ctime>

namespace berth::server {

void Logger::Write(const char* level, const std::string& event, nlohmann::json fields) {
  if (quiet_ && level[0] == 'i') return;
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const int millis =
      static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char ts[40];
  std::snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
  nlohmann::json line = nlohmann::json::object();
  line["ts"] = ts;
  line["level"] = level;
  line["event"] = event;
  if (fields.is_object())
    for (auto& [k, v] : fields.items()) line[k] = std::move(v);
  const std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  std::fwrite(text.data(), 1, text.size(), out_);
  std::fflush(out_);
}

}  // namespace berth::server
