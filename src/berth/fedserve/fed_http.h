// The HTTP front of the live federation dispatcher, on Berth's HTTP server
// (the same limits, TLS and bearer token as a member's, server::HttpOptions).
// Routes:
//   POST   /v1/jobs              submit (bearer token when configured); 201 {"id"}, 200 on a retry
//   GET    /v1/jobs[?state=&after=&limit=]   list (paged by id; each job with its member)
//   GET    /v1/jobs/{id}         one job: where it went, its member's job id, every candidate's estimate
//   GET    /v1/jobs/{id}/why     why it is where it is
//   DELETE /v1/jobs/{id}         cancel (at its member too; bearer token when configured)
//   GET    /v1/federation        members (up, digest, leases), counters
//   GET    /healthz, /readyz, /metrics
#pragma once

#include <memory>

#include "berth/fedserve/dispatcher.h"
#include "berth/server/http_server.h"

namespace berth::http { class Server; }

namespace berth::fedserve {

class FedHttpServer {
 public:
  FedHttpServer(Dispatcher& dispatcher, server::Logger& log, server::HttpOptions options);
  ~FedHttpServer();
  Status Bind();
  void Start();
  void Stop();
  int port() const { return port_; }

 private:
  void Routes();
  Dispatcher& d_;
  server::Logger& log_;
  server::HttpOptions options_;
  std::unique_ptr<http::Server> server_;
  int port_ = 0;
};

}  // namespace berth::fedserve
