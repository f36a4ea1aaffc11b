// Logger: a timestamped JSON line per event.
#include "berth/server/log.h"

#include <chrono>
#include <ctime>

namespace berth::server {
namespace {

std::string Dump(const nlohmann::json& v) { return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

// The first `max` bytes of s, not splitting a UTF-8 sequence.
std::string CutUtf8(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

// A field value cut to about Logger::kMaxFieldBytes: an array keeps its first
// elements (the caller records how many there were), anything else becomes
// the start of its JSON text.
nlohmann::json CutValue(const nlohmann::json& v) {
  if (v.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    size_t bytes = 2;
    for (const auto& e : v) {
      std::string text = Dump(e);
      if (bytes + text.size() + 1 > Logger::kMaxFieldBytes) break;
      bytes += text.size() + 1;
      out.push_back(e);
    }
    return out;
  }
  if (v.is_string()) return CutUtf8(v.get_ref<const std::string&>(), Logger::kMaxFieldBytes);
  return CutUtf8(Dump(v), Logger::kMaxFieldBytes);
}

}  // namespace

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
  std::string text = Dump(line);
  if (text.size() > kMaxLineBytes) {
    // Cut every large field; the line says so, and how long each array was.
    nlohmann::json cut = nlohmann::json::object();
    for (auto& [k, v] : line.items()) {
      if (Dump(v).size() <= kMaxFieldBytes) {
        cut[k] = std::move(v);
        continue;
      }
      if (v.is_array()) cut[k + "_count"] = v.size();
      cut[k] = CutValue(v);
    }
    cut["truncated"] = true;
    text = Dump(cut);
    if (text.size() > kMaxLineBytes) text = Dump({{"ts", ts}, {"level", level}, {"event", CutUtf8(event, 256)},
                                                   {"truncated", true}});
  }
  text += "\n";
  std::lock_guard<std::mutex> lock(mu_);
  std::fwrite(text.data(), 1, text.size(), out_);
  std::fflush(out_);
}

}  // namespace berth::server
