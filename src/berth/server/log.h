// Structured logs: one line per event on stderr (or any stream), JSON by
// default, with ts, level, msg and event first and the fields after:
//   {"ts":"2025-01-02T03:04:05.678Z","level":"info","msg":"job started","event":"job_started","job":12,"nodes":["n0"]}
// or text (--log-format text), logfmt-like:
//   2025-01-02T03:04:05.678Z INFO  job started  event=job_started job=12 nodes=["n0"]
// Lines below the level (--log-level) are dropped.
// Thread-safe; lines never interleave. A line is at most kMaxLineBytes: a
// longer one has each large field cut to about kMaxFieldBytes (an array to its
// first elements, with "<field>_count" saying how many it had) and
// "truncated": true.
#pragma once

#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

namespace berth::server {

enum class LogLevel { kDebug, kInfo, kWarn, kError };
enum class LogFormat { kJson, kText };
// "debug", "info", "warn" (or "warning"), "error"; "json", "text". False for anything else.
bool ParseLogLevel(const std::string& text, LogLevel* level);
bool ParseLogFormat(const std::string& text, LogFormat* format);

class Logger {
 public:
  static constexpr size_t kMaxLineBytes = 16 * 1024;
  static constexpr size_t kMaxFieldBytes = 1024;

  explicit Logger(std::FILE* out = stderr) : out_(out) {}
  void Debug(const std::string& event, nlohmann::json fields = nlohmann::json::object()) {
    Write(LogLevel::kDebug, event, std::move(fields));
  }
  void Info(const std::string& event, nlohmann::json fields = nlohmann::json::object()) {
    Write(LogLevel::kInfo, event, std::move(fields));
  }
  void Warn(const std::string& event, nlohmann::json fields = nlohmann::json::object()) {
    Write(LogLevel::kWarn, event, std::move(fields));
  }
  void Error(const std::string& event, nlohmann::json fields = nlohmann::json::object()) {
    Write(LogLevel::kError, event, std::move(fields));
  }
  // Drops info lines (tests, load runs); warnings and errors still print.
  void set_quiet(bool quiet) { level_ = quiet ? LogLevel::kWarn : LogLevel::kInfo; }
  void set_level(LogLevel level) { level_ = level; }
  void set_format(LogFormat format) { format_ = format; }

 private:
  void Write(LogLevel level, const std::string& event, nlohmann::json fields);
  std::FILE* out_;
  std::mutex mu_;
  LogLevel level_ = LogLevel::kInfo;
  LogFormat format_ = LogFormat::kJson;
};

}  // namespace berth::server
