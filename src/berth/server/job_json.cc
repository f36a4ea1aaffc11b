// Strict JSON <-> JobSpec mapping for the API.
#include "berth/server/job_json.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "berth/common/identifier.h"
#include "berth/common/k8s_quantity.h"
#include "berth/job/priority_class.h"
#include "berth/json/json_parse.h"
#include "berth/json/json_values.h"
#include "berth/json/service_fields.h"

namespace berth::server {
namespace {

using nlohmann::json;

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
// Longest duration accepted: 10 years.
constexpr double kMaxSeconds = 10.0 * 365 * 24 * 3600;

// At most 40 characters of a value, without serializing it whole.
using berth::json::Shown;
// A key as named in an error: itself, or a cut JSON string when long.
std::string ShownKey(const std::string& key) { return key.size() <= 64 ? key : berth::json::ExcerptText(key, 60); }

using berth::json::GetInt;
using berth::json::GetIntAs;

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
  const auto& text = v.get_ref<const std::string&>();
  if (text.size() > kMaxStringHard)
    return InvalidArgument(key + ": longer than " + std::to_string(kMaxStringHard) + " bytes");
  BERTH_RETURN_IF_ERROR(CheckIdentifier(key, text));
  out = text;
  return Status::Ok();
}

// Free text for a process (an argv element, an environment value): like
// GetString, but tabs and newlines are allowed (a `python3 -c` script).
Status GetText(const std::string& key, const json& v, std::string& out) {
  if (!v.is_string()) return InvalidArgument(key + ": expected a string, found " + Shown(v));
  const auto& text = v.get_ref<const std::string&>();
  if (text.size() > kMaxStringHard)
    return InvalidArgument(key + ": longer than " + std::to_string(kMaxStringHard) + " bytes");
  std::string shown = text;
  for (char& c : shown)
    if (c == '\n' || c == '\t') c = ' ';
  BERTH_RETURN_IF_ERROR(CheckIdentifier(key, shown));
  out = text;
  return Status::Ok();
}

// `command`: a non-empty argv array of strings.
Status GetCommand(const json& v, std::vector<std::string>& out) {
  if (!v.is_array() || v.empty())
    return InvalidArgument("command: expected a non-empty array of strings (argv), found " + Shown(v));
  if (v.size() > job::kMaxCommandArgs)
    return InvalidArgument("command: more than " + std::to_string(job::kMaxCommandArgs) + " arguments");
  out.clear();
  for (size_t i = 0; i < v.size(); ++i) {
    std::string arg;
    BERTH_RETURN_IF_ERROR(GetText("command[" + std::to_string(i) + "]", v[i], arg));
    out.push_back(std::move(arg));
  }
  if (out.front().empty()) return InvalidArgument("command[0]: empty program name");
  return Status::Ok();
}

// `env`: an object of variable name -> string value.
Status GetEnv(const json& v, std::map<std::string, std::string>& out) {
  if (!v.is_object()) return InvalidArgument("env: expected an object of NAME: \"value\" strings, found " + Shown(v));
  if (v.size() > job::kMaxEnvVars)
    return InvalidArgument("env: more than " + std::to_string(job::kMaxEnvVars) + " variables");
  out.clear();
  for (const auto& [name, val] : v.items()) {
    const std::string k = "env." + ShownKey(name);
    if (!job::IsEnvName(name)) return InvalidArgument(k + ": not a variable name ([A-Za-z_][A-Za-z0-9_]*)");
    std::string text;
    BERTH_RETURN_IF_ERROR(GetText(k, val, text));
    out[name] = std::move(text);
  }
  return Status::Ok();
}

// A list of non-empty names (regions), each once.
Status GetStringList(const std::string& key, const json& v, std::vector<std::string>& out) {
  if (!v.is_array()) return InvalidArgument(key + ": expected an array of names, found " + Shown(v));
  out.clear();
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string ki = key + "[" + std::to_string(i) + "]";
    std::string name;
    BERTH_RETURN_IF_ERROR(GetString(ki, v[i], name));
    if (name.empty()) return InvalidArgument(ki + ": empty name");
    for (const auto& seen : out)
      if (seen == name) return InvalidArgument(ki + ": '" + name + "' appears twice");
    out.push_back(std::move(name));
  }
  return Status::Ok();
}

