// The task supervisor and the files it shares with the agent.
#include "berth/agent/supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace berth::agent {
namespace {

using nlohmann::json;

// Writes `text` to dir/name through a temporary file and a rename, so a
// reader sees the whole file or none.
bool WriteAtomically(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string tmp = dir + "/." + name + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  size_t off = 0;
  while (off < text.size()) {
    const ssize_t w = ::write(fd, text.data() + off, text.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      ::close(fd);
      return false;
    }
    off += static_cast<size_t>(w);
  }
  ::fsync(fd);
  ::close(fd);
  return ::rename(tmp.c_str(), (dir + "/" + name).c_str()) == 0;
}

std::optional<std::string> ReadSmall(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  return static_cast<bool>(f);
}

// cgroup v2 limits, where the hierarchy is mounted and writable: a leaf next
// to the supervisor's own cgroup, the supervisor moved into it (the task
// inherits it). Any failure: no limits, and the reason in the "cgroup" file.
std::string ApplyCgroup(const TaskSpec& spec) {
  if (spec.cgroup_name.empty() || (spec.memory_max_bytes <= 0 && spec.cpu_max_milli <= 0)) return "no limits asked";
  if (::access("/sys/fs/cgroup/cgroup.controllers", R_OK) != 0) return "skipped: no cgroup v2 hierarchy";
  auto self = ReadSmall("/proc/self/cgroup");
  if (!self) return "skipped: /proc/self/cgroup unreadable";
  std::string base;
  std::istringstream lines(*self);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("0::", 0) == 0) base = line.substr(3);
  if (base.empty()) return "skipped: not in a cgroup v2 hierarchy";
  const std::string parent = "/sys/fs/cgroup" + (base == "/" ? std::string() : base);
  const std::string dir = parent + "/" + spec.cgroup_name;
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return std::string("skipped: mkdir: ") + std::strerror(errno);
  std::string applied;
  if (spec.memory_max_bytes > 0 && WriteFile(dir + "/memory.max", std::to_string(spec.memory_max_bytes)))
    applied += "memory.max=" + std::to_string(spec.memory_max_bytes) + " ";
  if (spec.cpu_max_milli > 0 && WriteFile(dir + "/cpu.max", std::to_string(spec.cpu_max_milli * 100) + " 100000"))
    applied += "cpu.max=" + std::to_string(spec.cpu_max_milli * 100) + "/100000 ";
  if (!WriteFile(dir + "/cgroup.procs", std::to_string(::getpid()))) {
    ::rmdir(dir.c_str());
    return "skipped: cannot move into " + dir;
  }
  return "applied in " + dir + ": " + (applied.empty() ? "no controller writable" : applied);
}

}  // namespace

Status WriteTaskSpec(const std::string& dir, const TaskSpec& spec) {
  json j = {{"argv", spec.argv},         {"env", spec.env},
            {"cwd", spec.cwd},           {"memory_max_bytes", spec.memory_max_bytes},
            {"cpu_max_milli", spec.cpu_max_milli}, {"cgroup_name", spec.cgroup_name}};
  if (!WriteAtomically(dir, "spec.json", j.dump())) return Internal(dir + "/spec.json: cannot write");
  return Status::Ok();
}

StatusOr<TaskSpec> ReadTaskSpec(const std::string& dir) {
  auto text = ReadSmall(dir + "/spec.json");
  if (!text) return NotFound(dir + "/spec.json: cannot open");
  json j = json::parse(*text, nullptr, false);
  if (!j.is_object()) return InvalidArgument(dir + "/spec.json: not a JSON object");
  TaskSpec s;
  try {
    s.argv = j.at("argv").get<std::vector<std::string>>();
    s.env = j.at("env").get<std::vector<std::string>>();
    s.cwd = j.value("cwd", std::string());
    s.memory_max_bytes = j.value("memory_max_bytes", int64_t{0});
    s.cpu_max_milli = j.value("cpu_max_milli", int64_t{0});
    s.cgroup_name = j.value("cgroup_name", std::string());
  } catch (const json::exception& e) {
    return InvalidArgument(dir + "/spec.json: " + e.what());
  }
  if (s.argv.empty()) return InvalidArgument(dir + "/spec.json: empty argv");
  return s;
}

