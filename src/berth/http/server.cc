// The I/O loop (one thread, epoll), the worker pool and route dispatch.
#include "berth/http/server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace berth::http {

using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kReadChunk = 16 << 10;
constexpr auto kLinger = std::chrono::milliseconds(2000);  // reading (and dropping) after an error answer
constexpr size_t kLingerBytes = 4 << 20;
constexpr auto kTick = std::chrono::milliseconds(100);

std::string PeerIp(const sockaddr_storage& ss, int* port) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
    *port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf);
    *port = ntohs(a->sin6_port);
  }
  std::string ip = buf;
  if (ip.rfind("::ffff:", 0) == 0 && ip.find('.') != std::string::npos) ip = ip.substr(7);  // IPv4-mapped
  return ip;
}

std::string Canned(int status, const std::string& message) {
  Response r;
  r.status = status;
  r.set_content("{\"error\":\"" + message + "\"}\n", "application/json");
  if (status == 503 || status == 429) r.set_header("Retry-After", "1");
  return Serialize(r, false, false);
}

}  // namespace

// ---------------------------------------------------------------------------
// The loop: owns the sockets; workers hand finished responses back through a
// queue and an eventfd.
class Server::Loop {
 public:
  explicit Loop(Server& s) : s_(s) {}
  ~Loop() { Stop(); }