// `span_part`: {"index", "parts", "world_size", "rank_offset"} (job.h,
// JobSpec::SpanPart); checked against the job's tasks once groups are read.
Status GetSpanPart(const json& v, job::JobSpec::SpanPart& out) {
  if (!v.is_object())
    return InvalidArgument("span_part: expected an object {index, parts, world_size, rank_offset}, found " + Shown(v));
  bool has[4] = {false, false, false, false};
  for (const auto& [key, val] : v.items()) {
    const std::string k = "span_part." + ShownKey(key);
    if (key == "index") {
      BERTH_RETURN_IF_ERROR(GetIntAs(k, val, 0, kMaxTasksHard, out.index));
      has[0] = true;
    } else if (key == "parts") {
      BERTH_RETURN_IF_ERROR(GetIntAs(k, val, 2, kMaxTasksHard, out.parts));
      has[1] = true;
    } else if (key == "world_size") {
      BERTH_RETURN_IF_ERROR(GetIntAs(k, val, 2, kMaxTasksHard, out.world_size));
      has[2] = true;
    } else if (key == "rank_offset") {
      BERTH_RETURN_IF_ERROR(GetIntAs(k, val, 0, kMaxTasksHard, out.rank_offset));
      has[3] = true;
    } else {
      return InvalidArgument("unknown field '" + k + "'");
    }
  }
  const char* names[4] = {"index", "parts", "world_size", "rank_offset"};
  for (int i = 0; i < 4; ++i)
    if (!has[i]) return InvalidArgument(std::string("span_part.") + names[i] + ": missing");
  if (out.index >= out.parts)
    return InvalidArgument("span_part.index: " + std::to_string(out.index) + " is not below parts (" +
                           std::to_string(out.parts) + ")");
  return Status::Ok();
}

