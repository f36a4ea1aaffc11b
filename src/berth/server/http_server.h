// The HTTP front of the service, on Berth's event-driven server
// (src/berth/http: deadlines, connection limits, body limits while reading,
// optional TLS with client certificates). Routes:
//   POST   /v1/jobs              submit (bearer token when configured); 201 {"id"}, 200 on a retry
//   GET    /v1/jobs[?state=&after=&limit=]   list (paged by id)
//   GET    /v1/jobs/{id}         one job;  GET /v1/jobs/{id}/why  its last verdict
//   DELETE /v1/jobs/{id}         cancel (bearer token when configured)
//   GET    /v1/queues, /v1/nodes, /healthz, /readyz, /metrics
//   GET    /v1/topology          every node's allocation as columns, by spine and leaf (the dashboard's heat map)
//   GET    /, /ui/PATH           the web dashboard (dashboard.h; open like the reads)
//   GET    /v1/reports[/NAME]    simulation reports in HttpOptions::reports_dir (when set)
//   GET    /v1/digest            the capacity digest a federation dispatcher polls
//   GET    /v1/jobs/{id}/logs?task=N[&generation=G]   a task's log (text; bearer token when configured)
//   POST   /v1/agent/{register,heartbeat,status,logs}   the node API (docs/agent.md): the node token
//   POST   /v1/extender/{filter,prioritize,preempt,bind}  Kubernetes extender:
//          a verified TLS client certificate or the bearer token; anonymous
//          only with HttpOptions::extender_anonymous (loopback deployments)
// Bodies over HttpOptions::max_body_bytes (16 MiB: kube-scheduler's whole
// NodeLists) answer 413 whatever the transfer encoding, before they are read
// whole; routes that take no body (GET, DELETE, unknown paths) read at most
// 64 KiB, the admin actions 4 KiB; header blocks over max_header_bytes 431.
// Another method on an API path answers 405 with an Allow header (OPTIONS:
// 204 with Allow). The auth scheme is case-insensitive ("bearer TOKEN").
// Errors are JSON {"error": "..."} with a 4xx/5xx status; a handler that
// throws answers 500, never crashes the process. A replica that does not lead
// (standby, loading, stepped down) answers writes, /readyz and the /v1 reads
// 503 with its role and, when known, the leader (Service::NotReady).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "berth/common/status.h"
#include "berth/server/log.h"
#include "berth/server/metrics.h"
#include "berth/server/service.h"

namespace berth::http { class Server; struct ServerOptions; struct Request; struct Response; }

namespace berth::server {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 7450;             // 0: any free port (see port())
  std::string token;           // "" = writes are open
  std::string node_token;      // the node API's token (berth agent); "" = the node API is closed
  int threads = 32;  // handler workers; they run complete requests only
  // Large reads (job, node and queue lists) run on a pool of their own under
  // SCHED_IDLE (true) or at nice 10 (false).
  bool large_reads_idle = true;
  size_t max_body_bytes = 16 << 20;  // kube-scheduler sends whole NodeLists (nodeCacheCapable false)
  size_t max_header_bytes = 32 << 10;
  int max_connections = 4096;
  int max_connections_per_client = 64;
  int header_timeout_ms = 10'000;  // request line and headers
  int body_timeout_ms = 30'000;
  // TLS: certificate and key (PEM); with a client CA, client certificates
  // are verified when presented, and a verified one authorizes the extender verbs.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
  bool tls_require_client_cert = false;  // refuse connections without a verified client certificate
  // The extender verbs without credentials (only for a loopback listener).
  bool extender_anonymous = false;
  // Simulation reports the dashboard lists and opens (GET /v1/reports; "" = none).
  std::string reports_dir;
};

// The event-driven server's options for these (listen address, workers,
// limits, deadlines, TLS): one mapping for every server of the service.
http::ServerOptions ToServerOptions(const HttpOptions& options);

// Shared by the service's and the federation dispatcher's servers: an
// ApiResult as the JSON answer; a non-negative id from a path segment; the
// JSON error answers (404, 413, ...) and a handler's exception as a logged 500.
void SendJson(http::Response& res, const ApiResult& result);
std::optional<int64_t> ParseIdSegment(const std::string& s);
void InstallJsonErrorHandlers(http::Server& server, Logger& log);
// The `after` and `limit` parameters of a job list (defaults -1 and 1000): a
// 400 naming the parameter when one is not a non-negative integer.
std::optional<ApiResult> ParseListPage(const http::Request& req, int64_t& after, int64_t& limit);

// Whether a listen host is a loopback address (127.0.0.0/8, ::1, localhost).
bool IsLoopbackHost(const std::string& host);

// Whether two secrets are equal, in time independent of where they differ.
bool ConstantTimeEquals(const std::string& a, const std::string& b);
// The credentials of "Authorization: Bearer TOKEN" (the scheme in any case);
// "" when the header is not a bearer one.
std::string BearerToken(const std::string& header);
// Whether a write may go on: no token is configured, or the request carries it
// as "Authorization: Bearer TOKEN". Otherwise answers 401 (with
// WWW-Authenticate: Bearer, naming a missing or a wrong token) and is false.
bool WriteAuthorized(const std::string& token, const http::Request& req, http::Response& res);

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
  std::unique_ptr<http::Server> server_;
  int port_ = 0;
};

}  // namespace berth::server
