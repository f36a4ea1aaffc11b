// Strict JSON <-> JobSpec mapping for the API.
#include "berth/server/job_json.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace berth::server {
namespace {

using nlohmann::json;

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
// Longest duration accepted: 10 years.
constexpr double kMaxSeconds = 10.0 * 365 * 24 * 3600;
constexpr size_t kMaxString = 256;
constexpr size_t kMaxGroups = 64;

std::string Shown(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

Status GetInt(const std::string& key, const json& v, int64_t lo, int64_t hi, int64_t& out) {
  if (!v.is_number_integer()) return InvalidArgument(key + ": expected an integer, found " + Shown(v));
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(kInt64Max))
    return InvalidArgument(key + ": " + Shown(v) + " is too large");
  out = v.get<int64_t>();
  if (out < lo || out > hi)
    return InvalidArgument(key + ": " + std::to_string(out) + " is outside " + std::to_string(lo) + ".." +
                           std::to_string(hi));
  return Status::Ok();
}

template <typename T>
Status GetIntAs(const std::string& key, const json& v, int64_t lo, int64_t hi, T& out) {
  int64_t x = 0;
  BERTH_RETURN_IF_ERROR(GetInt(key, v, lo, hi, x));
  out = static_cast<T>(x);
  return Status::Ok();
}

Status GetSeconds(const std::string& key, const json& v, bool positive, TimeUs& out) {
  if (!v.is_number()) return InvalidArgument(key + ": expected a number of seconds, found " + Shown(v));
  const double s = v.get<double>();
  if (!std::isfinite(s) || s < 0 || (positive && s == 0) || s > kMaxSeconds)
    return InvalidArgument(key + ": " + Shown(v) + " s is out of range" + (positive ? " (must be > 0)" : ""));
  out = SecondsToUs(s);
  return Status::Ok();
}

Status GetString(const std::string& key, const json& v, std::string& out) {
  if (!v.is_string()) return InvalidArgument(key + ": expected a string, found " + Shown(v));
  out = v.get<std::string>();
  if (out.size() > kMaxString) return InvalidArgument(key + ": longer than " + std::to_string(kMaxString) + " bytes");
  return Status::Ok();
}

// A topology level by name (cluster::ParseLevel's names and aliases).
Status GetLevel(const std::string& key, const json& v, cluster::Level& out) {
  if (!v.is_string()) return InvalidArgument(key + ": expected a level name (region, cluster, spine, leaf, nvlink), found " + Shown(v));
  auto level = cluster::ParseLevel(v.get<std::string>());
  if (!level)
    return InvalidArgument(key + ": " + Shown(v) + " is not a level (region, cluster, spine, leaf, nvlink)");
  out = *level;
  return Status::Ok();
}

Status ParseGroup(const std::string& where, const json& v, job::TaskGroup& g) {
  if (!v.is_object()) return InvalidArgument(where + ": expected an object, found " + Shown(v));
  int64_t min_count = -1;
  for (const auto& [key, val] : v.items()) {
    const std::string k = where + "." + key;
    if (key == "name") {
      BERTH_RETURN_IF_ERROR(GetString(k, val, g.name));
    } else if (key == "count") {
      BERTH_RETURN_IF_ERROR(GetIntAs(k, val, 1, 1'000'000, g.count));
    } else if (key == "min_count") {
      BERTH_RETURN_IF_ERROR(GetInt(k, val, 1, 1'000'000, min_count));
    } else if (key == "gpus") {
      BERTH_RETURN_IF_ERROR(GetIntAs(k, val, 0, 64, g.gpus));
    } else if (key == "milli_per_gpu") {
      BERTH_RETURN_IF_ERROR(GetIntAs(k, val, 1, kMilliPerGpu, g.milli_per_gpu));
    } else if (key == "cpu_milli") {
      BERTH_RETURN_IF_ERROR(GetIntAs(k, val, 0, kInt64Max, g.cpu_milli));
    } else if (key == "memory_mib") {
      BERTH_RETURN_IF_ERROR(GetIntAs(k, val, 0, kInt64Max, g.memory_mib));
    } else if (key == "gpu_types") {
      if (!val.is_array()) return InvalidArgument(k + ": expected an array of GPU type names, found " + Shown(val));
      g.gpu_type_spec.clear();
      for (size_t i = 0; i < val.size(); ++i) {
        const std::string ki = k + "[" + std::to_string(i) + "]";
        std::string t;
        BERTH_RETURN_IF_ERROR(GetString(ki, val[i], t));
        if (t.empty() || t.find('|') != std::string::npos)
          return InvalidArgument(ki + ": '" + t + "' is not a GPU type name");
        g.gpu_type_spec += (i ? "|" : "") + t;
      }
    } else if (key == "block_tasks") {
      BERTH_RETURN_IF_ERROR(GetIntAs(k, val, 0, 1'000'000, g.block_tasks));
    } else if (key == "block_level") {
      BERTH_RETURN_IF_ERROR(GetLevel(k, val, g.block_level));
    } else {
      return InvalidArgument("unknown field '" + k + "'");
    }
  }
  if (min_count > g.count)
    return InvalidArgument(where + ".min_count: " + std::to_string(min_count) + " is above count " +
                           std::to_string(g.count));
  g.min_count = static_cast<int32_t>(min_count);
  return Status::Ok();
}

}  // namespace

