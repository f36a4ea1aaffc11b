// The HTTP front of the service (cpp-httplib). Routes:
//   POST   /v1/jobs              submit (bearer token when configured); 201 {"id"}, 200 on a retry
//   GET    /v1/jobs[?state=&after=&limit=]   list (paged by id)
//   GET    /v1/jobs/{id}         one job;  GET /v1/jobs/{id}/why  its last verdict
//   DELETE /v1/jobs/{id}         cancel (bearer token when configured)
//   GET    /v1/queues, /v1/nodes, /healthz, /readyz, /metrics
//   POST   /v1/extender/{filter,prioritize,preempt,bind}  Kubernetes extender
// Bodies over HttpOptions::max_body_bytes (16 MiB: kube-scheduler's whole
// NodeLists) answer 413; form-encoded ones are capped at 8 KiB by the library,
// so clients send application/json.
// Errors are JSON {"error": "..."} with a 4xx/5xx status; a handler that
// throws answers 500, never crashes the process. A replica that does not lead
// (standby, loading, stepped down) answers writes, /readyz and the /v1 reads
// 503 with its role and, when known, the leader (Service::NotReady).
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "berth/common/status.h"
#include "berth/server/log.h"
#include "berth/server/metrics.h"
#include "berth/server/service.h"

namespace httplib { class Server; }

namespace berth::server {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 7450;             // 0: any free port (see port())
  std::string token;           // "" = writes are open
  int threads = 32;  // a keep-alive connection holds a thread while open
  size_t max_body_bytes = 16 << 20;  // kube-scheduler sends whole NodeLists (nodeCacheCapable false)
};

// Splits "HOST:PORT" (IPv6 as "[::1]:PORT").
StatusOr<std::pair<std::string, int>> ParseListen(const std::string& listen);

class HttpServer {
 public:
  HttpServer(Service& service, Metrics& metrics, Logger& log, HttpOptions options);
  ~HttpServer();
  // Binds the socket; then port() is the bound port.
  Status Bind();
  // Serves on a background thread until Stop().
  void Start();
  void Stop();
  int port() const { return port_; }

 private:
  void Routes();
  Service& service_;
  Metrics& metrics_;
  Logger& log_;
  HttpOptions options_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  int listen_fd_ = -1;
};

}  // namespace berth::server
