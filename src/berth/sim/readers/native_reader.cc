// Berth's own trace format: JSON lines, one job per line, mirroring JobSpec
// (docs/trace-formats.md):
//   {"name":"a","submit_time_s":10,"duration_s":3600,"groups":[{"count":2,"gpus":8}]}
// Only `name` and `groups` are required; every other key has JobSpec's
// default. Unknown keys are errors (they are usually typos), and so are
// values of the wrong type or outside their range.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <vector>
#include <nlohmann/json.hpp>

#include "berth/json/json_parse.h"
#include "berth/json/service_fields.h"
#include "berth/sim/readers/native_line.h"
#include "berth/sim/readers/reader_util.h"
#include "berth/sim/readers/readers.h"

namespace berth::sim {
namespace {

using nlohmann::json;

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// Where a line is, for its errors.
struct Place {
  const std::string& path;
  int64_t line;
  std::string where = "";  // "stages[1] ('train'): " inside a workflow's stage
  Status Error(const std::string& m) const {
    return InvalidArgument(path + ":" + std::to_string(line) + ": " + where + m);
  }
};

std::string Shown(const json& v) {
  std::string s = v.dump();
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

LineResult GetInt(const Place& p, const std::string& key, const json& v, int64_t lo, int64_t hi, int64_t& out) {
  if (!v.is_number_integer()) return Bad(kWrongType, p.Error(key + ": expected an integer, found " + Shown(v)));
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(kInt64Max))
    return Bad(kOutOfRange, p.Error(key + ": " + Shown(v) + " is too large"));
  out = v.get<int64_t>();
  if (out < lo || out > hi)
    return Bad(kOutOfRange, p.Error(key + ": " + std::to_string(out) + " is outside " + std::to_string(lo) + ".." +
                                    std::to_string(hi)));
  return {};
}

template <typename T>
LineResult GetIntAs(const Place& p, const std::string& key, const json& v, int64_t lo, int64_t hi, T& out) {
  int64_t x;
  LineResult r = GetInt(p, key, v, lo, hi, x);
  if (r.ok()) out = static_cast<T>(x);
  return r;
}

// Seconds (integer or not) in [lo, kMaxTraceSeconds] (lo excluded when `open`), as microseconds.
LineResult GetSeconds(const Place& p, const std::string& key, const json& v, bool positive, TimeUs& out) {
  if (!v.is_number()) return Bad(kWrongType, p.Error(key + ": expected a number of seconds, found " + Shown(v)));
  const double s = v.get<double>();
  if (!std::isfinite(s) || s < 0 || (positive && s == 0) || s > kMaxTraceSeconds)
    return Bad(kOutOfRange, p.Error(key + ": " + Shown(v) + " s is out of range" + (positive ? " (must be > 0)" : "")));
  out = SecondsToUs(s);
  return {};
}

LineResult GetString(const Place& p, const std::string& key, const json& v, std::string& out) {
  if (!v.is_string()) return Bad(kWrongType, p.Error(key + ": expected a string, found " + Shown(v)));
  out = v.get<std::string>();
  return {};
}

// A list of non-empty names (regions), each once.
LineResult GetStringList(const Place& p, const std::string& key, const json& v, std::vector<std::string>& out) {
  if (!v.is_array()) return Bad(kWrongType, p.Error(key + ": expected an array of names, found " + Shown(v)));
  out.clear();
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string ki = key + "[" + std::to_string(i) + "]";
    std::string name;
    LineResult r = GetString(p, ki, v[i], name);
    if (!r.ok()) return r;
    if (name.empty()) return Bad(kBadValue, p.Error(ki + ": empty name"));
    for (const auto& seen : out)
      if (seen == name) return Bad(kBadValue, p.Error(ki + ": '" + name + "' appears twice"));
    out.push_back(std::move(name));
  }
  return {};
}

// A topology level by name (cluster::ParseLevel's names and aliases).
LineResult GetLevel(const Place& p, const std::string& key, const json& v, cluster::Level& out) {
  if (!v.is_string())
    return Bad(kWrongType, p.Error(key + ": expected a level name (region, cluster, spine, leaf, nvlink), found " + Shown(v)));
  auto level = cluster::ParseLevel(v.get<std::string>());
  if (!level) return Bad(kBadValue, p.Error(key + ": " + Shown(v) + " is not a level (region, cluster, spine, leaf, nvlink)"));
  out = *level;
  return {};
}

#define BERTH_RETURN_BAD(expr)              \
  do {                                      \
    ::berth::sim::LineResult _r = (expr);   \
    if (!_r.ok()) return _r;                \
  } while (0)

LineResult ParseGroup(const Place& p, const std::string& where, const json& v, job::TaskGroup& g) {
  if (!v.is_object()) return Bad(kWrongType, p.Error(where + ": expected an object, found " + Shown(v)));
  int64_t min_count = -1;
  for (const auto& [key, val] : v.items()) {
    const std::string k = where + "." + key;
    if (key == "name") {
      BERTH_RETURN_BAD(GetString(p, k, val, g.name));
    } else if (key == "count") {
      BERTH_RETURN_BAD(GetIntAs(p, k, val, 1, kInt32Max, g.count));
    } else if (key == "min_count") {
      BERTH_RETURN_BAD(GetInt(p, k, val, 1, kInt32Max, min_count));
    } else if (key == "gpus") {
      BERTH_RETURN_BAD(GetIntAs(p, k, val, 0, kInt32Max, g.gpus));
    } else if (key == "milli_per_gpu") {
      BERTH_RETURN_BAD(GetIntAs(p, k, val, 1, kMilliPerGpu, g.milli_per_gpu));
    } else if (key == "cpu_milli") {
      BERTH_RETURN_BAD(GetIntAs(p, k, val, 0, kInt64Max, g.cpu_milli));
    } else if (key == "memory_mib") {
      BERTH_RETURN_BAD(GetIntAs(p, k, val, 0, kInt64Max, g.memory_mib));
    } else if (key == "gpu_types") {
      if (!val.is_array()) return Bad(kWrongType, p.Error(k + ": expected an array of GPU type names"));
      for (size_t i = 0; i < val.size(); ++i) {
        std::string t;
        BERTH_RETURN_BAD(GetString(p, k + "[" + std::to_string(i) + "]", val[i], t));
        if (t.empty() || t.find('|') != std::string::npos)
          return Bad(kBadValue, p.Error(k + "[" + std::to_string(i) + "]: '" + t + "' is not a GPU type name"));
        g.gpu_type_spec += (i ? "|" : "") + t;
      }
    } else if (key == "block_tasks") {
      BERTH_RETURN_BAD(GetIntAs(p, k, val, 0, kInt32Max, g.block_tasks));
    } else if (key == "block_level") {
      BERTH_RETURN_BAD(GetLevel(p, k, val, g.block_level));
    } else if (key == "gpu_memory_mib") {  // GPU memory per GPU of each task
      BERTH_RETURN_BAD(GetIntAs(p, k, val, 0, job::kMaxGpuMemoryMib, g.gpu_memory_mib));
    } else if (key == "required_level" || key == "preferred_level") {
      cluster::Level level;
      BERTH_RETURN_BAD(GetLevel(p, k, val, level));
      (key == "required_level" ? g.required_level : g.preferred_level) = level;
    } else {
      return Bad(kUnknownKey, p.Error("unknown key '" + k + "'"));
    }
  }
  if (min_count > g.count)
    return Bad(kOutOfRange, p.Error(where + ".min_count: " + std::to_string(min_count) + " is above count " +
                                    std::to_string(g.count)));
  g.min_count = static_cast<int32_t>(min_count);
  return {};
}

LineResult ParseJob(const Place& p, const json& v, job::JobSpec& j) {
  if (!v.is_object()) return Bad(kBadJson, p.Error("expected one JSON object per line, found " + Shown(v)));
  bool has_name = false, has_groups = false;
  int32_t block_tasks = 0;  // job-level blocks: the default of every group without its own
  cluster::Level block_level = cluster::Level::kNvlink;
  berth::json::ServiceFields service;
  for (const auto& [key, val] : v.items()) {
    if (berth::json::ServiceFields::Handles(key)) {
      Status s = service.Parse(key, val);
      if (!s.ok()) return Bad(kBadValue, p.Error(s.message()));
    } else if (key == "name") {
      BERTH_RETURN_BAD(GetString(p, key, val, j.name));
      has_name = true;
    } else if (key == "tenant") {
      BERTH_RETURN_BAD(GetString(p, key, val, j.tenant));
    } else if (key == "queue") {
      BERTH_RETURN_BAD(GetString(p, key, val, j.queue));
    } else if (key == "priority") {
      BERTH_RETURN_BAD(GetIntAs(p, key, val, -kInt32Max, kInt32Max, j.priority));
    } else if (key == "submit_time_s") {
      BERTH_RETURN_BAD(GetSeconds(p, key, val, false, j.submit_time));
    } else if (key == "duration_s") {
      BERTH_RETURN_BAD(GetSeconds(p, key, val, false, j.duration));
    } else if (key == "runtime_limit_s") {
      BERTH_RETURN_BAD(GetSeconds(p, key, val, true, j.runtime_limit));
    } else if (key == "job_class") {
      BERTH_RETURN_BAD(GetString(p, key, val, j.job_class));
    } else if (key == "dataset") {
      BERTH_RETURN_BAD(GetString(p, key, val, j.dataset));
    } else if (key == "dataset_mib") {
      BERTH_RETURN_BAD(GetIntAs(p, key, val, 0, kInt64Max, j.dataset_mib));
    } else if (key == "checkpoint_interval_s") {
      BERTH_RETURN_BAD(GetSeconds(p, key, val, true, j.checkpoint_interval));
    } else if (key == "restart_cost_s") {
      BERTH_RETURN_BAD(GetSeconds(p, key, val, false, j.restart_cost));
    } else if (key == "resize_cost_s") {
      BERTH_RETURN_BAD(GetSeconds(p, key, val, false, j.resize_cost));
    } else if (key == "min_workers" || key == "max_workers" || key == "batch_size") {
      BERTH_RETURN_BAD(GetIntAs(p, key, val, 1, INT32_MAX,
                       key == "min_workers" ? j.min_workers : key == "max_workers" ? j.max_workers : j.batch_size));
    } else if (key == "work_steps") {
      BERTH_RETURN_BAD(GetInt(p, key, val, 1, kInt64Max, j.work_steps));
    } else if (key == "required_level" || key == "preferred_level") {
      cluster::Level level;
      BERTH_RETURN_BAD(GetLevel(p, key, val, level));
      (key == "required_level" ? j.required_level : j.preferred_level) = level;
    } else if (key == "block_tasks") {
      BERTH_RETURN_BAD(GetIntAs(p, key, val, 0, kInt32Max, block_tasks));
    } else if (key == "block_level") {
      BERTH_RETURN_BAD(GetLevel(p, key, val, block_level));
    } else if (key == "regions" || key == "avoid_regions") {
      BERTH_RETURN_BAD(GetStringList(p, key, val, key == "regions" ? j.regions : j.avoid_regions));
    } else if (key == "span_regions") {
      if (!val.is_boolean()) return Bad(kWrongType, p.Error("span_regions: expected true or false, found " + Shown(val)));
      j.span_regions = val.get<bool>();
    } else if (key == "best_effort") {
      if (!val.is_boolean()) return Bad(kWrongType, p.Error("best_effort: expected true or false, found " + Shown(val)));
      j.best_effort = val.get<bool>();
    } else if (key == "deadline_s") {
      BERTH_RETURN_BAD(GetSeconds(p, key, val, true, j.deadline));
    } else if (key == "budget_usd") {
      if (!val.is_number()) return Bad(kWrongType, p.Error("budget_usd: expected a number of US dollars, found " + Shown(val)));
      const double usd = val.get<double>();
      if (!std::isfinite(usd) || usd < 0 || usd > 1e12)
        return Bad(kOutOfRange, p.Error("budget_usd: " + Shown(val) + " is out of range"));
      j.budget_cents = static_cast<int64_t>(std::llround(usd * 100));
    } else if (key == "launcher") {
      if (!val.is_string()) return Bad(kWrongType, p.Error("launcher: expected one of torch, tf, mpi, none, found " + Shown(val)));
      auto l = job::ParseLauncher(val.get<std::string>());
      if (!l) return Bad(kBadValue, p.Error("launcher: " + Shown(val) + " is not one of torch, tf, mpi, none"));
      j.launcher = *l;
    } else if (key == "command") {
      if (!val.is_array() || val.empty())
        return Bad(kWrongType, p.Error("command: expected a non-empty array of strings (argv), found " + Shown(val)));
      for (size_t i = 0; i < val.size(); ++i) {
        std::string arg;
        BERTH_RETURN_BAD(GetString(p, "command[" + std::to_string(i) + "]", val[i], arg));
        j.command.push_back(std::move(arg));
      }
    } else if (key == "env") {
      if (!val.is_object())
        return Bad(kWrongType, p.Error("env: expected an object of NAME: \"value\" strings, found " + Shown(val)));
      for (const auto& [name, text] : val.items()) {
        std::string value;
        BERTH_RETURN_BAD(GetString(p, "env." + name, text, value));
        j.env[name] = std::move(value);
      }
    } else if (key == "groups") {
      if (!val.is_array() || val.empty())
        return Bad(kWrongType, p.Error("groups: expected a non-empty array of task groups, found " + Shown(val)));
      for (size_t i = 0; i < val.size(); ++i) {
        job::TaskGroup g;
        BERTH_RETURN_BAD(ParseGroup(p, "groups[" + std::to_string(i) + "]", val[i], g));
        j.groups.push_back(std::move(g));
      }
      has_groups = true;
    } else {
      return Bad(kUnknownKey, p.Error("unknown key '" + key + "'"));
    }
  }
  if (!has_name) return Bad(kMissingKey, p.Error("missing key 'name'"));
  if (j.name.empty()) return Bad(kBadValue, p.Error("name: empty"));
  if (!has_groups) return Bad(kMissingKey, p.Error("missing key 'groups'"));
  if (block_tasks > 0) {
    std::vector<bool> inherits;
    for (const auto& g : v.at("groups")) inherits.push_back(!g.contains("block_tasks"));
    job::ApplyJobBlocks(j, block_tasks, block_level, inherits);
  }
  if (Status s = service.Finish(j); !s.ok()) return Bad(kInvalidJob, p.Error(s.message()));
  Status valid = job::ValidateJob(j);
  if (!valid.ok()) return Bad(kInvalidJob, p.Error(valid.message()));
  return {};
}

// One stage: the stage keys, then the rest as a job (its name the stage's).
LineResult ParseStage(const Place& p, size_t i, const json& v, workload::StageSpec& s) {
  const std::string at = "stages[" + std::to_string(i) + "]";
  if (!v.is_object()) return Bad(kWrongType, p.Error(at + ": expected an object (a stage), found " + Shown(v)));
  json rest = json::object();
  for (const auto& [key, val] : v.items()) {
    const std::string k = at + "." + key;
    if (key == "depends_on") {
      BERTH_RETURN_BAD(GetStringList(p, k, val, s.depends_on));
    } else if (key == "after") {
      if (!val.is_string() || (val != "success" && val != "any"))
        return Bad(kBadValue, p.Error(k + ": expected \"success\" or \"any\", found " + Shown(val)));
      s.after = val == "any" ? workload::StageCondition::kAny : workload::StageCondition::kSuccess;
    } else if (key == "retries") {
      BERTH_RETURN_BAD(GetIntAs(p, k, val, 0, workload::kMaxRetries, s.retries));
    } else if (key == "fail_attempts") {
      BERTH_RETURN_BAD(GetIntAs(p, k, val, 0, workload::kMaxRetries + 1, s.fail_attempts));
    } else if (key == "artifact") {
      BERTH_RETURN_BAD(GetString(p, k, val, s.artifact));
    } else if (key == "submit_time_s" || key == "stages") {
      return Bad(kUnknownKey, p.Error(k + ": not a stage key (stages start when their dependencies end)"));
    } else {
      if (key == "name") BERTH_RETURN_BAD(GetString(p, k, val, s.name));
      rest[key] = val;
    }
  }
  if (s.name.empty()) return Bad(kMissingKey, p.Error(at + ": missing key 'name'"));
  Place inner{p.path, p.line, at + " ('" + s.name + "'): "};
  return ParseJob(inner, rest, s.job);
}

LineResult ParseWorkflow(const Place& p, const json& v, workload::WorkflowSpec& w) {
  bool has_name = false;
  for (const auto& [key, val] : v.items()) {
    if (key == "name") {
      BERTH_RETURN_BAD(GetString(p, key, val, w.name));
      has_name = true;
    } else if (key == "tenant") {
      BERTH_RETURN_BAD(GetString(p, key, val, w.tenant));
    } else if (key == "queue") {
      BERTH_RETURN_BAD(GetString(p, key, val, w.queue));
    } else if (key == "priority") {
      BERTH_RETURN_BAD(GetIntAs(p, key, val, -kInt32Max, kInt32Max, w.priority));
    } else if (key == "submit_time_s") {
      BERTH_RETURN_BAD(GetSeconds(p, key, val, false, w.submit_time));
    } else if (key == "stages") {
      if (!val.is_array() || val.empty())
        return Bad(kWrongType, p.Error("stages: expected a non-empty array of stages, found " + Shown(val)));
      if (val.size() > static_cast<size_t>(workload::kMaxStages))
        return Bad(kOutOfRange, p.Error("stages: more than " + std::to_string(workload::kMaxStages) + " stages"));
      for (size_t i = 0; i < val.size(); ++i) {
        workload::StageSpec s;
        BERTH_RETURN_BAD(ParseStage(p, i, val[i], s));
        w.stages.push_back(std::move(s));
      }
    } else {
      return Bad(kUnknownKey, p.Error("unknown key '" + key + "' (a workflow has name, tenant, queue, priority, "
                                      "submit_time_s and stages; job keys go in each stage)"));
    }
  }
  if (!has_name || w.name.empty()) return Bad(kMissingKey, p.Error("missing key 'name'"));
  Status valid = workload::ValidateWorkflow(w);
  if (!valid.ok()) return Bad(kInvalidJob, p.Error(valid.message()));
  return {};
}

#undef BERTH_RETURN_BAD

// A job, or a workflow when the object has `stages` (`is_workflow` says which).
LineResult ParseLine(const Place& p, const std::string& line, job::JobSpec& j, workload::WorkflowSpec& w,
                     bool& is_workflow, bool full_json) {
  is_workflow = false;
  if (!full_json) {
    if (ParsePlainJobLine(line, j)) return {};
    j = job::JobSpec{};
  }
  try {
    auto doc = berth::json::ParseUntrusted(line);
    if (!doc.ok()) return Bad(kBadJson, p.Error("not valid JSON: " + doc.status().message()));
    is_workflow = doc->is_object() && doc->contains("stages");
    return is_workflow ? ParseWorkflow(p, *doc, w) : ParseJob(p, *doc, j);
  } catch (const json::exception& e) {
    return Bad(kBadJson, p.Error(std::string("not valid JSON: ") + e.what()));
  }
}

// Lines in the file (a cheap first pass, so that the job list is allocated
// once at its size instead of growing by doubling: a trace of millions of
// jobs would otherwise hold up to twice its size while it grows).
int64_t CountLines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> buf(1 << 20);
  int64_t lines = 0;
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    lines += std::count(buf.data(), buf.data() + in.gcount(), '\n');
  }
  return lines + 1;
}

}  // namespace