  Status Init() {
    ep_ = epoll_create1(EPOLL_CLOEXEC);
    wake_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ep_ < 0 || wake_ < 0) return Internal(std::string("epoll: ") + std::strerror(errno));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kWakeId;
    epoll_ctl(ep_, EPOLL_CTL_ADD, wake_, &ev);
    ev.data.u64 = kListenId;
    epoll_ctl(ep_, EPOLL_CTL_ADD, s_.listen_fd_, &ev);
    return Status::Ok();
  }

  void Start() {
    pools_[0].max_queued = s_.options_.max_queued;
    pools_[1].max_queued = s_.options_.max_heavy_queued;
    for (int i = 0; i < std::max(1, s_.options_.workers); ++i) workers_.emplace_back([this] { Work(pools_[0]); });
    for (int i = 0; i < std::max(1, s_.options_.heavy_workers); ++i)
      workers_.emplace_back([this] {
        // Large reads yield the CPU to the scheduling loop and the other
        // workers (Linux: the policy and nice value are per thread).
        bool idle = false;
        if (s_.options_.heavy_idle) {
          sched_param none{};
          idle = ::pthread_setschedparam(::pthread_self(), SCHED_IDLE, &none) == 0;
        }
        if (!idle && s_.options_.heavy_nice > 0)
          (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), s_.options_.heavy_nice);
        Work(pools_[1]);
      });
    io_ = std::thread([this] { Run(); });
  }

  void Stop() {
    if (stopping_.exchange(true)) return;
    Wake();
    if (io_.joinable()) io_.join();
    for (Pool& p : pools_) {
      {
        std::lock_guard<std::mutex> l(p.mu);
        p.stop = true;
      }
      p.cv.notify_all();
    }
    for (auto& t : workers_)
      if (t.joinable()) t.join();
    for (auto& [id, c] : conns_) CloseFd(*c);
    conns_.clear();
    if (wake_ >= 0) ::close(wake_);
    if (ep_ >= 0) ::close(ep_);
    wake_ = ep_ = -1;
  }

 private:
  static constexpr uint64_t kWakeId = 0;
  static constexpr uint64_t kListenId = 1;
  enum class State { kHandshake, kReading, kHandling, kWriting, kDraining };

  struct Conn {
    Conn(const ParserLimits& l, BodyLimit body_limit) : parser(l, std::move(body_limit)) {}
    uint64_t id = 0;
    int fd = -1;
    SSL* ssl = nullptr;
    std::string ip;
    int port = 0;
    State state = State::kReading;
    RequestParser parser;
    std::string in;   // read, not yet parsed (a pipelined next request)
    std::string out;  // to write
    size_t out_off = 0;
    bool close_after_write = false;
    bool linger_after_write = false;
    bool sent_continue = false;
    bool headers_seen = false;  // the body deadline is set
    bool idle = false;          // between requests on a keep-alive connection
    bool peer_verified = false;
    std::string peer_subject, peer_cn;
    bool ssl_wants_write = false;  // a read needs the socket writable (TLS)
    uint32_t events = 0;
    size_t drained = 0;
    Clock::time_point deadline;
  };
  struct Task {
    uint64_t conn;
    std::unique_ptr<Request> req;
    bool keep_alive;
  };
  // Requests waiting for a worker: [0] the workers, [1] the heavy pool.
  struct Pool {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Task> tasks;
    size_t max_queued = 0;
    bool stop = false;
  };
  struct Done {
    uint64_t conn;
    std::string bytes;
    bool keep_alive;
  };

  void Wake() {
    uint64_t one = 1;
    if (wake_ < 0) return;
    [[maybe_unused]] ssize_t n = ::write(wake_, &one, sizeof one);
  }

  void Run() {
    std::vector<epoll_event> events(256);
    auto next_scan = Clock::now() + kTick;
    while (!stopping_) {
      const int timeout = resume_.empty() ? static_cast<int>(kTick.count()) : 0;
      int n = epoll_wait(ep_, events.data(), static_cast<int>(events.size()), timeout);
      if (n < 0 && errno != EINTR) break;
      for (int i = 0; i < n; ++i) {
        const uint64_t id = events[i].data.u64;
        if (id == kWakeId) {
          uint64_t v;
          while (::read(wake_, &v, sizeof v) > 0) {
          }
          Completions();
        } else if (id == kListenId) {
          Accept();
        } else {
          OnEvent(id, events[i].events);
        }
      }
      Resume();
      const auto now = Clock::now();
      if (now >= next_scan) {
        Deadlines(now);
        next_scan = now + kTick;
        if (accept_paused_) {
          accept_paused_ = false;
          SetListen(true);
        }
      }
    }
  }

  void SetListen(bool on) {
    epoll_event ev{};
    ev.events = on ? static_cast<uint32_t>(EPOLLIN) : 0u;
    ev.data.u64 = kListenId;
    epoll_ctl(ep_, EPOLL_CTL_MOD, s_.listen_fd_, &ev);
  }

  void Accept() {
    for (;;) {
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      int fd = accept4(s_.listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          accept_paused_ = true;  // out of descriptors: stop accepting for a tick
          SetListen(false);
        }
        return;
      }
      int port = 0;
      std::string ip = PeerIp(ss, &port);
      const int per_client = per_client_[ip];
      if (static_cast<int>(conns_.size()) >= s_.options_.max_connections) {
        ++s_.stats_.refused_total_limit;
        Refuse(fd, 503, "too many connections");
        if (per_client == 0) per_client_.erase(ip);
        continue;
      }
      if (per_client >= s_.options_.max_connections_per_client) {
        ++s_.stats_.refused_client_limit;
        Refuse(fd, 429, "too many connections from " + ip);
        continue;
      }
      int yes = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
      auto c = std::make_unique<Conn>(s_.options_.limits, [this](const Request& r) { return s_.BodyLimitFor(r); });
      c->id = next_id_++;
      c->fd = fd;
      c->ip = ip;
      c->port = port;
      c->deadline = Clock::now() + s_.options_.header_timeout;
      if (s_.tls_) {
        c->ssl = s_.tls_->NewSession(fd);
        if (!c->ssl) {
          ::close(fd);
          continue;
        }
        c->state = State::kHandshake;
      }
      ++per_client_[ip];
      ++s_.stats_.accepted;
      ++s_.stats_.open_connections;
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = c->id;
      c->events = EPOLLIN;
      epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev);
      conns_.emplace(c->id, std::move(c));
    }
  }

  // Over a limit: a short answer (plain connections only) and close.
  void Refuse(int fd, int status, const std::string& message) {
    if (!s_.tls_) {
      const std::string bytes = Canned(status, message);
      [[maybe_unused]] ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      ::shutdown(fd, SHUT_WR);
    }
    ::close(fd);
  }

  void CloseFd(Conn& c) {
    if (c.ssl) {
      SSL_free(c.ssl);
      c.ssl = nullptr;
    }
    if (c.fd >= 0) ::close(c.fd);
    c.fd = -1;
  }

  void Close(uint64_t id) {
    auto it = conns_.find(id);
    if (it == conns_.end()) return;
    Conn& c = *it->second;
    epoll_ctl(ep_, EPOLL_CTL_DEL, c.fd, nullptr);
    CloseFd(c);
    auto pc = per_client_.find(c.ip);
    if (pc != per_client_.end() && --pc->second <= 0) per_client_.erase(pc);
    --s_.stats_.open_connections;
    conns_.erase(it);
  }

  void Interest(Conn& c) {
    uint32_t ev = 0;
    const bool reading = c.state == State::kReading || c.state == State::kDraining || c.state == State::kHandshake;
    if (reading) ev |= EPOLLIN;
    if (c.out_off < c.out.size() || c.ssl_wants_write) ev |= EPOLLOUT;
    if (ev == c.events) return;
    c.events = ev;
    epoll_event e{};
    e.events = ev;
    e.data.u64 = c.id;
    epoll_ctl(ep_, EPOLL_CTL_MOD, c.fd, &e);
  }

  void OnEvent(uint64_t id, uint32_t ev) {
    auto it = conns_.find(id);
    if (it == conns_.end()) return;
    Conn& c = *it->second;
    if ((ev & (EPOLLERR | EPOLLHUP)) && !(ev & EPOLLIN)) return Close(id);
    if (ev & EPOLLOUT) {
      if (c.ssl_wants_write) {
        c.ssl_wants_write = false;
        if (!Read(c)) return;
      }
      if (!Flush(c)) return;
    }
    if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
      if (!Read(c)) return;
    }
  }

  // Returns false when the connection was closed.
  bool Handshake(Conn& c) {
    ERR_clear_error();
    int r = SSL_do_handshake(c.ssl);
    if (r == 1) {
      c.peer_verified = VerifiedPeer(c.ssl, &c.peer_subject, &c.peer_cn);
      c.state = State::kReading;
      Interest(c);
      return true;
    }
    int e = SSL_get_error(c.ssl, r);
    if (e == SSL_ERROR_WANT_READ) {
      c.ssl_wants_write = false;
    } else if (e == SSL_ERROR_WANT_WRITE) {
      c.ssl_wants_write = true;
    } else {
      ++s_.stats_.tls_failures;
      ERR_clear_error();
      Close(c.id);
      return false;
    }
    Interest(c);
    return true;
  }

  // Reads what is available; false when the connection was closed.
  bool Read(Conn& c) {
    if (c.state == State::kHandshake) {
      if (!Handshake(c)) return false;
      if (c.state == State::kHandshake) return true;
    }
    char buf[kReadChunk];
    while (c.state == State::kReading || c.state == State::kDraining) {
      ssize_t n;
      if (c.ssl) {
        ERR_clear_error();
        int r = SSL_read(c.ssl, buf, sizeof buf);
        if (r > 0) {
          n = r;
        } else {
          int e = SSL_get_error(c.ssl, r);
          if (e == SSL_ERROR_WANT_READ) break;
          if (e == SSL_ERROR_WANT_WRITE) {
            c.ssl_wants_write = true;
            Interest(c);
            break;
          }
          ERR_clear_error();
          Close(c.id);
          return false;
        }
      } else {
        n = ::recv(c.fd, buf, sizeof buf, 0);
        if (n < 0) {
          if (errno == EAGAIN || errno == EWOULDBLOCK) break;
          if (errno == EINTR) continue;
          Close(c.id);
          return false;
        }
        if (n == 0) {
          Close(c.id);
          return false;
        }
      }
      if (c.state == State::kDraining) {
        c.drained += static_cast<size_t>(n);
        if (c.drained > kLingerBytes) {
          Close(c.id);
          return false;
        }
        continue;
      }
      c.in.append(buf, static_cast<size_t>(n));
      if (!Process(c)) return false;
    }
    return true;
  }

  // Parses buffered bytes; dispatches a complete request. False when closed.
  bool Process(Conn& c) {
    while (c.state == State::kReading && !c.in.empty()) {
      const size_t used = c.parser.Feed(c.in.data(), c.in.size());
      c.in.erase(0, used);
      // The header deadline runs from the connection for its first request,
      // from the first byte for a later one.
      if (c.idle && c.parser.started()) {
        c.idle = false;
        c.deadline = Clock::now() + s_.options_.header_timeout;
      }
      if (c.parser.failed()) {
        ++s_.stats_.bad_requests;
        Response res;
        res.status = c.parser.error_status();
        res.error = c.parser.error_message();
        s_.Finish(c.parser.request(), res);
        c.in.clear();
        return Answer(c, Serialize(res, false, false), false, true);
      }
      if (c.parser.headers_done() && !c.headers_seen) {
        c.headers_seen = true;
        c.deadline = Clock::now() + s_.options_.body_timeout;
        if (c.parser.expects_continue() && !c.parser.done() && !c.sent_continue) {
          c.sent_continue = true;
          c.out += "HTTP/1.1 100 Continue\r\n\r\n";
          if (!Flush(c)) return false;
        }
      }
      if (c.parser.done()) return Dispatch(c);
    }
    return true;
  }

  bool Dispatch(Conn& c) {
    auto req = std::make_unique<Request>(std::move(c.parser.request()));
    const bool keep_alive = c.parser.keep_alive();
    req->remote_addr = c.ip;
    req->remote_port = c.port;
    req->tls = c.ssl != nullptr;
    req->peer_verified = c.peer_verified;
    req->peer_subject = c.peer_subject;
    req->peer_common_name = c.peer_cn;
    c.state = State::kHandling;
    Interest(c);
    const RunOn where = s_.WhereRuns(*req);
    if (where == RunOn::kOnLoop) {
      std::string bytes = Handle(*req, keep_alive);
      return Answer(c, std::move(bytes), keep_alive, false);
    }
    {
      Pool& p = pools_[where == RunOn::kHeavy ? 1 : 0];
      std::lock_guard<std::mutex> l(p.mu);
      if (p.tasks.size() < p.max_queued) {
        p.tasks.push_back(Task{c.id, std::move(req), keep_alive});
        p.cv.notify_one();
        return true;
      }
    }
    ++s_.stats_.busy;
    Response res;
    res.status = 503;
    res.error = "server busy: too many requests waiting";
    res.set_header("Retry-After", "1");
    s_.Finish(*req, res);
    return Answer(c, Serialize(res, keep_alive, req->method == "HEAD"), keep_alive, false);
  }

  std::string Handle(Request& req, bool keep_alive) {
    Response res;
    s_.Dispatch(req, res);
    return Serialize(res, keep_alive, req.method == "HEAD");
  }

  void Work(Pool& p) {
    for (;;) {
      Task t;
      {
        std::unique_lock<std::mutex> l(p.mu);
        p.cv.wait(l, [&p] { return p.stop || !p.tasks.empty(); });
        if (p.tasks.empty()) return;
        t = std::move(p.tasks.front());
        p.tasks.pop_front();
      }
      std::string bytes = Handle(*t.req, t.keep_alive);
      {
        std::lock_guard<std::mutex> l(done_mu_);
        done_.push_back(Done{t.conn, std::move(bytes), t.keep_alive});
      }
      Wake();
    }
  }

  void Completions() {
    std::deque<Done> ready;
    {
      std::lock_guard<std::mutex> l(done_mu_);
      ready.swap(done_);
    }
    for (Done& d : ready) {
      auto it = conns_.find(d.conn);
      if (it == conns_.end()) continue;  // closed meanwhile
      Answer(*it->second, std::move(d.bytes), d.keep_alive, false);
    }
  }

  // Queues an answer and writes what the socket takes. False when closed.
  bool Answer(Conn& c, std::string bytes, bool keep_alive, bool linger) {
    c.out += bytes;
    c.state = State::kWriting;
    c.close_after_write = !keep_alive;
    c.linger_after_write = linger || (!keep_alive && !c.in.empty());
    c.deadline = Clock::now() + s_.options_.write_timeout;
    return Flush(c);
  }

  // Writes pending output; on the end of an answer, reads the next request.
  bool Flush(Conn& c) {
    while (c.out_off < c.out.size()) {
      const char* p = c.out.data() + c.out_off;
      const size_t left = c.out.size() - c.out_off;
      ssize_t n;
      if (c.ssl) {
        ERR_clear_error();
        int r = SSL_write(c.ssl, p, static_cast<int>(std::min<size_t>(left, 1 << 20)));
        if (r > 0) {
          n = r;
        } else {
          int e = SSL_get_error(c.ssl, r);
          if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) break;
          ERR_clear_error();
          Close(c.id);
          return false;
        }
      } else {
        n = ::send(c.fd, p, left, MSG_NOSIGNAL);
        if (n < 0) {
          if (errno == EAGAIN || errno == EWOULDBLOCK) break;
          if (errno == EINTR) continue;
          Close(c.id);
          return false;
        }
      }
      c.out_off += static_cast<size_t>(n);
    }
    if (c.out_off < c.out.size()) {
      Interest(c);
      return true;
    }
    c.out.clear();
    c.out_off = 0;
    if (c.state != State::kWriting) {
      Interest(c);
      return true;
    }
    if (c.close_after_write) {
      if (!c.linger_after_write) {
        Close(c.id);
        return false;
      }
      // Half-close and read what the client still sends for a moment, so it
      // sees the answer instead of a reset.
      if (c.ssl) SSL_shutdown(c.ssl);
      ::shutdown(c.fd, SHUT_WR);
      c.state = State::kDraining;
      c.deadline = Clock::now() + kLinger;
      Interest(c);
      return true;
    }
    // Keep-alive: the next request (perhaps already buffered).
    c.parser.Reset();
    c.state = State::kReading;
    c.sent_continue = false;
    c.headers_seen = false;
    c.idle = true;
    c.deadline = Clock::now() + s_.options_.idle_timeout;
    Interest(c);
    if (!c.in.empty() || (c.ssl && SSL_pending(c.ssl) > 0)) resume_.push_back(c.id);
    return true;
  }

  // Connections back to reading with bytes already buffered (pipelined
  // requests, decrypted TLS records): parsed here, not from inside Flush.
  void Resume() {
    while (!resume_.empty()) {
      std::vector<uint64_t> ids;
      ids.swap(resume_);
      for (uint64_t id : ids) {
        auto it = conns_.find(id);
        if (it == conns_.end()) continue;
        Conn& c = *it->second;
        if (c.state != State::kReading) continue;
        if (!c.in.empty() && !Process(c)) continue;
        if (c.state == State::kReading && c.ssl && SSL_pending(c.ssl) > 0) Read(c);
      }
    }
  }

  void Deadlines(Clock::time_point now) {
    std::vector<uint64_t> late;
    for (auto& [id, c] : conns_)
      if (c->state != State::kHandling && now >= c->deadline) late.push_back(id);
    for (uint64_t id : late) {
      auto it = conns_.find(id);
      if (it == conns_.end()) continue;
      Conn& c = *it->second;
      if (c.state == State::kReading && c.parser.started()) {
        // A slow request: 408, written once without waiting, then closed.
        ++s_.stats_.timed_out;
        Response res;
        res.status = 408;
        res.error = c.parser.headers_done() ? "request body not received in time" : "request headers not received in time";
        s_.Finish(c.parser.request(), res);
        const std::string bytes = Serialize(res, false, false);
        if (c.ssl) {
          ERR_clear_error();
          SSL_write(c.ssl, bytes.data(), static_cast<int>(bytes.size()));
          ERR_clear_error();
        } else {
          [[maybe_unused]] ssize_t n = ::send(c.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        }
      } else if (c.state == State::kWriting || c.state == State::kHandshake) {
        ++s_.stats_.timed_out;
      }
      Close(id);
    }
  }

  Server& s_;
  int ep_ = -1;
  int wake_ = -1;
  std::atomic<bool> stopping_{false};
  bool accept_paused_ = false;
  std::thread io_;
  std::vector<std::thread> workers_;
  uint64_t next_id_ = 2;
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns_;
  std::unordered_map<std::string, int> per_client_;
  std::vector<uint64_t> resume_;

  Pool pools_[2];
  std::mutex done_mu_;
  std::deque<Done> done_;
};

