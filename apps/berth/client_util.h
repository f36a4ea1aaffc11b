// Helpers of the client commands that need no server: the server address as
// the user wrote it (--server or BERTH_SERVER), the AGE and NODELIST columns
// of `berth status`, and the filters of the job list. Kept apart from the
// HTTP calls so that they can be tested alone.
//
//   NormalizeServer("http://gpu-head:7450/")  -> "http://gpu-head:7450"
//   FormatAge(93784)                           -> "1d2h"
//   CompactNodes({"n1", "n1", "n2"})           -> "n1,n2"
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "berth/common/status.h"

namespace berth::apps {

// The base URL of a server: "[http://]HOST[:PORT][/]" -> "http://HOST[:PORT]"
// (trailing slashes dropped; http:// assumed when no scheme is given). Errors
// (naming `flag`) for an empty address, an https URL (the service speaks
// plain HTTP) and a URL with a path.
StatusOr<std::string> NormalizeServer(const std::string& url, const std::string& flag = "--server");

// A duration the way kubectl prints ages: 45s, 12m, 3h20m, 2d5h (at most two
// units); "-" for a negative or unknown age.
std::string FormatAge(double seconds);

// Node names in placement order without repeats, comma-separated; names past
// `max_chars` are cut as "...,+N".
std::string CompactNodes(const std::vector<std::string>& nodes, size_t max_chars = 40);

// The job states `berth status --state` accepts (as the API spells them), and
// whether `state` is one of them.
inline constexpr std::array<std::string_view, 5> kJobStateNames = {"pending", "running", "succeeded", "failed",
                                                                   "cancelled"};
bool IsJobStateName(const std::string& state);

}  // namespace berth::apps
