// The server address, ages and node lists of the client commands (see
// client_util.h).
#include "client_util.h"

#include <algorithm>
#include <cmath>

namespace berth::apps {

StatusOr<std::string> NormalizeServer(const std::string& url, const std::string& flag) {
  std::string rest = url;
  while (!rest.empty() && rest.back() == ' ') rest.pop_back();
  while (!rest.empty() && rest.front() == ' ') rest.erase(rest.begin());
  if (rest.empty()) return InvalidArgument(flag + ": empty server address; expected http://HOST:PORT");
  std::string scheme = "http://";
  if (rest.rfind("https://", 0) == 0) {
    scheme = "https://";
    rest = rest.substr(8);
  } else if (rest.rfind("http://", 0) == 0) {
    rest = rest.substr(7);
  } else if (rest.find("://") != std::string::npos) {
    return InvalidArgument(flag + " '" + url + "': expected http://HOST:PORT or https://HOST:PORT");
  }
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.empty() || rest.front() == ':' || rest.front() == '/')
    return InvalidArgument(flag + " '" + url + "': no host; expected http://HOST:PORT");
  if (rest.find('/') != std::string::npos)
    return InvalidArgument(flag + " '" + url + "': the service's API is at the root; drop the path");
  return scheme + rest;
}

std::string FormatAge(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return "-";
  const int64_t s = static_cast<int64_t>(seconds);
  const int64_t d = s / 86400, h = s % 86400 / 3600, m = s % 3600 / 60;
  auto two = [](int64_t a, const char* ua, int64_t b, const char* ub) {
    return std::to_string(a) + ua + (b ? std::to_string(b) + ub : "");
  };
  if (d >= 10) return std::to_string(d) + "d";
  if (d) return two(d, "d", h, "h");
  if (h) return two(h, "h", m, "m");
  if (m >= 10) return std::to_string(m) + "m";
  if (m) return two(m, "m", s % 60, "s");
  return std::to_string(s) + "s";
}

std::string CompactNodes(const std::vector<std::string>& nodes, size_t max_chars) {
  std::vector<std::string> seen;
  for (const auto& n : nodes)
    if (std::find(seen.begin(), seen.end(), n) == seen.end()) seen.push_back(n);
  std::string out;
  for (size_t i = 0; i < seen.size(); ++i) {
    if (i && out.size() + 1 + seen[i].size() > max_chars) return out + ",+" + std::to_string(seen.size() - i);
    out += (i ? "," : "") + seen[i];
  }
  return out.empty() ? "-" : out;
}

bool IsJobStateName(const std::string& state) {
  return std::find(kJobStateNames.begin(), kJobStateNames.end(), state) != kJobStateNames.end();
}

}  // namespace berth::apps