// ---------------------------------------------------------------------------

Server::Server(ServerOptions options) : options_(std::move(options)) {}

Server::~Server() {
  Stop();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

Server& Server::Add(const char* method, const std::string& pattern, Handler h, RunOn where, size_t max_body) {
  routes_.push_back(Route{method, pattern, std::regex(pattern), std::move(h), where, max_body});
  return *this;
}
Server& Server::Get(const std::string& p, Handler h, RunOn w, size_t b) { return Add("GET", p, std::move(h), w, b); }
Server& Server::Post(const std::string& p, Handler h, RunOn w, size_t b) { return Add("POST", p, std::move(h), w, b); }
Server& Server::Put(const std::string& p, Handler h, RunOn w, size_t b) { return Add("PUT", p, std::move(h), w, b); }
Server& Server::Patch(const std::string& p, Handler h, RunOn w, size_t b) { return Add("PATCH", p, std::move(h), w, b); }
Server& Server::Delete(const std::string& p, Handler h, RunOn w, size_t b) { return Add("DELETE", p, std::move(h), w, b); }
Server& Server::Options(const std::string& p, Handler h, RunOn w, size_t b) { return Add("OPTIONS", p, std::move(h), w, b); }

RunOn Server::WhereRuns(const Request& req) const {
  const std::string method = req.method == "HEAD" ? "GET" : req.method;
  for (const Route& r : routes_)
    if (r.method == method && std::regex_match(req.path, r.re)) return r.where;
  return RunOn::kOnLoop;  // 404, 405 and OPTIONS answers are made here, cheaply
}

size_t Server::BodyLimitFor(const Request& req) const {
  const std::string method = req.method == "HEAD" ? "GET" : req.method;
  const bool carries_body = method == "POST" || method == "PUT" || method == "PATCH";
  for (const Route& r : routes_)
    if (r.method == method && std::regex_match(req.path, r.re))
      return r.max_body > 0 ? r.max_body : carries_body ? options_.limits.max_body_bytes : options_.small_body_bytes;
  return options_.small_body_bytes;  // 404 and 405 answers read no large body
}

void Server::Dispatch(Request& req, Response& res) const {
  const std::string method = req.method == "HEAD" ? "GET" : req.method;
  const Route* route = nullptr;
  for (const Route& r : routes_) {
    if (r.method == method && std::regex_match(req.path, req.matches, r.re)) {
      route = &r;
      break;
    }
  }
  if (route) {
    req.route = route->pattern;
    try {
      route->handler(req, res);
      if (res.status < 0) res.status = 200;
    } catch (...) {
      res = Response();
      res.status = 500;
      if (exception_handler_) {
        try {
          exception_handler_(req, res, std::current_exception());
        } catch (...) {
        }
      } else {
        res.error = "internal error";
      }
      if (res.status < 0) res.status = 500;
    }
  } else {
    // Allowed methods in a fixed order, then HEAD (with GET) and OPTIONS.
    std::vector<std::string> allowed;
    for (const char* m : {"GET", "POST", "PUT", "PATCH", "DELETE"})
      for (const Route& r : routes_)
        if (r.method == m && std::regex_match(req.path, r.re)) {
          allowed.push_back(m);
          break;
        }
    if (allowed.empty()) {
      res.status = 404;
      res.error = "no route " + req.method + " " + req.path;
    } else {
      if (std::find(allowed.begin(), allowed.end(), "GET") != allowed.end()) allowed.push_back("HEAD");
      if (std::find(allowed.begin(), allowed.end(), "OPTIONS") == allowed.end()) allowed.push_back("OPTIONS");
      std::string allow;
      for (const auto& m : allowed) allow += (allow.empty() ? "" : ", ") + m;
      res.set_header("Allow", allow);
      if (method == "OPTIONS") {
        res.status = 204;
      } else {
        res.status = 405;
        res.error = req.method + " " + req.path + ": method not allowed (allowed: " + allow + ")";
      }
    }
  }
  Finish(req, res);
}

void Server::Finish(const Request& req, Response& res) const {
  if (res.status >= 400 && res.body.empty()) {
    if (error_handler_) {
      try {
        error_handler_(req, res);
      } catch (...) {
      }
    }
    if (res.body.empty()) res.set_content((res.error.empty() ? ReasonPhrase(res.status) : res.error) + "\n", "text/plain");
  }
  if (logger_) {
    try {
      logger_(req, res);
    } catch (...) {
    }
  }
}

Status Server::Bind() {
  // OpenSSL writes to its socket without MSG_NOSIGNAL: a peer that closed
  // mid-handshake must not kill the process with SIGPIPE (a write then fails
  // with EPIPE instead).
  ::signal(SIGPIPE, SIG_IGN);
  if (options_.tls) {
    auto ctx = TlsContext::Create(options_.tls_options);
    if (!ctx.ok()) return ctx.status();
    tls_ = std::move(*ctx);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(options_.port);
  int rc = getaddrinfo(options_.host.empty() ? nullptr : options_.host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) return Unavailable("cannot resolve " + options_.host + ": " + gai_strerror(rc));
  Status st = Unavailable("cannot bind " + options_.host + ":" + port + " (in use, or not a local address)");
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 1024) == 0) {
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
      PeerIp(ss, &port_);
      listen_fd_ = fd;
      st = Status::Ok();
      break;
    }
    ::close(fd);
  }
  freeaddrinfo(res);
  if (!st.ok()) return st;
  loop_ = std::make_unique<Loop>(*this);
  return loop_->Init();
}

void Server::Start() {
  if (loop_) loop_->Start();
}

void Server::Stop() {
  if (loop_) loop_->Stop();
}

}  // namespace berth::http
