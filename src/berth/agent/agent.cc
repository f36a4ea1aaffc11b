// The node agent's loop: registration, heartbeats, starting and stopping
// tasks, exits and logs.
#include "berth/agent/agent.h"

#include <httplib.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "berth/agent/supervisor.h"
#include "berth/json/json_parse.h"

extern char** environ;

namespace berth::agent {

using nlohmann::json;

namespace {

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

constexpr int64_t kLogChunk = 1 << 20;          // bytes per log upload
constexpr int64_t kForgetAfterMs = 3'600'000;   // a finished task's record is kept this long
constexpr int64_t kMaxTasksPerNode = 4096;

Status Field(const std::string& where, bool ok, const std::string& what) {
  return ok ? Status::Ok() : InvalidArgument(where + ": " + what);
}

StatusOr<std::map<std::string, std::string>> StringMap(const std::string& where, const json& v) {
  std::map<std::string, std::string> out;
  if (v.is_null()) return out;
  if (!v.is_object()) return InvalidArgument(where + ": expected an object of strings");
  for (const auto& [k, val] : v.items()) {
    if (!val.is_string()) return InvalidArgument(where + "." + k + ": expected a string");
    out[k] = val.get<std::string>();
  }
  return out;
}

}  // namespace

StatusOr<std::vector<int32_t>> ParseGpuHealth(const std::string& text) {
  std::vector<int32_t> out;
  std::set<int32_t> seen;
  std::istringstream lines(text);
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n) {
    line = line.substr(0, line.find('#'));
    for (char& c : line)
      if (c == ',' || c == '\t' || c == '\r') c = ' ';
    std::istringstream words(line);
    std::string w;
    while (words >> w) {
      int64_t v = -1;
      const bool digits = !w.empty() && w.size() <= 9 && w.find_first_not_of("0123456789") == std::string::npos;
      if (digits) v = std::stoll(w);
      if (!digits || v > 1'000'000)
        return InvalidArgument("line " + std::to_string(n) + ": '" + w.substr(0, 40) + "' is not a GPU index");
      if (seen.insert(static_cast<int32_t>(v)).second) out.push_back(static_cast<int32_t>(v));
    }
  }
  return out;
}

