// Shared helpers of the Kubernetes scheduler (see kube_util.h).
#include "berth/kubesched/kube_util.h"

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string_view>

namespace berth::kube {

using nlohmann::json;

std::string Str(const json& v, const char* key) {
  auto it = v.find(key);
  return it != v.end() && it->is_string() ? it->get<std::string>() : std::string();
}

const json& Sub(const json& v, const char* key) {
  static const json kNull;
  auto it = v.find(key);
  return it == v.end() ? kNull : *it;
}

std::string Label(const json& md, const char* map, const char* key) {
  const json& m = Sub(md, map);
  return m.is_object() ? Str(m, key) : std::string();
}

// Natural order of names: "w-2" before "w-10", so ranks follow the names.
bool NaturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t i2 = i, j2 = j;
      while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
      while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
      std::string_view na(a.data() + i, i2 - i), nb(b.data() + j, j2 - j);
      while (na.size() > 1 && na[0] == '0') na.remove_prefix(1);
      while (nb.size() > 1 && nb[0] == '0') nb.remove_prefix(1);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = i2;
      j = j2;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

std::string MaskText(uint64_t mask) {
  std::string out;
  for (int g = 0; g < 64; ++g)
    if (mask & (uint64_t{1} << g)) out += (out.empty() ? "" : ",") + std::to_string(g);
  return out;
}

uint64_t ParseMask(const std::string& text) {
  uint64_t mask = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find(',', i);
    if (j == std::string::npos) j = text.size();
    const std::string part = text.substr(i, j - i);
    char* end = nullptr;
    const long g = std::strtol(part.c_str(), &end, 10);
    if (part.empty() || !end || *end || g < 0 || g >= 64) return 0;
    mask |= uint64_t{1} << g;
    i = j + 1;
  }
  return mask;
}

std::string NowRfc3339(bool micro) {
  const auto now = std::chrono::system_clock::now();
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  const std::time_t t = static_cast<std::time_t>(us / 1000000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  if (micro) {
    std::snprintf(out, sizeof out, "%s.%06lldZ", buf, static_cast<long long>(us % 1000000));
  } else {
    std::snprintf(out, sizeof out, "%sZ", buf);
  }
  return out;
}

}  // namespace berth::kube
