// An event-driven HTTP/1.1 server: one thread owns every socket (epoll,
// non-blocking, keep-alive, optional TLS) and parses requests with the limits
// of parser.h; a bounded pool of workers runs route handlers, only for
// complete requests, so a slow or hostile client never holds a worker.
//
// Deadlines: the request line and headers must arrive within header_timeout
// of the connection (or of the first byte of a later request on it), the body
// within body_timeout of the headers, a response must be written within
// write_timeout, and an idle keep-alive connection is closed after
// idle_timeout. A late request answers 408 and the connection closes.
// Connections are limited in total and per client address (503 / 429, then
// closed). When max_queued requests already wait for a worker, the next
// answers 503 at once.
//
// Routes follow cpp-httplib: s.Get(R"(/v1/jobs/(\d+))", handler) with
// handler(const Request&, Response&) and the pattern's captures in
// req.matches. A path that matches a route of other methods answers 405 with
// Allow (OPTIONS: 204 with Allow); no match answers 404. HEAD runs the GET
// route and sends no body. Routes marked kOnLoop run on the I/O thread itself
// (for cheap probes such as /healthz that must answer while every worker is
// busy); they must never block.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "berth/common/status.h"
#include "berth/http/message.h"
#include "berth/http/parser.h"
#include "berth/http/tls.h"

namespace berth::http {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port (see Server::port())
  int workers = 8;
  size_t max_queued = 1024;            // requests waiting for a worker; 503 beyond
  // Routes marked RunOn::kHeavy (large reads) run on a pool of their own, so
  // a flood of them never holds the workers that writes and small reads use.
  int heavy_workers = 2;
  size_t max_heavy_queued = 256;       // heavy requests waiting; 503 beyond
  int heavy_nice = 10;                 // the heavy pool's threads run at this nice value (0: unchanged)
  // Linux: the heavy pool's threads run under SCHED_IDLE instead (they get a
  // core only when no normal thread wants it, and never preempt one on
  // wakeup), falling back to heavy_nice where refused.
  bool heavy_idle = true;
  int max_connections = 4096;          // in total; 503 beyond
  int max_connections_per_client = 64; // per client IP address; 429 beyond
  std::chrono::milliseconds header_timeout{10'000};
  std::chrono::milliseconds body_timeout{30'000};
  std::chrono::milliseconds write_timeout{30'000};
  std::chrono::milliseconds idle_timeout{60'000};
  ParserLimits limits;  // limits.max_body_bytes: the largest body of any route
  // Bodies of requests that carry none by design (GET, HEAD, DELETE, OPTIONS)
  // and of paths with no route; a route may set its own limit (Route::max_body).
  size_t small_body_bytes = 64 << 10;
  bool tls = false;
  TlsOptions tls_options;
};

// Counters, readable while serving.
struct ServerStats {
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> refused_total_limit{0};
  std::atomic<uint64_t> refused_client_limit{0};
  std::atomic<uint64_t> timed_out{0};       // header, body or write deadline passed
  std::atomic<uint64_t> bad_requests{0};    // framing errors and limits (4xx from the parser)
  std::atomic<uint64_t> tls_failures{0};    // handshakes refused
  std::atomic<uint64_t> busy{0};            // 503: the worker queue was full
  std::atomic<int64_t> open_connections{0};
};

using Handler = std::function<void(const Request&, Response&)>;
using ExceptionHandler = std::function<void(const Request&, Response&, std::exception_ptr)>;
using Logger = std::function<void(const Request&, const Response&)>;

// Where a route's handler runs: the worker pool, the I/O thread itself (only
// for answers that never block), or the pool for heavy requests.
enum class RunOn { kWorker, kOnLoop, kHeavy };

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Routes; register them all before Start(). max_body: the route's body
  // limit (0: limits.max_body_bytes for POST, PUT and PATCH, small_body_bytes
  // for the others).
  Server& Get(const std::string& pattern, Handler h, RunOn where = RunOn::kWorker, size_t max_body = 0);
  Server& Post(const std::string& pattern, Handler h, RunOn where = RunOn::kWorker, size_t max_body = 0);
  Server& Put(const std::string& pattern, Handler h, RunOn where = RunOn::kWorker, size_t max_body = 0);
  Server& Patch(const std::string& pattern, Handler h, RunOn where = RunOn::kWorker, size_t max_body = 0);
  Server& Delete(const std::string& pattern, Handler h, RunOn where = RunOn::kWorker, size_t max_body = 0);
  Server& Options(const std::string& pattern, Handler h, RunOn where = RunOn::kWorker, size_t max_body = 0);
  // Called for every answer of status >= 400 whose body is empty (res.error
  // says why when the server made the answer), after handlers and for errors
  // found before any handler ran (framing, limits, deadlines, no route).
  void set_error_handler(Handler h) { error_handler_ = std::move(h); }
  void set_exception_handler(ExceptionHandler h) { exception_handler_ = std::move(h); }
  // Called once per answered request (not for refused connections).
  void set_logger(Logger l) { logger_ = std::move(l); }

  // Opens the listening socket (and the TLS context); then port() is known.
  // Sets SIGPIPE to be ignored in the process (OpenSSL's socket writes).
  Status Bind();
  // Serves on background threads until Stop().
  void Start();
  void Stop();
  int port() const { return port_; }
  const ServerStats& stats() const { return stats_; }
  const ServerOptions& options() const { return options_; }

  // Routes a complete request: runs the handler, or answers 404/405/204.
  // Public for tests; the server calls it on a worker (or the I/O thread).
  void Dispatch(Request& req, Response& res) const;
  // Where the route of this request runs (kOnLoop for answers the server
  // makes itself: 404, 405, OPTIONS).
  RunOn WhereRuns(const Request& req) const;
  bool RunsOnLoop(const Request& req) const { return WhereRuns(req) == RunOn::kOnLoop; }
  // The body limit of a request, from its method and path (read before its body).
  size_t BodyLimitFor(const Request& req) const;

 private:
  struct Route {
    std::string method;
    std::string pattern;
    std::regex re;
    Handler handler;
    RunOn where;
    size_t max_body;  // 0: by method
  };
  class Loop;
  Server& Add(const char* method, const std::string& pattern, Handler h, RunOn where, size_t max_body);
  void Finish(const Request& req, Response& res) const;

  ServerOptions options_;
  std::vector<Route> routes_;
  Handler error_handler_;
  ExceptionHandler exception_handler_;
  Logger logger_;
  std::unique_ptr<TlsContext> tls_;
  std::unique_ptr<Loop> loop_;
  int listen_fd_ = -1;
  int port_ = 0;
  mutable ServerStats stats_;
  friend class Loop;
};

}  // namespace berth::http
