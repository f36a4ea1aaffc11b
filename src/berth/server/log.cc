// Logger: a timestamped JSON line per event.
#include "berth/server/log.h"

#include <cctype>
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

bool ParseLogLevel(const std::string& text, LogLevel* level) {
  if (text == "debug") *level = LogLevel::kDebug;
  else if (text == "info") *level = LogLevel::kInfo;
  else if (text == "warn" || text == "warning") *level = LogLevel::kWarn;
  else if (text == "error") *level = LogLevel::kError;
  else return false;
  return true;
}

bool ParseLogFormat(const std::string& text, LogFormat* format) {
  if (text == "json") *format = LogFormat::kJson;
  else if (text == "text") *format = LogFormat::kText;
  else return false;
  return true;
}

namespace {

const char* LevelName(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
  }
  return "info";
}

// The event as words: "job_started" -> "job started".
std::string Message(const std::string& event) {
  std::string m = CutUtf8(event, 256);
  for (char& c : m)
    if (c == '_') c = ' ';
  return m;
}

// The line: ts, level, msg and event first, then the fields in name order.
nlohmann::ordered_json Ordered(const char* ts, LogLevel level, const std::string& event, const nlohmann::json& fields) {
  nlohmann::ordered_json line = nlohmann::ordered_json::object();
  line["ts"] = ts;
  line["level"] = LevelName(level);
  line["msg"] = Message(event);
  line["event"] = event;
  for (const auto& [k, v] : fields.items())
    if (k != "ts" && k != "level" && k != "msg" && k != "event") line[k] = v;
  return line;
}

std::string Text(const nlohmann::ordered_json& line) {
  std::string level = line["level"].get<std::string>();
  for (char& c : level) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  level.resize(5, ' ');
  std::string out = line["ts"].get<std::string>() + " " + level + " " + line["msg"].get<std::string>() + " ";
  for (const auto& [k, v] : line.items()) {
    if (k == "ts" || k == "level" || k == "msg") continue;
    out += " " + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  return out;
}

}  // namespace

void Logger::Write(LogLevel level, const std::string& event, nlohmann::json fields) {
  if (level < level_) return;
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const int millis =
      static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char ts[40];
  std::snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
  if (!fields.is_object()) fields = nlohmann::json::object();
  nlohmann::ordered_json line = Ordered(ts, level, event, fields);
  std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > kMaxLineBytes) {
    // Cut every large field; the line says so, and how long each array was.
    nlohmann::json cut = nlohmann::json::object();
    for (auto& [k, v] : fields.items()) {
      if (Dump(v).size() <= kMaxFieldBytes) {
        cut[k] = std::move(v);
        continue;
      }
      if (v.is_array()) cut[k + "_count"] = v.size();
      cut[k] = CutValue(v);
    }
    cut["truncated"] = true;
    line = Ordered(ts, level, CutUtf8(event, 256), cut);
    text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (text.size() > kMaxLineBytes) {
      line = Ordered(ts, level, CutUtf8(event, 256), {{"truncated", true}});
      text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
  }
  if (format_ == LogFormat::kText) text = Text(line);
  text += "\n";
  std::lock_guard<std::mutex> lock(mu_);
  std::fwrite(text.data(), 1, text.size(), out_);
  std::fflush(out_);
}

}  // namespace berth::server
