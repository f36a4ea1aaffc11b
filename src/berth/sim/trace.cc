// Read reports.
#include "berth/sim/trace.h"

namespace berth::sim {

void ReadReport::Skip(const std::string& reason, const std::string& error) {
  ++skipped;
  ++skipped_by_reason[reason];
  if (examples.size() < 5) examples.push_back(error);
}

std::string ReadReport::Summary() const {
  std::string s = std::to_string(jobs) + " jobs from " + std::to_string(lines) + " lines";
  if (filtered) s += "; " + std::to_string(filtered) + " left out by filters";
  if (skipped) {
    s += "; skipped " + std::to_string(skipped) + " bad line(s):";
    for (const auto& [reason, n] : skipped_by_reason) s += " " + reason + " " + std::to_string(n) + ";";
    s.pop_back();
  }
  return s;
}

std::string ReadReport::SkipDetails() const {
  if (!skipped) return "";
  std::string s = "skipped " + std::to_string(skipped) + " bad line(s) of " + std::to_string(lines) + ":\n";
  for (const auto& [reason, n] : skipped_by_reason) s += "  " + std::to_string(n) + " " + reason + "\n";
  s += examples.size() < static_cast<size_t>(skipped) ? "first errors:\n" : "errors:\n";
  for (const auto& e : examples) s += "  " + e + "\n";
  return s;
}

Status HandleBadLine(const ReadOptions& opts, ReadReport& report, const Status& error, const std::string& reason) {
  if (!opts.skip_bad_lines) return error;
  report.Skip(reason, error.message());
  return Status::Ok();
}

}  // namespace berth::sim