NativeJobReader::NativeJobReader(std::string path, ReadOptions opts, bool check_names)
    : path_(std::move(path)),
      opts_(std::move(opts)),
      check_names_(check_names),
      in_(path_),
      names_(check_names ? std::make_unique<NameSet>() : nullptr) {}

NativeJobReader::~NativeJobReader() = default;

StatusOr<std::unique_ptr<NativeJobReader>> NativeJobReader::Open(const std::string& path, const ReadOptions& opts,
                                                                 bool check_names) {
  std::unique_ptr<NativeJobReader> r(new NativeJobReader(path, opts, check_names));
  if (!r->in_) return NotFound(path + ": cannot open file");
  return r;
}

StatusOr<bool> NativeJobReader::Next(job::JobSpec& out) {
  if (opts_.max_jobs >= 0 && jobs_ >= opts_.max_jobs) return false;
  std::string line;
  while (std::getline(in_, line)) {
    ++line_no_;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    ++report_.lines;
    if (next_skip_ < skip_.size() && skip_[next_skip_] == line_no_) {
      ++next_skip_;
      continue;
    }
    const Place place{path_, line_no_};
    job::JobSpec j;
    workload::WorkflowSpec w;
    bool is_workflow = false;
    LineResult r = ParseLine(place, line, j, w, is_workflow, opts_.full_json);
    if (r.ok() && check_names_) {
      const std::string& name = is_workflow ? w.name : j.name;
      if (int64_t first = names_->Add(name, line_no_)) {
        r = Bad(kDuplicate, place.Error("name: '" + name + "' already on line " + std::to_string(first)));
        duplicates_.push_back(line_no_);
      }
    }
    if (r.ok() && is_workflow) {
      workflows_.push_back(std::move(w));
      continue;
    }
    if (!r.ok()) {
      BERTH_RETURN_IF_ERROR(HandleBadLine(opts_, report_, r.status, r.reason));
      continue;
    }
    j.id = JobId(jobs_++);
    out = std::move(j);
    return true;
  }
  if (in_.bad()) return Internal(path_ + ": read error");
  return false;
}

StatusOr<Trace> ReadNative(const std::string& path, const ReadOptions& opts) {
  BERTH_ASSIGN_OR_RETURN(std::unique_ptr<NativeJobReader> reader, NativeJobReader::Open(path, opts));
  Trace t;
  t.format = "native";
  const int64_t lines = CountLines(path);
  t.jobs.reserve(static_cast<size_t>(opts.max_jobs >= 0 ? std::min(opts.max_jobs, lines) : lines));
  job::JobSpec j;
  while (true) {
    BERTH_ASSIGN_OR_RETURN(const bool more, reader->Next(j));
    if (!more) break;
    t.jobs.push_back(std::move(j));
  }
  t.report = std::move(reader->report());
  t.workflows = std::move(reader->workflows());
  BERTH_RETURN_IF_ERROR(FinishRead(path, t, /*has_header=*/false));
  return t;
}

}  // namespace berth::sim