// US dollars (a number >= 0, at most 10^12) as whole cents.
Status GetUsd(const std::string& key, const json& v, int64_t& cents) {
  if (!v.is_number()) return InvalidArgument(key + ": expected a number of US dollars, found " + Shown(v));
  const double usd = v.get<double>();
  if (!std::isfinite(usd) || usd < 0 || usd > 1e12) return InvalidArgument(key + ": " + Shown(v) + " is out of range");
  cents = static_cast<int64_t>(std::llround(usd * 100));
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

// A whole number given as a JSON integer or as a Kubernetes quantity string
// without a fraction ("8", "1k"): `gpus`.
Status GetCount(const std::string& key, const json& v, int64_t lo, int64_t hi, int64_t& out) {
  if (!v.is_string()) return GetInt(key, v, lo, hi, out);
  const std::string& text = v.get_ref<const std::string&>();
  StatusOr<int64_t> milli = ParseK8sQuantity(text, 1000);
  if (!milli.ok()) return InvalidArgument(key + ": " + milli.status().message());
  if (*milli % 1000 != 0) return InvalidArgument(key + ": " + Shown(v) + " is not a whole number");
  if (*milli / 1000 < lo || *milli / 1000 > hi)
    return InvalidArgument(key + ": " + Shown(v) + " is out of range (" + std::to_string(lo) + ".." +
                           std::to_string(hi) + ")");
  out = *milli / 1000;
  return Status::Ok();
}

// A Kubernetes resource as in a pod's requests: a quantity string ("500m",
// "2", "256Gi") or a JSON number of the base unit (cores, bytes), times
// `scale` and divided by `unit`, rounded up: cpu -> milli-CPU (scale 1000),
// memory -> MiB (unit 2^20).
Status GetResource(const std::string& key, const json& v, int64_t scale, int64_t unit, int64_t& out) {
  std::string text;
  if (v.is_string()) {
    text = v.get<std::string>();
  } else if (v.is_number()) {
    text = v.dump();  // 2, 1.5, 1e3: the quantity grammar reads JSON numbers
  } else {
    return InvalidArgument(key + ": expected a quantity such as \"500m\", \"2\" or \"256Gi\", found " + Shown(v));
  }
  StatusOr<int64_t> base = ParseK8sQuantity(text, scale);
  if (!base.ok()) return InvalidArgument(key + ": " + base.status().message());
  out = *base / unit + (*base % unit != 0 ? 1 : 0);
  return Status::Ok();
}

// An integer field given a quantity string: say which field takes it.
Status QuantityInIntegerField(const std::string& key, const json& v, const char* instead) {
  return InvalidArgument(key + ": expected an integer, found " + Shown(v) + " (for a Kubernetes quantity use \"" +
                         instead + "\": " + Shown(v) + ")");
}

Status ParseGroup(const std::string& where, const json& v, job::TaskGroup& g) {
  if (!v.is_object()) return InvalidArgument(where + ": expected an object, found " + Shown(v));
  int64_t min_count = -1;
  bool has_cpu = false, has_memory = false;
  for (const auto& [key, val] : v.items()) {
    const std::string k = where + "." + ShownKey(key);
    if (key == "name") {
      BERTH_RETURN_IF_ERROR(GetString(k, val, g.name));
    } else if (key == "count") {
      BERTH_RETURN_IF_ERROR(GetIntAs(k, val, 1, kMaxTasksHard, g.count));
    } else if (key == "min_count") {
      BERTH_RETURN_IF_ERROR(GetInt(k, val, 1, kMaxTasksHard, min_count));
    } else if (key == "gpus") {
      int64_t gpus = 0;
      BERTH_RETURN_IF_ERROR(GetCount(k, val, 0, 64, gpus));
      g.gpus = static_cast<int32_t>(gpus);
    } else if (key == "milli_per_gpu") {
      BERTH_RETURN_IF_ERROR(GetIntAs(k, val, 1, kMilliPerGpu, g.milli_per_gpu));
    } else if (key == "cpu_milli" || key == "cpu") {
      if (has_cpu) return InvalidArgument(k + ": give one of cpu (a quantity) and cpu_milli, not both");
      has_cpu = true;
      if (key == "cpu_milli" && val.is_string()) return QuantityInIntegerField(k, val, "cpu");
      int64_t milli = 0;
      BERTH_RETURN_IF_ERROR(key == "cpu" ? GetResource(k, val, 1000, 1, milli) : GetInt(k, val, 0, kInt64Max, milli));
      g.cpu_milli = milli;
    } else if (key == "memory_mib" || key == "memory") {
      if (has_memory) return InvalidArgument(k + ": give one of memory (a quantity) and memory_mib, not both");
      has_memory = true;
      if (key == "memory_mib" && val.is_string()) return QuantityInIntegerField(k, val, "memory");
      int64_t mib = 0;
      BERTH_RETURN_IF_ERROR(key == "memory" ? GetResource(k, val, 1, int64_t{1} << 20, mib)
                                            : GetInt(k, val, 0, kInt64Max, mib));
      g.memory_mib = mib;
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
      BERTH_RETURN_IF_ERROR(GetIntAs(k, val, 0, kMaxTasksHard, g.block_tasks));
    } else if (key == "block_level") {
      BERTH_RETURN_IF_ERROR(GetLevel(k, val, g.block_level));
    } else if (key == "gpu_memory_mib") {  // GPU memory per GPU of each task
      BERTH_RETURN_IF_ERROR(GetIntAs(k, val, 0, job::kMaxGpuMemoryMib, g.gpu_memory_mib));
    } else if (key == "required_level" || key == "preferred_level") {
      cluster::Level level;
      BERTH_RETURN_IF_ERROR(GetLevel(k, val, level));
      (key == "required_level" ? g.required_level : g.preferred_level) = level;
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

StatusOr<JobSubmission> ParseJobJson(const json& v, JobSource source) {
  if (!v.is_object()) return InvalidArgument("expected a JSON object (a job), found " + Shown(v));
  JobSubmission out;
  job::JobSpec& j = out.spec;
  bool has_name = false, has_groups = false, has_priority = false;
  int32_t block_tasks = 0;  // job-level blocks: the default of every group without its own
  cluster::Level block_level = cluster::Level::kNvlink;
  std::string priority_class;
  berth::json::ServiceFields service;
  for (const auto& [key, val] : v.items()) {
    if (berth::json::ServiceFields::Handles(key)) {
      BERTH_RETURN_IF_ERROR(service.Parse(key, val));
    } else if (key == "name") {
      BERTH_RETURN_IF_ERROR(GetString(key, val, j.name));
      has_name = true;
    } else if (key == "tenant") {
      BERTH_RETURN_IF_ERROR(GetString(key, val, j.tenant));
    } else if (key == "queue") {
      BERTH_RETURN_IF_ERROR(GetString(key, val, j.queue));
    } else if (key == "priority") {
      BERTH_RETURN_IF_ERROR(GetIntAs(key, val, -kInt32Max, kInt32Max, j.priority));
      has_priority = true;
    } else if (key == "priority_class") {
      BERTH_RETURN_IF_ERROR(GetString(key, val, priority_class));
      if (priority_class.empty()) return InvalidArgument("priority_class: empty (omit it instead)");
    } else if (key == "submit_time_s") {
      if (source == JobSource::kApi)
        return InvalidArgument(
            "submit_time_s: not accepted by the API (the service orders jobs by when it accepts them; "
            "arrival times are for traces replayed by berth simulate): drop the field");
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
    } else if (key == "resize_cost_s") {
      BERTH_RETURN_IF_ERROR(GetSeconds(key, val, false, j.resize_cost));
    } else if (key == "min_workers" || key == "max_workers" || key == "batch_size") {
      BERTH_RETURN_IF_ERROR(GetIntAs(key, val, 1, INT32_MAX,
                       key == "min_workers" ? j.min_workers : key == "max_workers" ? j.max_workers : j.batch_size));
    } else if (key == "work_steps") {
      BERTH_RETURN_IF_ERROR(GetInt(key, val, 1, kInt64Max, j.work_steps));
    } else if (key == "required_level" || key == "preferred_level") {
      cluster::Level level;
      BERTH_RETURN_IF_ERROR(GetLevel(key, val, level));
      (key == "required_level" ? j.required_level : j.preferred_level) = level;
    } else if (key == "block_tasks") {
      BERTH_RETURN_IF_ERROR(GetIntAs(key, val, 0, kMaxTasksHard, block_tasks));
    } else if (key == "block_level") {
      BERTH_RETURN_IF_ERROR(GetLevel(key, val, block_level));
    } else if (key == "regions" || key == "avoid_regions") {
      BERTH_RETURN_IF_ERROR(GetStringList(key, val, key == "regions" ? j.regions : j.avoid_regions));
    } else if (key == "span_regions") {
      if (!val.is_boolean()) return InvalidArgument("span_regions: expected true or false, found " + Shown(val));
      j.span_regions = val.get<bool>();
    } else if (key == "span_part") {
      job::JobSpec::SpanPart part;
      BERTH_RETURN_IF_ERROR(GetSpanPart(val, part));
      j.span_part = part;
    } else if (key == "best_effort") {
      if (!val.is_boolean()) return InvalidArgument("best_effort: expected true or false, found " + Shown(val));
      j.best_effort = val.get<bool>();
    } else if (key == "deadline_s") {
      BERTH_RETURN_IF_ERROR(GetSeconds(key, val, true, j.deadline));
    } else if (key == "budget_usd") {
      BERTH_RETURN_IF_ERROR(GetUsd(key, val, j.budget_cents));
    } else if (key == "launcher") {
      if (!val.is_string()) return InvalidArgument("launcher: expected one of torch, tf, mpi, none, found " + Shown(val));
      auto l = job::ParseLauncher(val.get<std::string>());
      if (!l) return InvalidArgument("launcher: " + Shown(val) + " is not one of torch, tf, mpi, none");
      j.launcher = *l;
    } else if (key == "command") {
      BERTH_RETURN_IF_ERROR(GetCommand(val, j.command));
    } else if (key == "env") {
      BERTH_RETURN_IF_ERROR(GetEnv(val, j.env));
    } else if (key == "idempotency_key") {
      BERTH_RETURN_IF_ERROR(GetString(key, val, out.idempotency_key));
      if (out.idempotency_key.empty()) return InvalidArgument("idempotency_key: empty (omit it instead)");
    } else if (key == "groups") {
      if (!val.is_array() || val.empty())
        return InvalidArgument("groups: expected a non-empty array of task groups, found " + Shown(val));
      if (val.size() > static_cast<size_t>(kMaxGroupsHard))
        return InvalidArgument("groups: more than " + std::to_string(kMaxGroupsHard) + " groups");
      for (size_t i = 0; i < val.size(); ++i) {
        job::TaskGroup g;
        BERTH_RETURN_IF_ERROR(ParseGroup("groups[" + std::to_string(i) + "]", val[i], g));
        j.groups.push_back(std::move(g));
      }
      has_groups = true;
    } else {
      return InvalidArgument("unknown field '" + ShownKey(key) + "'");
    }
  }
  if (!priority_class.empty()) {
    const std::optional<int32_t> p = job::PriorityOfClass(priority_class);
    if (!p)
      return InvalidArgument("priority_class: '" + priority_class + "' is not a known class (" +
                             std::string(job::PriorityClassNames()) + "), or give \"priority\": N");
    if (has_priority && j.priority != *p)
      return InvalidArgument("priority_class: '" + priority_class + "' is priority " + std::to_string(*p) +
                             ", but priority is " + std::to_string(j.priority) + ": give one, or both agreeing");
    j.priority = *p;
  }
  if (!has_name) return InvalidArgument("name: missing (every job needs a name)");
  if (j.name.empty()) return InvalidArgument("name: empty");
  if (!has_groups) return InvalidArgument("groups: missing (every job needs at least one task group)");
  int64_t tasks = 0;
  for (const auto& g : j.groups) tasks += g.count;
  if (tasks > kMaxTasksHard)
    return InvalidArgument("groups: more than " + std::to_string(kMaxTasksHard) + " tasks in one job");
  if (j.span_part && j.span_part->rank_offset + tasks > j.span_part->world_size)
    return InvalidArgument("span_part.rank_offset: ranks " + std::to_string(j.span_part->rank_offset) + ".." +
                           std::to_string(j.span_part->rank_offset + tasks - 1) + " of this part's " +
                           std::to_string(tasks) + " tasks are not within world_size " +
                           std::to_string(j.span_part->world_size));
  if (block_tasks > 0) {
    std::vector<bool> inherits;
    for (const auto& g : v.at("groups")) inherits.push_back(!g.contains("block_tasks"));
    job::ApplyJobBlocks(j, block_tasks, block_level, inherits);
  }
  BERTH_RETURN_IF_ERROR(service.Finish(j));
  BERTH_RETURN_IF_ERROR(job::ValidateJob(j));
  return out;
}

StatusOr<JobSubmission> ParseJobBody(const std::string& body, JobSource source) {
  BERTH_ASSIGN_OR_RETURN(json v, berth::json::ParseUntrusted(body));
  return ParseJobJson(v, source);
}

Status AdmissionLimits::Validate() const {
  if (max_tasks_per_job < 1 || max_tasks_per_job > kMaxTasksHard)
    return InvalidArgument("--max-tasks-per-job must be in 1.." + std::to_string(kMaxTasksHard));
  if (max_groups_per_job < 1 || max_groups_per_job > kMaxGroupsHard)
    return InvalidArgument("--max-groups-per-job must be in 1.." + std::to_string(kMaxGroupsHard));
  if (max_name_bytes < 1 || max_name_bytes > kMaxStringHard)
    return InvalidArgument("--max-name-bytes must be in 1.." + std::to_string(kMaxStringHard));
  if (max_label_bytes < 1 || max_label_bytes > kMaxStringHard)
    return InvalidArgument("--max-label-bytes must be in 1.." + std::to_string(kMaxStringHard));
  return Status::Ok();
}

Status CheckAdmissionLimits(const job::JobSpec& spec, const std::string& idempotency_key,
                            const AdmissionLimits& limits) {
  auto over = [](const std::string& what, const std::string& detail, const char* flag) {
    return ResourceExhausted(what + " " + detail + " (the limit; berth serve " + flag + ")");
  };
  auto check = [&](const std::string& where, const std::string& text, size_t max, const char* flag) -> Status {
    if (text.size() <= max) return Status::Ok();
    return over(where + ": " + std::to_string(text.size()) + " bytes is over", std::to_string(max) + " bytes", flag);
  };
  BERTH_RETURN_IF_ERROR(check("name", spec.name, limits.max_name_bytes, "--max-name-bytes"));
  BERTH_RETURN_IF_ERROR(check("idempotency_key", idempotency_key, limits.max_name_bytes, "--max-name-bytes"));
  for (const auto& [where, text] : {std::pair<const char*, const std::string*>{"tenant", &spec.tenant},
                                    {"queue", &spec.queue},
                                    {"job_class", &spec.job_class},
                                    {"dataset", &spec.dataset}})
    BERTH_RETURN_IF_ERROR(check(where, *text, limits.max_label_bytes, "--max-label-bytes"));
  if (static_cast<int64_t>(spec.groups.size()) > limits.max_groups_per_job)
    return over("groups: " + std::to_string(spec.groups.size()) + " task groups is over",
                std::to_string(limits.max_groups_per_job), "--max-groups-per-job");
  int64_t tasks = 0;
  for (size_t i = 0; i < spec.groups.size(); ++i) {
    const auto& g = spec.groups[i];
    const std::string where = "groups[" + std::to_string(i) + "]";
    BERTH_RETURN_IF_ERROR(check(where + ".name", g.name, limits.max_label_bytes, "--max-label-bytes"));
    BERTH_RETURN_IF_ERROR(check(where + ".gpu_types", g.gpu_type_spec, limits.max_label_bytes, "--max-label-bytes"));
    tasks += g.count;
  }
  if (tasks > limits.max_tasks_per_job)
    return over("groups: " + std::to_string(tasks) + " tasks in one job is over",
                std::to_string(limits.max_tasks_per_job), "--max-tasks-per-job");
  return Status::Ok();
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
  if (s.min_workers > 0) j["min_workers"] = s.min_workers;
  if (s.max_workers > 0) j["max_workers"] = s.max_workers;
  if (s.resize_cost >= 0) j["resize_cost_s"] = UsToSeconds(s.resize_cost);
  if (s.batch_size > 0) j["batch_size"] = s.batch_size;
  if (s.work_steps > 0) j["work_steps"] = s.work_steps;
  if (s.required_level) j["required_level"] = cluster::LevelName(*s.required_level);
  if (s.preferred_level) j["preferred_level"] = cluster::LevelName(*s.preferred_level);
  if (!s.regions.empty()) j["regions"] = s.regions;
  if (!s.avoid_regions.empty()) j["avoid_regions"] = s.avoid_regions;
  if (s.span_regions) j["span_regions"] = true;
  if (s.span_part)
    j["span_part"] = {{"index", s.span_part->index},
                      {"parts", s.span_part->parts},
                      {"world_size", s.span_part->world_size},
                      {"rank_offset", s.span_part->rank_offset}};
  if (s.best_effort) j["best_effort"] = true;
  if (s.deadline > 0) j["deadline_s"] = UsToSeconds(s.deadline);
  if (s.budget_cents >= 0) j["budget_usd"] = static_cast<double>(s.budget_cents) / 100.0;
  if (s.launcher != job::Launcher::kNone) j["launcher"] = job::LauncherName(s.launcher);
  if (!s.command.empty()) j["command"] = s.command;
  if (!s.env.empty()) j["env"] = s.env;
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
    if (g.gpu_memory_mib > 0) o["gpu_memory_mib"] = g.gpu_memory_mib;
    if (g.required_level) o["required_level"] = cluster::LevelName(*g.required_level);
    if (g.preferred_level) o["preferred_level"] = cluster::LevelName(*g.preferred_level);
    groups.push_back(std::move(o));
  }
  j["groups"] = std::move(groups);
  berth::json::ServiceToJson(s, j);
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

StatusOr<int64_t> ParseLoadReport(const std::string& body) {
  StatusOr<nlohmann::json> v = berth::json::ParseUntrusted(body);
  if (!v.ok()) return v.status();
  if (!v->is_object() || !v->contains("requests_per_s") || v->size() != 1)
    return InvalidArgument("expected {\"requests_per_s\": R} (R >= 0)");
  const nlohmann::json& r = (*v)["requests_per_s"];
  if (!r.is_number() || !std::isfinite(r.get<double>()) || r.get<double>() < 0 || r.get<double>() > 1e9)
    return InvalidArgument("requests_per_s: expected a number in 0..1e9");
  return std::llround(r.get<double>() * 1000);
}

}  // namespace berth::server