StatusOr<std::vector<Assignment>> ParseRunList(const json& run) {
  if (!run.is_array()) return InvalidArgument("run: expected an array");
  if (run.size() > static_cast<size_t>(kMaxTasksPerNode)) return InvalidArgument("run: too many tasks");
  std::vector<Assignment> out;
  for (size_t i = 0; i < run.size(); ++i) {
    const std::string w = "run[" + std::to_string(i) + "]";
    const json& t = run[i];
    BERTH_RETURN_IF_ERROR(Field(w, t.is_object(), "expected an object"));
    Assignment a;
    auto num = [&](const char* key, int64_t lo, int64_t hi, int64_t& out) -> Status {
      if (!t.contains(key)) return InvalidArgument(w + "." + key + ": missing");
      const json& v = t.at(key);
      if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
        return InvalidArgument(w + "." + key + ": expected an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
      out = v.get<int64_t>();
      return Status::Ok();
    };
    int64_t x = 0;
    BERTH_RETURN_IF_ERROR(num("job", 0, INT64_MAX, a.job));
    BERTH_RETURN_IF_ERROR(num("generation", 1, INT32_MAX, x));
    a.generation = static_cast<int32_t>(x);
    BERTH_RETURN_IF_ERROR(num("task", 0, INT32_MAX, x));
    a.task = static_cast<int32_t>(x);
    if (t.contains("attempt")) {
      BERTH_RETURN_IF_ERROR(num("attempt", 0, INT32_MAX, x));
      a.attempt = static_cast<int32_t>(x);
    }
    if (t.contains("tasks")) {
      BERTH_RETURN_IF_ERROR(num("tasks", 1, INT32_MAX, x));
      a.tasks = static_cast<int32_t>(x);
    }
    if (t.contains("cpu_milli")) BERTH_RETURN_IF_ERROR(num("cpu_milli", 0, INT64_MAX, a.cpu_milli));
    if (t.contains("memory_mib")) BERTH_RETURN_IF_ERROR(num("memory_mib", 0, INT64_MAX, a.memory_mib));
    const json gpus = t.value("gpus", json::array());
    BERTH_RETURN_IF_ERROR(Field(w + ".gpus", gpus.is_array(), "expected an array"));
    for (const auto& g : gpus) {
      BERTH_RETURN_IF_ERROR(Field(w + ".gpus", g.is_number_integer() && g.get<int64_t>() >= 0 && g.get<int64_t>() < 64,
                                  "expected GPU positions 0..63"));
      a.gpus.push_back(g.get<int32_t>());
    }
    const json cmd = t.value("command", json::array());
    BERTH_RETURN_IF_ERROR(Field(w + ".command", cmd.is_array(), "expected an array of strings"));
    for (const auto& c : cmd) {
      BERTH_RETURN_IF_ERROR(Field(w + ".command", c.is_string(), "expected an array of strings"));
      a.command.push_back(c.get<std::string>());
    }
    BERTH_ASSIGN_OR_RETURN(a.env, StringMap(w + ".env", t.value("env", json())));
    BERTH_ASSIGN_OR_RETURN(a.launch_env, StringMap(w + ".launch_env", t.value("launch_env", json())));
    if (t.contains("mpi_hostfile")) {
      BERTH_RETURN_IF_ERROR(Field(w + ".mpi_hostfile", t["mpi_hostfile"].is_string(), "expected a string"));
      a.mpi_hostfile = t["mpi_hostfile"].get<std::string>();
    }
    if (t.contains("peers")) {
      BERTH_RETURN_IF_ERROR(Field(w + ".peers", t["peers"].is_array(), "expected an array"));
      a.peers = t["peers"].dump(1);
    }
    out.push_back(std::move(a));
  }
  return out;
}

std::vector<std::string> BuildTaskEnv(const std::vector<std::string>& base, const Assignment& a,
                                      const std::vector<GpuInfo>& node_gpus, const std::string& node_name,
                                      const std::string& hostfile, const std::string& peers_file) {
  std::map<std::string, std::string> env;
  for (const auto& kv : base) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : a.env) env[k] = v;
  for (const auto& [k, v] : a.launch_env) env[k] = v;
  std::string devices;
  for (int32_t pos : a.gpus) {
    const int32_t index = pos >= 0 && pos < static_cast<int32_t>(node_gpus.size()) ? node_gpus[pos].index : pos;
    devices += (devices.empty() ? "" : ",") + std::to_string(index);
  }
  env["CUDA_VISIBLE_DEVICES"] = devices;
  env["BERTH_JOB_ID"] = std::to_string(a.job);
  env["BERTH_TASK_INDEX"] = std::to_string(a.task);
  env["BERTH_TASK_COUNT"] = std::to_string(a.tasks);
  env["BERTH_RUN"] = std::to_string(a.generation);
  env["BERTH_TASK_ATTEMPT"] = std::to_string(a.attempt);
  env["BERTH_NODE"] = node_name;
  if (!hostfile.empty()) env["BERTH_MPI_HOSTFILE"] = hostfile;
  if (!peers_file.empty()) env["BERTH_PEERS_FILE"] = peers_file;
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::string TaskDir(const std::string& work_dir, int64_t job, int32_t generation, int32_t task, int32_t attempt) {
  return work_dir + "/tasks/job-" + std::to_string(job) + "/run-" + std::to_string(generation) + "/task-" +
         std::to_string(task) + (attempt > 0 ? ".attempt-" + std::to_string(attempt) : "");
}

namespace {

// Writes `text` to `path` through a temporary file and a rename, so a task
// reading it never sees half a file.
void WriteWhole(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << text;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
}

}  // namespace

Agent::Agent(AgentOptions options, NodeConfig config) : options_(std::move(options)), config_(std::move(config)) {}

void Agent::Log(const std::string& event, json fields) const {
  fields["event"] = event;
  fields["node"] = config_.name;
  fields["ts_ms"] = WallMs();
  std::cerr << fields.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
}

Agent::Reply Agent::Post(const std::string& path, const std::string& body, const std::string& content_type) {
  httplib::Client cli(options_.server);
  cli.set_connection_timeout(2, 0);
  cli.set_read_timeout(15, 0);
  cli.set_write_timeout(15, 0);
  httplib::Headers headers = {{"Authorization", "Bearer " + options_.node_token}};
  auto res = cli.Post(path, headers, body, content_type);
  Reply r;
  if (!res) {
    r.error = "no answer from " + options_.server + ": " + httplib::to_string(res.error());
    return r;
  }
  r.status = res->status;
  auto parsed = berth::json::ParseUntrusted(res->body);
  if (parsed.ok()) r.body = std::move(parsed).value();
  if (r.status != 200) r.error = r.body.is_object() ? r.body.value("error", res->body) : res->body;
  return r;
}

void Agent::Save() {
  if (!dirty_) return;
  if (Status s = SaveAgentState(options_.work_dir, state_); !s.ok()) {
    Log("state_not_saved", {{"error", s.message()}});
    return;
  }
  dirty_ = false;
}

Status Agent::Register() {
  json gpus = json::array();
  for (const auto& g : config_.gpus) gpus.push_back({{"index", g.index}, {"type", g.type}, {"memory_mib", g.memory_mib}});
  json labels = json::object();
  for (const auto& [k, v] : {std::pair<const char*, const std::string*>{"region", &config_.region},
                             {"cluster", &config_.cluster},
                             {"spine", &config_.spine},
                             {"leaf", &config_.leaf},
                             {"nvlink", &config_.nvlink}})
    if (!v->empty()) labels[k] = *v;
  const json body = {{"name", config_.name},           {"agent_id", state_.agent_id}, {"cpu_milli", config_.cpu_milli},
                     {"memory_mib", config_.memory_mib}, {"gpus", gpus},              {"labels", labels}};
  json doc = body;
  if (!config_.address.empty()) doc["address"] = config_.address;
  Reply r = Post("/v1/agent/register", doc.dump());
  if (r.status == 200) {
    auto secs = [&](const char* key, int64_t fallback) {
      const json v = r.body.value(key, json());
      return v.is_number() ? static_cast<int64_t>(v.get<double>() * 1000) : fallback;
    };
    heartbeat_ms_ = std::max<int64_t>(50, secs("heartbeat_interval_s", heartbeat_ms_));
    kill_grace_ms_ = std::max<int64_t>(0, secs("kill_grace_s", kill_grace_ms_));
    registered_ = true;
    next_beat_ms_ = 0;  // report what runs at once
    Log("registered", {{"server", options_.server}, {"agent_id", state_.agent_id}, {"gpus", config_.gpus.size()},
                       {"heartbeat_interval_ms", heartbeat_ms_}});
    return Status::Ok();
  }
  if (r.status == 400 || r.status == 401 || r.status == 403 || r.status == 404 || r.status == 409 || r.status == 422) {
    fatal_ = true;
    fatal_reason_ = "the server refused the registration (" + std::to_string(r.status) + "): " + r.error;
    return FailedPrecondition(fatal_reason_);
  }
  return Unavailable(r.error.empty() ? "status " + std::to_string(r.status) : r.error);
}

void Agent::Heartbeat() {
  json tasks = json::array();
  for (const auto& r : state_.tasks) {
    if (r.forgotten_at_ms) continue;
    json t = {{"job", r.job}, {"generation", r.generation}, {"task", r.task}, {"state", "running"}};
    if (r.attempt > 0) t["attempt"] = r.attempt;
    // An end goes first through ReportExits (after its log); once reported,
    // every heartbeat repeats it, so a restarted server learns it again.
    if (r.ended() && r.reported && !r.stopping) {
      t["state"] = r.state == TaskRecord::State::kExited ? "exited" : "lost";
      if (r.state == TaskRecord::State::kExited) t["exit_code"] = r.exit_code;
    }
    tasks.push_back(std::move(t));
  }
  json beat = {{"name", config_.name}, {"agent_id", state_.agent_id}, {"tasks", tasks}};
  if (!options_.gpu_health_file.empty()) {
    // Re-read every beat; a file that cannot be parsed keeps the last set.
    std::ifstream in(options_.gpu_health_file);
    std::string text;
    if (in) text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    auto failed = ParseGpuHealth(text);
    const std::string error = failed.ok() ? "" : failed.status().message();
    if (error != gpu_health_error_ && !error.empty())
      Log("bad_gpu_health_file", {{"file", options_.gpu_health_file}, {"error", error}});
    gpu_health_error_ = error;
    if (failed.ok()) {
      if (*failed != failed_gpus_) Log("gpu_health", {{"failed_gpus", *failed}});
      failed_gpus_ = std::move(failed).value();
    }
    if (!failed_gpus_.empty()) beat["failed_gpus"] = failed_gpus_;
  }
  Reply r = Post("/v1/agent/heartbeat", beat.dump());
  if (r.status == 404 && r.body.is_object() && r.body.value("register", false)) {
    registered_ = false;
    Log("reregistering", {{"reason", r.error}});
    return;
  }
  if (r.status == 401 || r.status == 403 || r.status == 409) {
    fatal_ = true;
    fatal_reason_ = "the server refused the heartbeat (" + std::to_string(r.status) + "): " + r.error;
    return;
  }
  if (r.status != 200) {
    if (failures_logged_++ % 20 == 0) Log("heartbeat_failed", {{"status", r.status}, {"error", r.error}});
    return;
  }
  if (failures_logged_ > 0) Log("heartbeat_restored", {{"failed", failures_logged_}});
  failures_logged_ = 0;
  if (r.body.contains("kill_grace_s") && r.body["kill_grace_s"].is_number())
    kill_grace_ms_ = static_cast<int64_t>(r.body["kill_grace_s"].get<double>() * 1000);
  auto run = ParseRunList(r.body.value("run", json::array()));
  if (!run.ok()) {
    Log("bad_heartbeat_answer", {{"error", run.status().message()}});
    return;
  }
  Reconcile(*run);
}

void Agent::Reconcile(const std::vector<Assignment>& run) {
  std::set<std::tuple<int64_t, int32_t, int32_t, int32_t>> listed;
  for (const auto& a : run) {
    const auto key = std::tuple(a.job, a.generation, a.task, a.attempt);
    listed.insert(key);
    auto it = std::find_if(state_.tasks.begin(), state_.tasks.end(),
                           [&](const TaskRecord& r) { return r.key() == key; });
    if (it == state_.tasks.end()) {
      Start(a);
    } else if (!it->ended() && !it->stopping) {
      UpdatePeers(*it, a);
    } else if (it->forgotten_at_ms) {
      // Listed again (the server restarted from an older state): never run
      // again; report how it ended once more.
      it->forgotten_at_ms = 0;
      it->reported = false;
      dirty_ = true;
    }
  }
  const int64_t now = WallMs();
  for (auto& r : state_.tasks) {
    if (listed.count(r.key()) || r.forgotten_at_ms) continue;
    if (!r.ended()) {
      if (!r.stopping) {
        r.stopping = true;
        r.term_at_ms = now;
        dirty_ = true;
        if (auto pid = ReadTaskPid(r.dir)) ::kill(-*pid, SIGTERM);
        Log("task_stopping", {{"job", r.job}, {"generation", r.generation}, {"task", r.task}, {"attempt", r.attempt},
                              {"grace_ms", kill_grace_ms_}});
      }
    } else {
      r.forgotten_at_ms = now;  // the server no longer wants it
      dirty_ = true;
    }
  }
  // Old records go (their directories and logs stay).
  const size_t before = state_.tasks.size();
  std::erase_if(state_.tasks, [&](const TaskRecord& r) { return r.forgotten_at_ms && now - r.forgotten_at_ms > kForgetAfterMs; });
  std::erase_if(written_peers_, [&](const auto& w) { return !listed.count(w.first); });
  if (state_.tasks.size() != before) dirty_ = true;
}

void Agent::Start(const Assignment& a) {
  TaskRecord r;
  r.job = a.job;
  r.generation = a.generation;
  r.task = a.task;
  r.attempt = a.attempt;
  r.dir = TaskDir(options_.work_dir, a.job, a.generation, a.task, a.attempt);
  std::error_code ec;
  std::filesystem::create_directories(r.dir, ec);
  auto fail = [&](const std::string& why) {
    std::ofstream(r.dir + "/output.log", std::ios::app) << "berth agent: " << why << "\n";
    r.state = TaskRecord::State::kExited;
    r.exit_code = 127;
    state_.tasks.push_back(r);
    dirty_ = true;
    Log("task_not_started", {{"job", a.job}, {"generation", a.generation}, {"task", a.task}, {"attempt", a.attempt},
                             {"error", why}});
  };
  if (ec) return fail("cannot create " + r.dir + ": " + ec.message());
  if (a.command.empty()) return fail("the job has no command (its document needs \"command\": [\"prog\", \"arg\", ...])");
  std::vector<std::string> base;
  for (char** e = environ; e && *e; ++e) base.emplace_back(*e);
  std::string hostfile;
  if (!a.mpi_hostfile.empty()) {
    hostfile = std::filesystem::absolute(r.dir + "/hostfile", ec).string();
    std::ofstream(hostfile) << a.mpi_hostfile;
  }
  std::string peers_file;
  if (!a.peers.empty()) {
    peers_file = std::filesystem::absolute(r.dir + "/peers.json", ec).string();
    WriteWhole(peers_file, a.peers);
  }
  written_peers_[r.key()] = {a.peers, a.mpi_hostfile};
  TaskSpec spec;
  spec.argv = a.command;
  spec.env = BuildTaskEnv(base, a, config_.gpus, config_.name, hostfile, peers_file);
  spec.memory_max_bytes = a.memory_mib * (int64_t{1} << 20);
  spec.cpu_max_milli = a.cpu_milli;
  spec.cgroup_name = "berth-job" + std::to_string(a.job) + "-run" + std::to_string(a.generation) + "-task" +
                     std::to_string(a.task) + (a.attempt > 0 ? "-attempt" + std::to_string(a.attempt) : "");
  if (Status s = WriteTaskSpec(r.dir, spec); !s.ok()) return fail(s.message());
  // Recorded before it starts: a restart in between reports it lost, never starts it twice.
  r.state = TaskRecord::State::kStarting;
  state_.tasks.push_back(r);
  dirty_ = true;
  Save();
  auto pid = SpawnSupervisor(options_.supervisor_exe, r.dir);
  TaskRecord& rec = state_.tasks.back();
  if (!pid.ok()) {
    rec.state = TaskRecord::State::kExited;
    rec.exit_code = 127;
    std::ofstream(r.dir + "/output.log", std::ios::app) << "berth agent: " << pid.status().message() << "\n";
  } else {
    rec.supervisor = *pid;
    rec.state = TaskRecord::State::kRunning;
  }
  dirty_ = true;
  Save();
  Log("task_started", {{"job", a.job}, {"generation", a.generation}, {"task", a.task}, {"attempt", a.attempt},
                       {"dir", r.dir},
                       {"cuda_visible_devices", [&] {
                          for (const auto& kv : spec.env)
                            if (kv.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0) return kv.substr(21);
                          return std::string();
                        }()}});
}

void Agent::UpdatePeers(const TaskRecord& r, const Assignment& a) {
  auto& written = written_peers_[r.key()];
  if (written.first == a.peers && written.second == a.mpi_hostfile) return;
  const bool first_look = written.first.empty() && written.second.empty();  // after a restart of the agent
  if (!a.peers.empty()) WriteWhole(r.dir + "/peers.json", a.peers);
  if (!a.mpi_hostfile.empty()) WriteWhole(r.dir + "/hostfile", a.mpi_hostfile);
  written = {a.peers, a.mpi_hostfile};
  if (!first_look)
    Log("task_peers_changed", {{"job", r.job}, {"generation", r.generation}, {"task", r.task}, {"attempt", r.attempt}});
}

void Agent::Poll() {
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {  // supervisors this process started
  }
  for (auto& r : state_.tasks) {
    if (r.ended()) continue;
    if (auto code = ReadExitStatus(r.dir)) {
      r.state = TaskRecord::State::kExited;
      r.exit_code = *code;
      dirty_ = true;
      Log("task_exited", {{"job", r.job}, {"generation", r.generation}, {"task", r.task}, {"attempt", r.attempt},
                          {"exit_code", *code}});
      continue;
    }
    const auto pid = ReadTaskPid(r.dir);
    const bool alive = (r.supervisor > 0 && SupervisorAlive(r.supervisor, r.dir)) || (pid && ProcessAlive(*pid));
    if (alive) {
      if (r.state == TaskRecord::State::kStarting) {
        r.state = TaskRecord::State::kRunning;
        dirty_ = true;
      }
      continue;
    }
    if (auto code = ReadExitStatus(r.dir)) {  // it ended between the two looks
      r.state = TaskRecord::State::kExited;
      r.exit_code = *code;
    } else {
      r.state = TaskRecord::State::kLost;
      Log("task_lost", {{"job", r.job}, {"generation", r.generation}, {"task", r.task}, {"attempt", r.attempt},
                        {"reason", "neither its supervisor nor its process runs, and no exit status was written"}});
    }
    dirty_ = true;
  }
}

void Agent::StopTasks() {
  const int64_t now = WallMs();
  for (auto& r : state_.tasks) {
    if (!r.stopping || r.ended() || r.killed) continue;
    auto pid = ReadTaskPid(r.dir);
    if (!pid) continue;
    if (r.term_at_ms == 0) {
      ::kill(-*pid, SIGTERM);
      r.term_at_ms = now;
      dirty_ = true;
    } else if (now - r.term_at_ms >= kill_grace_ms_) {
      ::kill(-*pid, SIGKILL);
      r.killed = true;
      dirty_ = true;
      Log("task_killed", {{"job", r.job}, {"generation", r.generation}, {"task", r.task}, {"attempt", r.attempt},
                          {"reason", "still running after the grace"}});
    }
  }
}

void Agent::UploadLogs(TaskRecord& r, bool all) {
  const std::string path = r.dir + "/output.log";
  for (int rounds = 0; rounds < (all ? 64 : 1); ++rounds) {
    std::error_code ec;
    const int64_t size = std::filesystem::exists(path, ec) ? static_cast<int64_t>(std::filesystem::file_size(path, ec)) : 0;
    if (ec || size <= r.log_sent) return;
    std::ifstream f(path, std::ios::binary);
    f.seekg(r.log_sent);
    std::string chunk(static_cast<size_t>(std::min(kLogChunk, size - r.log_sent)), '\0');
    f.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    chunk.resize(static_cast<size_t>(f.gcount()));
    if (chunk.empty()) return;
    const std::string q = "/v1/agent/logs?name=" + httplib::detail::encode_query_param(config_.name) +
                          "&agent_id=" + state_.agent_id + "&job=" + std::to_string(r.job) +
                          "&generation=" + std::to_string(r.generation) + "&task=" + std::to_string(r.task) +
                          (r.attempt > 0 ? "&attempt=" + std::to_string(r.attempt) : "") +
                          "&offset=" + std::to_string(r.log_sent);
    Reply rep = Post(q, chunk, "application/octet-stream");
    if (rep.status == 200 || rep.status == 409) {
      const json sz = rep.body.is_object() ? rep.body.value("size", json()) : json();
      if (sz.is_number_integer()) {
        r.log_sent = std::min<int64_t>(size, sz.get<int64_t>());
        if (rep.status == 200 && rep.body.value("truncated", false)) r.log_sent = size;  // the server keeps no more
        dirty_ = true;
        continue;
      }
    }
    if (rep.status >= 400 && rep.status < 500 && rep.status != 409) {
      r.log_sent = size;  // the server does not want it (job gone, no log dir)
      dirty_ = true;
    }
    return;
  }
}

void Agent::ReportExits() {
  for (auto& r : state_.tasks) {
    if (!r.ended() || r.reported || r.forgotten_at_ms) continue;
    if (r.stopping) {  // stopped by Berth: the server ended its run already
      UploadLogs(r, true);
      r.reported = true;
      dirty_ = true;
      continue;
    }
    UploadLogs(r, true);
    json body = {{"name", config_.name}, {"agent_id", state_.agent_id}, {"job", r.job},
                 {"generation", r.generation}, {"task", r.task}};
    if (r.attempt > 0) body["attempt"] = r.attempt;
    if (r.state == TaskRecord::State::kExited) {
      body["state"] = "exited";
      body["exit_code"] = r.exit_code;
    } else {
      body["state"] = "lost";
    }
    Reply rep = Post("/v1/agent/status", body.dump());
    if (rep.status == 200 || rep.status == 404 || rep.status == 409) {
      r.reported = true;
      dirty_ = true;
      if (rep.status != 200) Log("exit_not_wanted", {{"job", r.job}, {"task", r.task}, {"error", rep.error}});
    } else if (rep.status == 0) {
      return;  // the server is away: later
    }
  }
}

int Agent::Run(const std::atomic<bool>& stop) {
  std::error_code ec;
  std::filesystem::create_directories(options_.work_dir, ec);
  if (ec) {
    std::cerr << "berth agent: --work-dir " << options_.work_dir << ": " << ec.message() << "\n";
    return 1;
  }
  if (options_.supervisor_exe.empty()) {
    char buf[4096];
    const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) {
      std::cerr << "berth agent: cannot find its own executable (/proc/self/exe)\n";
      return 1;
    }
    options_.supervisor_exe.assign(buf, static_cast<size_t>(n));
  }
  auto loaded = LoadAgentState(options_.work_dir);
  if (!loaded.ok()) {
    std::cerr << "berth agent: " << loaded.status().message() << "\n";
    return 1;
  }
  state_ = std::move(loaded).value();
  if (state_.agent_id.empty()) {
    auto id = NewAgentId();
    if (!id.ok()) {
      std::cerr << "berth agent: " << id.status().message() << "\n";
      return 1;
    }
    state_.agent_id = *id;
    dirty_ = true;
  }
  Poll();  // re-attach: what still runs, what ended while the agent was away
  int64_t reattached = 0;
  for (const auto& r : state_.tasks) reattached += !r.ended();
  Log("agent_started", {{"work_dir", options_.work_dir}, {"agent_id", state_.agent_id}, {"tasks_running", reattached},
                        {"tasks_known", state_.tasks.size()}});
  Save();
  int64_t next_register_ms = 0;
  while (!stop.load()) {
    const int64_t now = SteadyMs();
    if (!registered_ && now >= next_register_ms) {
      Status s = Register();
      if (fatal_) break;
      if (!s.ok()) {
        if (failures_logged_++ % 20 == 0) Log("register_failed", {{"error", s.message()}});
        next_register_ms = now + 1000;
      }
    }
    Poll();
    StopTasks();
    if (registered_) {
      ReportExits();
      if (SteadyMs() >= next_beat_ms_) {
        next_beat_ms_ = SteadyMs() + heartbeat_ms_;
        Heartbeat();
        if (fatal_) break;
      }
      for (auto& r : state_.tasks)
        if (!r.ended() && !r.forgotten_at_ms) UploadLogs(r, false);
    }
    Save();
    std::this_thread::sleep_for(std::chrono::milliseconds(options_.tick_ms));
  }
  Save();
  if (fatal_) {
    std::cerr << "berth agent: " << fatal_reason_ << "\n";
    Log("agent_stopped", {{"error", fatal_reason_}});
    return 1;
  }
  Log("agent_stopped", {{"tasks_left_running", std::count_if(state_.tasks.begin(), state_.tasks.end(),
                                                             [](const TaskRecord& r) { return !r.ended(); })}});
  return 0;
}

}  // namespace berth::agent