StatusOr<JobSubmission> ParseJobJson(const json& v) {
  if (!v.is_object()) return InvalidArgument("expected a JSON object (a job), found " + Shown(v));
  JobSubmission out;
  job::JobSpec& j = out.spec;
  bool has_name = false, has_groups = false;
  for (const auto& [key, val] : v.items()) {
    if (key == "name") {
      BERTH_RETURN_IF_ERROR(GetString(key, val, j.name));
      has_name = true;
    } else if (key == "tenant") {
      BERTH_RETURN_IF_ERROR(GetString(key, val, j.tenant));
    } else if (key == "queue") {
      BERTH_RETURN_IF_ERROR(GetString(key, val, j.queue));
    } else if (key == "priority") {
      BERTH_RETURN_IF_ERROR(GetIntAs(key, val, -kInt32Max, kInt32Max, j.priority));
    } else if (key == "submit_time_s") {
      BERTH_RETURN_IF_ERROR(GetSeconds(key, val, false, j.submit_time));
    } else if (key == "duration_s") {
      BERTH_RETURN_IF_ERROR(GetSeconds(key, val, false, j.duration));
    } else if (key == "runtime_limit_s") {
      BERTH_RETURN_IF_ERROR(GetSeconds(key, val, true, j.runtime_limit));
    } else if (key == "job_class") {
      BERTH_RETURN_IF_ERROR(GetString(key, val, j.job_class));
    } else if (key == "dataset") {
      BERTH_RETURN_IF_ERROR(GetString(key, val, j.dataset));
    } else if (key == "dataset_mib") {
      BERTH_RETURN_IF_ERROR(GetIntAs(key, val, 0, kInt64Max, j.dataset_mib));
    } else if (key == "checkpoint_interval_s") {
      BERTH_RETURN_IF_ERROR(GetSeconds(key, val, true, j.checkpoint_interval));
    } else if (key == "restart_cost_s") {
      BERTH_RETURN_IF_ERROR(GetSeconds(key, val, false, j.restart_cost));
    } else if (key == "work_steps") {
      BERTH_RETURN_IF_ERROR(GetInt(key, val, 1, kInt64Max, j.work_steps));
    } else if (key == "required_level" || key == "preferred_level") {
      cluster::Level level;
      BERTH_RETURN_IF_ERROR(GetLevel(key, val, level));
      (key == "required_level" ? j.required_level : j.preferred_level) = level;
    } else if (key == "idempotency_key") {
      BERTH_RETURN_IF_ERROR(GetString(key, val, out.idempotency_key));
      if (out.idempotency_key.empty()) return InvalidArgument("idempotency_key: empty (omit it instead)");
    } else if (key == "groups") {
      if (!val.is_array() || val.empty())
        return InvalidArgument("groups: expected a non-empty array of task groups, found " + Shown(val));
      if (val.size() > kMaxGroups) return InvalidArgument("groups: more than " + std::to_string(kMaxGroups) + " groups");
      for (size_t i = 0; i < val.size(); ++i) {
        job::TaskGroup g;
        BERTH_RETURN_IF_ERROR(ParseGroup("groups[" + std::to_string(i) + "]", val[i], g));
        j.groups.push_back(std::move(g));
      }
      has_groups = true;
    } else {
      return InvalidArgument("unknown field '" + key + "'");
    }
  }
  if (!has_name) return InvalidArgument("name: missing (every job needs a name)");
  if (j.name.empty()) return InvalidArgument("name: empty");
  if (!has_groups) return InvalidArgument("groups: missing (every job needs at least one task group)");
  int64_t tasks = 0;
  for (const auto& g : j.groups) tasks += g.count;
  if (tasks > 1'000'000) return InvalidArgument("groups: more than 1000000 tasks in one job");
  BERTH_RETURN_IF_ERROR(job::ValidateJob(j));
  return out;
}

