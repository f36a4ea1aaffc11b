// Format dispatch for trace readers.
#include <map>

#include "berth/sim/readers/readers.h"

namespace berth::sim {

StatusOr<Trace> ReadTrace(const std::string& path, const std::string& format, const ReadOptions& opts) {
  using Reader = StatusOr<Trace> (*)(const std::string&, const ReadOptions&);
  struct Entry {
    Reader read;
    bool filters;  // applies window_from / window_to / tenants
  };
  static const std::map<std::string, Entry> kReaders = {
      {"openb", {&ReadOpenbPods, false}}, {"philly", {&ReadPhilly, true}}, {"gavel", {&ReadGavel, false}},
      {"tiresias", {&ReadTiresias, false}}, {"native", {&ReadNative, false}},
      {"pollux", {&ReadPollux, false}},
  };
  std::string fmt = format.empty() ? GuessTraceFormat(path) : format;
  if (fmt.empty()) return InvalidArgument(path + ": cannot tell the trace format; pass --trace-format");
  auto it = kReaders.find(fmt);
  if (it == kReaders.end())
    return InvalidArgument("unknown trace format '" + fmt + "' (known: openb, philly, gavel, tiresias, pollux, native)");
  if (opts.has_filters() && !it->second.filters)
    return InvalidArgument("window and tenant filters apply to philly traces, not to " + fmt + " (" + path + ")");
  if (opts.max_jobs == 0 || opts.max_jobs < -1) return InvalidArgument("max jobs must be -1 (all) or positive");
  return it->second.read(path, opts);
}

std::string GuessTraceFormat(const std::string& path) {
  const std::string base = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  if (base.rfind("openb_pod_list", 0) == 0) return "openb";
  if (base == "philly.csv") return "philly";
  if (base.size() > 6 && base.substr(base.size() - 6) == ".trace") return "gavel";
  if (base.size() > 6 && base.substr(base.size() - 6) == ".jsonl") return "native";
  if (base.find("_job.csv") != std::string::npos) return "tiresias";
  if (base.rfind("workload-", 0) == 0 && base.size() > 4 && base.substr(base.size() - 4) == ".csv") return "pollux";
  return "";
}

}  // namespace berth::sim
