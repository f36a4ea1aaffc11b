// For tests: a throwaway one-member etcd on loopback (free ports, a temp data
// folder), killed and removed when the object goes away.
//
//   auto etcd = EtcdTestServer::Start();   // NotFound when etcd is not installed
//   auto store = EtcdStore::Open(etcd.value()->endpoint(), {});
//
// CI installs etcd (scripts/install-deps.sh), so tests that need it fail when
// it is missing, unless BERTH_SKIP_ETCD=1 (EtcdSkipAllowed) lets them skip.
#pragma once

#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "berth/store/etcd_client.h"

namespace berth::store {

inline bool EtcdSkipAllowed() {
  const char* v = std::getenv("BERTH_SKIP_ETCD");
  return v && std::string(v) == "1";
}

// The etcd binary: $BERTH_ETCD, else the first `etcd` on PATH; "" if none.
inline std::string FindEtcdBinary() {
  if (const char* env = std::getenv("BERTH_ETCD"); env && *env) return env;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t colon = dirs.find(':', start);
    if (colon == std::string::npos) colon = dirs.size();
    std::string candidate = dirs.substr(start, colon - start) + "/etcd";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = colon + 1;
  }
  return "";
}

// A loopback TCP port nobody listens on now (the kernel's choice).
inline int FreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

class EtcdTestServer {
 public:
  static StatusOr<std::unique_ptr<EtcdTestServer>> Start() {
    const std::string bin = FindEtcdBinary();
    if (bin.empty())
      return NotFound("etcd is not installed (scripts/install-deps.sh installs etcd-server; "
                      "BERTH_SKIP_ETCD=1 skips the tests that need it)");
    std::unique_ptr<EtcdTestServer> s(new EtcdTestServer());
    s->dir_ = std::filesystem::temp_directory_path() /
              ("berth_etcd_" + std::to_string(::getpid()) + "_" + std::to_string(FreeLoopbackPort()));
    std::filesystem::remove_all(s->dir_);
    std::filesystem::create_directories(s->dir_);
    for (int attempt = 0; attempt < 3; ++attempt) {
      const int client = FreeLoopbackPort(), peer = FreeLoopbackPort();
      s->endpoint_ = "http://127.0.0.1:" + std::to_string(client);
      const std::string peer_url = "http://127.0.0.1:" + std::to_string(peer);
      const std::string data = (s->dir_ / ("data" + std::to_string(attempt))).string();
      const std::string log = (s->dir_ / "etcd.log").string();
      std::vector<std::string> args = {bin,
                                       "--name=t0",
                                       "--data-dir=" + data,
                                       "--listen-client-urls=" + s->endpoint_,
                                       "--advertise-client-urls=" + s->endpoint_,
                                       "--listen-peer-urls=" + peer_url,
                                       "--initial-advertise-peer-urls=" + peer_url,
                                       "--initial-cluster=t0=" + peer_url,
                                       "--heartbeat-interval=50",
                                       "--election-timeout=250"};
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      const pid_t pid = ::fork();
      if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the test
        int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
          ::dup2(fd, 1);
          ::dup2(fd, 2);
        }
        ::execv(argv[0], argv.data());
        ::_exit(127);
      }
      if (pid < 0) return Unavailable("cannot fork etcd");
      s->pid_ = pid;
      EtcdClient probe({s->endpoint_}, {200'000, 1'000'000});
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
      while (std::chrono::steady_clock::now() < deadline) {
        if (probe.Range("/", {}).ok()) return s;
        int st = 0;
        if (::waitpid(pid, &st, WNOHANG) == pid) {  // died (a port taken?): try other ports
          s->pid_ = -1;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      s->Kill();
    }
    std::string tail;
    if (std::FILE* f = std::fopen((s->dir_ / "etcd.log").c_str(), "r")) {
      char buf[4096];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) tail.append(buf, n);
      std::fclose(f);
      if (tail.size() > 1500) tail = tail.substr(tail.size() - 1500);
    }
    return Unavailable("etcd did not start: " + tail);
  }

  ~EtcdTestServer() {
    Kill();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  const std::string& endpoint() const { return endpoint_; }

 private:
  EtcdTestServer() = default;
  void Kill() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }

  std::filesystem::path dir_;
  std::string endpoint_;
  pid_t pid_ = -1;
};

}  // namespace berth::store
