// The scenario runner: tokenizing, argument access, dispatch by command name,
// and the objects a script drives (cluster, policy, scheduler, clock, jobs).
#include "berth/testing/scenario.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "berth/cluster/loaders.h"
#include "berth/common/csv.h"
#include "berth/plugins/builtin.h"
#include "berth/testing/paths.h"

namespace berth::testing {

// ---------------------------------------------------------------- arguments

const ScenarioArgs::Pair* ScenarioArgs::Find(std::string_view key) {
  for (Pair& p : pairs_) {
    if (p.key == key) {
      p.used = true;
      return &p;
    }
  }
  return nullptr;
}

std::optional<std::string> ScenarioArgs::Get(std::string_view key) {
  const Pair* p = Find(key);
  if (!p) return std::nullopt;
  return p->value;
}

StatusOr<std::optional<int64_t>> ScenarioArgs::GetInt(std::string_view key) {
  auto v = Get(key);
  if (!v) return std::optional<int64_t>();
  int64_t out = 0;
  if (!ParseInt64(*v, out).ok()) return InvalidArgument(std::string(key) + ": expected an integer, got '" + *v + "'");
  return std::optional<int64_t>(out);
}

StatusOr<std::optional<double>> ScenarioArgs::GetNumber(std::string_view key) {
  auto v = Get(key);
  if (!v) return std::optional<double>();
  double out = 0;
  if (!ParseDouble(*v, out).ok() || !std::isfinite(out))
    return InvalidArgument(std::string(key) + ": expected a number, got '" + *v + "'");
  return std::optional<double>(out);
}

StatusOr<std::optional<TimeUs>> ScenarioArgs::GetTime(std::string_view key) {
  auto v = Get(key);
  if (!v) return std::optional<TimeUs>();
  auto t = ParseScenarioTime(*v);
  if (!t.ok()) return InvalidArgument(std::string(key) + ": " + t.status().message());
  return std::optional<TimeUs>(*t);
}

Status ScenarioArgs::CheckAllUsed() const {
  for (const Pair& p : pairs_)
    if (!p.used) return InvalidArgument("unknown argument '" + p.key + "'");
  return Status::Ok();
}

StatusOr<TimeUs> ParseScenarioTime(std::string_view text) {
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"ms", 1e-3}, {"us", 1e-6}, {"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}};
  double scale = 1;
  std::string_view number = text;
  for (const auto& [suffix, s] : kUnits) {
    if (text.size() > suffix.size() && text.substr(text.size() - suffix.size()) == suffix) {
      // "ms" must win over "s": the table lists the longer suffixes first.
      number = text.substr(0, text.size() - suffix.size());
      scale = s;
      break;
    }
  }
  double v = 0;
  if (!ParseDouble(number, v).ok() || v < 0 || !std::isfinite(v))
    return InvalidArgument("expected a duration such as 90s, 5m, 2h, got '" + std::string(text) + "'");
  return SecondsToUs(v * scale);
}

StatusOr<std::vector<std::string>> TokenizeScenarioLine(std::string_view line) {
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false, quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '\\' && i + 1 < line.size()) cur += line[++i];
      else if (c == '"') quoted = false;
      else cur += c;
      continue;
    }
    if (c == '#') break;
    if (c == ' ' || c == '\t' || c == '\r') {
      if (in_word) out.push_back(std::move(cur)), cur.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '"') quoted = true;
    else cur += c;
  }
  if (quoted) return InvalidArgument("unterminated quote");
  if (in_word) out.push_back(std::move(cur));
  return out;
}

// ------------------------------------------------------------------ runner

ScenarioRunner::ScenarioRunner() {
  Status s = plugins::RegisterBuiltinPlugins(plugins_);
  if (s.ok()) s = plugins::RegisterBuiltinPolicies(policies_);
  if (!s.ok()) std::cerr << "scenario runner: " << s.ToString() << "\n";
  RegisterScenarioCommands(*this);
  RegisterScenarioExpectations(*this);
  RegisterScenarioQueueCommands(*this);
  RegisterScenarioFaultCommands(*this);
  RegisterScenarioWorkflowCommands(*this);
}

ScenarioRunner::~ScenarioRunner() = default;

std::ostream& ScenarioRunner::out() { return out_ ? *out_ : std::cout; }

Status ScenarioRunner::RunFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot open scenario");
  std::ostringstream text;
  text << in.rdbuf();
  return Run(text.str(), path, std::filesystem::path(path).parent_path().string());
}

Status ScenarioRunner::Run(std::string_view text, std::string_view name, std::string base_dir) {
  base_dir_ = std::move(base_dir);
  size_t start = 0;
  int line_no = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    ++line_no;
    Status s = RunLine(line);
    if (!s.ok()) {
      while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
      while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
      return Status(s.code(), std::string(name) + ":" + std::to_string(line_no) + ": " + std::string(line) + ": " +
                                  s.message());
    }
    if (end == text.size()) break;
    start = end + 1;
  }
  return Status::Ok();
}

Status ScenarioRunner::RunLine(std::string_view line) {
  BERTH_ASSIGN_OR_RETURN(std::vector<std::string> tokens, TokenizeScenarioLine(line));
  if (tokens.empty()) return Status::Ok();
  return RunCommand(tokens);
}

