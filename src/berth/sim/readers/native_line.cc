// The direct reading of plain native trace lines (see native_line.h). Every
// check here mirrors one of native_reader.cc's; where this reader is unsure
// it declines, and the document parser decides.
#include "berth/sim/readers/native_line.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "berth/json/json_parse.h"
#include "berth/json/service_fields.h"
#include "berth/sim/readers/reader_util.h"

namespace berth::sim {
namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// A JSON number token: its text and whether it has a fraction or exponent.
struct Number {
  std::string_view text;
  bool integer = true;
};

class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}

  void SkipSpace() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r' || s_[i_] == '\n')) ++i_;
  }
  bool Eat(char c) {
    SkipSpace();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool AtEnd() {
    SkipSpace();
    return i_ == s_.size();
  }
  // A string of printable ASCII without escapes.
  bool String(std::string_view& out) {
    if (!Eat('"')) return false;
    const size_t begin = i_;
    for (; i_ < s_.size(); ++i_) {
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        out = s_.substr(begin, i_ - begin);
        ++i_;
        return true;
      }
      if (c < 0x20 || c == '\\' || c >= 0x80) return false;
    }
    return false;
  }
  // A number by JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
  bool Num(Number& out) {
    SkipSpace();
    const size_t begin = i_;
    out.integer = true;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    if (i_ >= s_.size()) return false;
    if (s_[i_] == '0') {
      ++i_;
    } else if (s_[i_] >= '1' && s_[i_] <= '9') {
      while (i_ < s_.size() && IsDigit(s_[i_])) ++i_;
    } else {
      return false;
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      out.integer = false;
      ++i_;
      if (!Digits()) return false;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      out.integer = false;
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (!Digits()) return false;
    }
    out.text = s_.substr(begin, i_ - begin);
    return true;
  }

 private:
  static bool IsDigit(char c) { return c >= '0' && c <= '9'; }
  bool Digits() {
    const size_t begin = i_;
    while (i_ < s_.size() && IsDigit(s_[i_])) ++i_;
    return i_ > begin;
  }

  std::string_view s_;
  size_t i_ = 0;
};

// An integer in [lo, hi] (GetInt: an integer token that fits in int64).
template <typename T>
bool Int(Cursor& c, int64_t lo, int64_t hi, T& out) {
  Number n;
  if (!c.Num(n) || !n.integer) return false;
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(n.text.data(), n.text.data() + n.text.size(), v);
  if (ec != std::errc() || end != n.text.data() + n.text.size() || v < lo || v > hi) return false;
  out = static_cast<T>(v);
  return true;
}

// Seconds in [0, kMaxTraceSeconds], as microseconds (GetSeconds, not `positive`).
bool Seconds(Cursor& c, TimeUs& out) {
  Number n;
  if (!c.Num(n)) return false;
  double s = 0;
  const auto [end, ec] = std::from_chars(n.text.data(), n.text.data() + n.text.size(), s);
  if (ec != std::errc() || end != n.text.data() + n.text.size()) return false;
  if (!std::isfinite(s) || s < 0 || s > kMaxTraceSeconds) return false;
  out = SecondsToUs(s);
  return true;
}

// The keys of one object seen so far (a key twice is the document parser's error).
struct KeysSeen {
  uint32_t bits = 0;
  bool Once(uint32_t bit) {
    if (bits & bit) return false;
    bits |= bit;
    return true;
  }
  bool Has(uint32_t bit) const { return (bits & bit) != 0; }
};

bool Str(Cursor& c, std::string& out) {
  std::string_view v;
  if (!c.String(v)) return false;
  out.assign(v);
  return true;
}

// A non-empty object, each member read by `member(key)` (false: decline);
// {} is the document parser's to judge.
template <typename F>
bool Members(Cursor& c, F&& member) {
  if (!c.Eat('{') || c.Eat('}')) return false;
  do {
    std::string_view key;
    if (!c.String(key) || !c.Eat(':') || !member(key)) return false;
  } while (c.Eat(','));
  return c.Eat('}');
}

bool Group(Cursor& c, job::TaskGroup& g) {
  int64_t min_count = -1;
  KeysSeen seen;
  const bool ok = Members(c, [&](std::string_view key) {
    if (key == "name") return seen.Once(1) && Str(c, g.name);
    if (key == "count") return seen.Once(2) && Int(c, 1, kInt32Max, g.count);
    if (key == "min_count") return seen.Once(4) && Int(c, 1, kInt32Max, min_count);
    if (key == "gpus") return seen.Once(8) && Int(c, 0, kInt32Max, g.gpus);
    if (key == "milli_per_gpu") return seen.Once(16) && Int(c, 1, kMilliPerGpu, g.milli_per_gpu);
    if (key == "cpu_milli") return seen.Once(32) && Int(c, 0, kInt64Max, g.cpu_milli);
    if (key == "memory_mib") return seen.Once(64) && Int(c, 0, kInt64Max, g.memory_mib);
    return false;
  });
  if (!ok || min_count > g.count) return false;
  g.min_count = static_cast<int32_t>(min_count);
  return true;
}

// groups: a non-empty array of groups.
bool Groups(Cursor& c, std::vector<job::TaskGroup>& groups) {
  if (!c.Eat('[') || c.Eat(']')) return false;
  do {
    job::TaskGroup g;
    if (!Group(c, g)) return false;
    groups.push_back(std::move(g));
  } while (c.Eat(','));
  return c.Eat(']');
}

}  // namespace

bool ParsePlainJobLine(std::string_view line, job::JobSpec& j) {
  if (line.size() > berth::json::ParseLimits{}.max_bytes) return false;  // the document parser's size limit
  Cursor c(line);
  KeysSeen seen;
  const bool ok = Members(c, [&](std::string_view key) {
    if (key == "name") return seen.Once(1) && Str(c, j.name);
    if (key == "tenant") return seen.Once(2) && Str(c, j.tenant);
    if (key == "queue") return seen.Once(4) && Str(c, j.queue);
    if (key == "priority") return seen.Once(8) && Int(c, -kInt32Max, kInt32Max, j.priority);
    if (key == "submit_time_s") return seen.Once(16) && Seconds(c, j.submit_time);
    if (key == "duration_s") return seen.Once(32) && Seconds(c, j.duration);
    if (key == "groups") return seen.Once(64) && Groups(c, j.groups);
    return false;
  });
  if (!ok || !c.AtEnd()) return false;
  // ParseJob's closing checks: name and groups present, the service keys'
  // verdict (none here), a valid job.
  if (!seen.Has(1) || j.name.empty() || !seen.Has(64)) return false;
  if (!berth::json::ServiceFields().Finish(j).ok()) return false;
  return job::ValidateJob(j).ok();
}

}  // namespace berth::sim