int RunSupervisor(const std::string& dir) {
  // The agent's signals are not the supervisor's: it outlives the agent and
  // stops only when its task has ended and its status is written.
  ::signal(SIGTERM, SIG_IGN);
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGHUP, SIG_IGN);
  ::signal(SIGPIPE, SIG_IGN);
  auto spec = ReadTaskSpec(dir);
  const std::string log_path = dir + "/output.log";
  if (!spec.ok()) {
    WriteFile(log_path, "berth: " + spec.status().message() + "\n");
    return WriteAtomically(dir, "exit", "127\n") ? 0 : 1;
  }
  WriteFile(dir + "/cgroup", ApplyCgroup(*spec) + "\n");
  const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) return WriteAtomically(dir, "exit", "127\n") ? 0 : 1;
  // Everything the child needs, made before fork.
  std::vector<char*> argv, envp;
  for (auto& a : spec->argv) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : spec->env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const std::string cwd = spec->cwd.empty() ? dir : spec->cwd;
  int gate[2];  // the child waits until its pid is on disk: a kill never misses it
  if (::pipe2(gate, O_CLOEXEC) != 0) return 1;
  const pid_t child = ::fork();
  if (child < 0) return WriteAtomically(dir, "exit", "127\n") ? 0 : 1;
  if (child == 0) {
    ::setpgid(0, 0);  // its own process group: the agent signals the whole task
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE}) ::signal(sig, SIG_DFL);
    ::close(gate[1]);
    char b;
    while (::read(gate[0], &b, 1) < 0 && errno == EINTR) {
    }
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(log, 1);
    ::dup2(log, 2);
    if (::chdir(cwd.c_str()) != 0) {
      const char msg[] = "berth: cannot enter the working directory\n";
      (void)!::write(2, msg, sizeof msg - 1);
      ::_exit(127);
    }
    // PATH lookup with the task's own environment.
    for (char** e = envp.data(); *e; ++e)
      if (std::strncmp(*e, "PATH=", 5) == 0) ::setenv("PATH", *e + 5, 1);
    ::execvpe(argv[0], argv.data(), envp.data());
    const char msg[] = "berth: cannot execute the command: ";
    (void)!::write(2, msg, sizeof msg - 1);
    (void)!::write(2, argv[0], std::strlen(argv[0]));
    (void)!::write(2, "\n", 1);
    ::_exit(127);
  }
  ::setpgid(child, child);  // also here: no race with the agent's first kill
  ::close(gate[0]);
  WriteAtomically(dir, "pid", std::to_string(child) + "\n");
  ::close(gate[1]);  // the child may go
  ::close(log);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 255;
  return WriteAtomically(dir, "exit", std::to_string(code) + "\n") ? 0 : 1;
}

StatusOr<pid_t> SpawnSupervisor(const std::string& exe, const std::string& dir) {
  const std::string arg0 = "berth", arg1 = "agent-supervise";
  std::vector<char*> argv = {const_cast<char*>(arg0.c_str()), const_cast<char*>(arg1.c_str()),
                             const_cast<char*>(dir.c_str()), nullptr};
  const pid_t pid = ::fork();
  if (pid < 0) return Internal(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::setsid();  // outlives the agent and its terminal
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  return pid;
}

std::optional<int> ReadExitStatus(const std::string& dir) {
  auto text = ReadSmall(dir + "/exit");
  if (!text || text->empty()) return std::nullopt;
  char* end = nullptr;
  const long v = std::strtol(text->c_str(), &end, 10);
  if (end == text->c_str() || v < 0 || v > 255) return 255;
  return static_cast<int>(v);
}

std::optional<pid_t> ReadTaskPid(const std::string& dir) {
  auto text = ReadSmall(dir + "/pid");
  if (!text || text->empty()) return std::nullopt;
  const long v = std::strtol(text->c_str(), nullptr, 10);
  if (v <= 1) return std::nullopt;
  return static_cast<pid_t>(v);
}

bool ProcessAlive(pid_t pid) {
  if (pid <= 1) return false;
  auto stat = ReadSmall("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return false;
  const size_t close = stat->rfind(')');  // "pid (comm) S ..."
  if (close == std::string::npos || close + 2 >= stat->size()) return false;
  const char state = (*stat)[close + 2];
  return state != 'Z' && state != 'X';
}

bool SupervisorAlive(pid_t pid, const std::string& dir) {
  if (!ProcessAlive(pid)) return false;
  auto cmdline = ReadSmall("/proc/" + std::to_string(pid) + "/cmdline");
  return cmdline && cmdline->find(dir) != std::string::npos;
}

}  // namespace berth::agent
