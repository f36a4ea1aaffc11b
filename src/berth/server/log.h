// Structured logs: one JSON object per line on stderr (or any stream), e.g.
//   {"ts":"2025-01-02T03:04:05.678Z","level":"info","event":"job_started","job":12,"nodes":["n0"]}
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

class Logger {
 public:
  static constexpr size_t kMaxLineBytes = 16 * 1024;
  static constexpr size_t kMaxFieldBytes = 1024;

  explicit Logger(std::FILE* out = stderr) : out_(out) {}
  void Info(const std::string& event, nlohmann::json fields = nlohmann::json::object()) {
    Write("info", event, std::move(fields));
  }
  void Warn(const std::string& event, nlohmann::json fields = nlohmann::json::object()) {
    Write("warn", event, std::move(fields));
  }
  void Error(const std::string& event, nlohmann::json fields = nlohmann::json::object()) {
    Write("error", event, std::move(fields));
  }
  // Drops info lines (tests, load runs); warnings and errors still print.
  void set_quiet(bool quiet) { quiet_ = quiet; }

 private:
  void Write(const char* level, const std::string& event, nlohmann::json fields);
  std::FILE* out_;
  std::mutex mu_;
  bool quiet_ = false;
};

}  // namespace berth::server