Status ScenarioRunner::RunCommand(const std::vector<std::string>& tokens) {
  if (tokens.empty()) return InvalidArgument("empty command");
  const Handler* handler = nullptr;
  size_t first_arg = 1;
  if (tokens[0] == "expect") {
    if (tokens.size() < 2) return InvalidArgument("expect what?");
    auto it = expectations_.find(tokens[1]);
    if (it == expectations_.end()) {
      std::string known;
      for (const auto& [n, h] : expectations_) known += (known.empty() ? "" : ", ") + n;
      return InvalidArgument("unknown expectation '" + tokens[1] + "' (known: " + known + ")");
    }
    handler = &it->second;
    first_arg = 2;
  } else {
    auto it = commands_.find(tokens[0]);
    if (it == commands_.end()) {
      std::string known;
      for (const auto& [n, h] : commands_) known += (known.empty() ? "" : ", ") + n;
      return InvalidArgument("unknown command '" + tokens[0] + "' (known: expect, " + known + ")");
    }
    handler = &it->second;
  }
  ScenarioArgs args;
  for (size_t i = first_arg; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    args.raw().push_back(t);
    const size_t op = t.find_first_of("=~");
    if (op == std::string::npos) {
      args.words().push_back(t);
    } else {
      args.pairs().push_back({t.substr(0, op), t[op], t.substr(op + 1), false});
    }
  }
  BERTH_RETURN_IF_ERROR((*handler)(*this, args));
  BERTH_RETURN_IF_ERROR(args.CheckAllUsed());
  if (in_after_hooks_) return Status::Ok();
  in_after_hooks_ = true;
  Status hooked = Status::Ok();
  for (auto& hook : after_hooks_) {
    hooked = hook(*this);
    if (!hooked.ok()) break;
  }
  in_after_hooks_ = false;
  return hooked;
}

std::string ScenarioRunner::ResolvePath(const std::string& path) const {
  namespace fs = std::filesystem;
  if (fs::path(path).is_absolute()) return path;
  if (!base_dir_.empty() && fs::exists(fs::path(base_dir_) / path)) return (fs::path(base_dir_) / path).string();
  return (fs::path(SourceDir()) / path).string();
}

Status ScenarioRunner::SetCluster(const std::string& source) {
  if (sched_) return FailedPrecondition("the cluster is fixed once jobs run (use reset first)");
  // Files are told apart by their ending; anything else is a compact spec
  // (which may hold '/' and '=' for its options).
  const bool is_file = source.ends_with(".yaml") || source.ends_with(".yml") || source.ends_with(".csv") ||
                       source.ends_with(".tar.gz");
  BERTH_ASSIGN_OR_RETURN(cluster::Cluster c, cluster::LoadCluster(is_file ? ResolvePath(source) : source));
  cluster_ = std::make_unique<cluster::Cluster>(std::move(c));
  return Status::Ok();
}

Status ScenarioRunner::SetPolicy(const std::string& name) {
  if (sched_) return FailedPrecondition("the policy is fixed once jobs run (use reset first)");
  BERTH_RETURN_IF_ERROR(policies_.Find(name).status());
  policy_ = name;
  return Status::Ok();
}

StatusOr<scheduler::Scheduler*> ScenarioRunner::Sched() {
  if (sched_) return sched_.get();
  if (!cluster_) return FailedPrecondition("no cluster yet (start the script with: cluster SPEC|FILE)");
  BERTH_ASSIGN_OR_RETURN(framework::Profile profile, policies_.Find(policy_));
  scheduler::SchedulerOptions o;
  o.seed = seed_;
  o.check_indexes = true;  // every Apply is verified against a recomputation
  o.elastic_resize = true;  // as the simulator runs elastic jobs
  for (const SetupHook& hook : setup_hooks_) BERTH_RETURN_IF_ERROR(hook(*this, profile, o));
  framework::PluginContext context;
  context.cluster = &*cluster_;
  BERTH_ASSIGN_OR_RETURN(std::unique_ptr<framework::Framework> fw,
                         framework::Framework::Create(profile, plugins_, context));
  sched_ = std::make_unique<scheduler::Scheduler>(*cluster_, std::move(fw), std::move(o), clock_);
  return sched_.get();
}

void ScenarioRunner::Reset() {
  sched_.reset();
  job_ids_.clear();
  job_names_.clear();
  last_started_.clear();
  next_job_id_ = 0;
  clock_.Set(0);
}

StatusOr<JobId> ScenarioRunner::JobByName(std::string_view name) const {
  auto it = job_ids_.find(name);
  if (it == job_ids_.end()) return NotFound("no job named '" + std::string(name) + "'");
  return it->second;
}

std::string ScenarioRunner::JobName(JobId id) const {
  auto it = job_names_.find(id.value());
  return it == job_names_.end() ? "#" + std::to_string(id.value()) : it->second;
}

void ScenarioRunner::NameJob(const std::string& name, JobId id) {
  job_ids_.emplace(name, id);
  job_names_.emplace(id.value(), name);
}

StatusOr<NodeId> ScenarioRunner::NodeByName(std::string_view name) const {
  if (!cluster_) return FailedPrecondition("no cluster yet");
  auto n = cluster_->FindNode(name);
  if (!n) return NotFound("no node named '" + std::string(name) + "'");
  return *n;
}

}  // namespace berth::testing