StatusOr<JobSubmission> ParseJobBody(const std::string& body) {
  json v;
  try {
    v = json::parse(body);
  } catch (const json::exception& e) {
    return InvalidArgument(std::string("malformed JSON: ") + e.what());
  }
  return ParseJobJson(v);
}

json JobToJson(const job::JobSpec& s) {
  json j = json::object();
  j["name"] = s.name;
  if (!s.tenant.empty()) j["tenant"] = s.tenant;
  if (!s.queue.empty()) j["queue"] = s.queue;
  if (s.priority != 0) j["priority"] = s.priority;
  if (s.submit_time != 0) j["submit_time_s"] = UsToSeconds(s.submit_time);
  if (s.duration >= 0) j["duration_s"] = UsToSeconds(s.duration);
  if (s.runtime_limit > 0) j["runtime_limit_s"] = UsToSeconds(s.runtime_limit);
  if (!s.job_class.empty()) j["job_class"] = s.job_class;
  if (!s.dataset.empty()) j["dataset"] = s.dataset;
  if (s.dataset_mib != 0) j["dataset_mib"] = s.dataset_mib;
  if (s.checkpoint_interval > 0) j["checkpoint_interval_s"] = UsToSeconds(s.checkpoint_interval);
  if (s.restart_cost >= 0) j["restart_cost_s"] = UsToSeconds(s.restart_cost);
  if (s.work_steps > 0) j["work_steps"] = s.work_steps;
  if (s.required_level) j["required_level"] = cluster::LevelName(*s.required_level);
  if (s.preferred_level) j["preferred_level"] = cluster::LevelName(*s.preferred_level);
  json groups = json::array();
  for (const auto& g : s.groups) {
    json o = json::object();
    o["name"] = g.name;
    o["count"] = g.count;
    if (g.min_count >= 0) o["min_count"] = g.min_count;
    o["gpus"] = g.gpus;
    if (g.milli_per_gpu != kMilliPerGpu) o["milli_per_gpu"] = g.milli_per_gpu;
    if (g.cpu_milli) o["cpu_milli"] = g.cpu_milli;
    if (g.memory_mib) o["memory_mib"] = g.memory_mib;
    if (!g.gpu_type_spec.empty()) {
      json types = json::array();
      size_t start = 0;
      for (;;) {
        size_t bar = g.gpu_type_spec.find('|', start);
        types.push_back(g.gpu_type_spec.substr(start, bar == std::string::npos ? std::string::npos : bar - start));
        if (bar == std::string::npos) break;
        start = bar + 1;
      }
      o["gpu_types"] = types;
    }
    if (g.block_tasks > 0) {
      o["block_tasks"] = g.block_tasks;
      o["block_level"] = cluster::LevelName(g.block_level);
    }
    groups.push_back(std::move(o));
  }
  j["groups"] = std::move(groups);
  return j;
}

std::string SpecFingerprint(const job::JobSpec& spec) {
  const std::string text = JobToJson(spec).dump();
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace berth::server
