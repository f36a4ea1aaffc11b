// agent.json: reading and writing the agent's state.
#include "berth/agent/agent_state.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace berth::agent {

using nlohmann::json;

const char* TaskStateName(TaskRecord::State s) {
  switch (s) {
    case TaskRecord::State::kStarting: return "starting";
    case TaskRecord::State::kRunning: return "running";
    case TaskRecord::State::kExited: return "exited";
    case TaskRecord::State::kLost: return "lost";
  }
  return "?";
}

StatusOr<AgentState> LoadAgentState(const std::string& work_dir) {
  const std::string path = work_dir + "/agent.json";
  AgentState s;
  std::ifstream in(path);
  if (!in) return s;
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, false);
  if (!j.is_object()) return InvalidArgument(path + ": not a JSON object (remove it to start afresh)");
  try {
    s.agent_id = j.at("agent_id").get<std::string>();
    for (const auto& t : j.at("tasks")) {
      TaskRecord r;
      r.job = t.at("job").get<int64_t>();
      r.generation = t.at("generation").get<int32_t>();
      r.task = t.at("task").get<int32_t>();
      r.attempt = t.value("attempt", 0);
      r.dir = t.at("dir").get<std::string>();
      const std::string st = t.at("state").get<std::string>();
      r.state = st == "running"  ? TaskRecord::State::kRunning
                : st == "exited" ? TaskRecord::State::kExited
                : st == "lost"   ? TaskRecord::State::kLost
                                 : TaskRecord::State::kStarting;
      r.exit_code = t.value("exit_code", 0);
      r.supervisor = t.value("supervisor", 0);
      r.log_sent = t.value("log_sent", int64_t{0});
      r.reported = t.value("reported", false);
      r.stopping = t.value("stopping", false);
      r.term_at_ms = t.value("term_at_ms", int64_t{0});
      r.killed = t.value("killed", false);
      r.forgotten_at_ms = t.value("forgotten_at_ms", int64_t{0});
      s.tasks.push_back(std::move(r));
    }
  } catch (const json::exception& e) {
    return InvalidArgument(path + ": " + e.what() + " (remove it to start afresh)");
  }
  return s;
}

Status SaveAgentState(const std::string& work_dir, const AgentState& s) {
  json tasks = json::array();
  for (const auto& r : s.tasks)
    tasks.push_back({{"job", r.job},
                     {"generation", r.generation},
                     {"task", r.task},
                     {"attempt", r.attempt},
                     {"dir", r.dir},
                     {"state", TaskStateName(r.state)},
                     {"exit_code", r.exit_code},
                     {"supervisor", r.supervisor},
                     {"log_sent", r.log_sent},
                     {"reported", r.reported},
                     {"stopping", r.stopping},
                     {"term_at_ms", r.term_at_ms},
                     {"killed", r.killed},
                     {"forgotten_at_ms", r.forgotten_at_ms}});
  const std::string text = json{{"agent_id", s.agent_id}, {"tasks", tasks}}.dump(1);
  const std::string tmp = work_dir + "/.agent.json.tmp", path = work_dir + "/agent.json";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Internal(tmp + ": cannot write");
  size_t off = 0;
  while (off < text.size()) {
    const ssize_t w = ::write(fd, text.data() + off, text.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      ::close(fd);
      return Internal(tmp + ": write failed");
    }
    off += static_cast<size_t>(w);
  }
  ::fsync(fd);
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return Internal(path + ": rename failed");
  return Status::Ok();
}

StatusOr<std::string> NewAgentId() {
  std::ifstream r("/dev/urandom", std::ios::binary);
  unsigned char b[16];
  if (!r.read(reinterpret_cast<char*>(b), sizeof b)) return Internal("/dev/urandom: cannot read");
  std::string out;
  char hex[3];
  for (unsigned char c : b) {
    std::snprintf(hex, sizeof hex, "%02x", c);
    out += hex;
  }
  return out;
}

}  // namespace berth::agent
