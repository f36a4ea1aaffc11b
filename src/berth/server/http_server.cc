// Routes, authentication and error mapping.
#include "berth/server/http_server.h"

#include <httplib.h>

#include <sys/socket.h>

#include <algorithm>
#include <charconv>
#include <vector>

namespace berth::server {

using nlohmann::json;

namespace {

void Send(httplib::Response& res, const ApiResult& r) {
  res.status = r.code;
  res.set_content(r.body.dump(-1, ' ', false, json::error_handler_t::replace) + "\n", "application/json");
}

std::optional<int64_t> ParseId(const std::string& s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char d = 0;
  for (size_t i = 0; i < a.size(); ++i) d |= static_cast<unsigned char>(a[i] ^ b[i]);
  return d == 0;
}

}  // namespace

StatusOr<std::pair<std::string, int>> ParseListen(const std::string& listen) {
  std::string host, port;
  if (!listen.empty() && listen[0] == '[') {
    size_t close = listen.find(']');
    if (close == std::string::npos || close + 1 >= listen.size() || listen[close + 1] != ':')
      return InvalidArgument("--listen '" + listen + "': expected [IPv6]:PORT");
    host = listen.substr(1, close - 1);
    port = listen.substr(close + 2);
  } else {
    size_t colon = listen.rfind(':');
    if (colon == std::string::npos) return InvalidArgument("--listen '" + listen + "': expected HOST:PORT");
    host = listen.substr(0, colon);
    port = listen.substr(colon + 1);
  }
  auto p = ParseId(port);
  if (host.empty() || !p || *p > 65535) return InvalidArgument("--listen '" + listen + "': expected HOST:PORT");
  return std::pair{host, static_cast<int>(*p)};
}

HttpServer::HttpServer(Service& service, Metrics& metrics, Logger& log, HttpOptions options)
    : service_(service), metrics_(metrics), log_(log), options_(std::move(options)),
      server_(std::make_unique<httplib::Server>()) {
  Routes();
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Routes() {
  httplib::Server& s = *server_;
  const int threads = options_.threads;
  s.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  s.set_payload_max_length(options_.max_body_bytes);
  s.set_tcp_nodelay(true);  // small JSON answers: do not wait for Nagle
  // Remember the listening socket: the library listens with a backlog of 5,
  // which drops connection bursts (clients then wait a 1 s SYN retry); Bind()
  // raises it.
  s.set_socket_options([this](int sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listen_fd_ = sock;
  });
  s.set_read_timeout(10, 0);
  s.set_write_timeout(10, 0);

  // Writes need the token when one is configured.
  auto authorized = [this](const httplib::Request& req, httplib::Response& res) {
    if (options_.token.empty()) return true;
    const std::string h = req.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    if (h.size() > prefix.size() && h.compare(0, prefix.size(), prefix) == 0 &&
        ConstantTimeEquals(h.substr(prefix.size()), options_.token))
      return true;
    res.set_header("WWW-Authenticate", "Bearer");
    Send(res, ApiResult::Error(401, h.empty() ? "missing bearer token (Authorization: Bearer TOKEN)"
                                              : "invalid bearer token"));
    return false;
  };
  auto with_id = [](const httplib::Request& req, httplib::Response& res, auto&& fn) {
    auto id = ParseId(req.matches[1]);
    if (!id) return Send(res, ApiResult::Error(400, "job id '" + std::string(req.matches[1]) + "': expected a non-negative integer"));
    Send(res, fn(*id));
  };

  s.Post("/v1/jobs", [this, authorized](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    Send(res, service_.SubmitJob(req.body));
  });
  // Reads need the state: a standby (or a process still loading) has none.
  auto loaded = [this](httplib::Response& res) {
    if (service_.started()) return true;
    Send(res, service_.NotReady());
    return false;
  };

  s.Get("/v1/jobs", [this, loaded](const httplib::Request& req, httplib::Response& res) {
    if (!loaded(res)) return;
    int64_t after = -1, limit = 1000;
    if (req.has_param("after")) {
      auto v = ParseId(req.get_param_value("after"));
      if (!v) return Send(res, ApiResult::Error(400, "after: expected a job id"));
      after = *v;
    }
    if (req.has_param("limit")) {
      auto v = ParseId(req.get_param_value("limit"));
      if (!v) return Send(res, ApiResult::Error(400, "limit: expected a positive integer"));
      limit = *v;
    }
    Send(res, service_.ListJobs(req.get_param_value("state"), after, limit));
  });
  s.Get(R"(/v1/jobs/([^/]+)/why)", [this, with_id, loaded](const httplib::Request& req, httplib::Response& res) {
    if (!loaded(res)) return;
    with_id(req, res, [this](int64_t id) { return service_.WhyJob(id); });
  });
  s.Get(R"(/v1/jobs/([^/]+))", [this, with_id, loaded](const httplib::Request& req, httplib::Response& res) {
    if (!loaded(res)) return;
    with_id(req, res, [this](int64_t id) { return service_.GetJob(id); });
  });
  s.Delete(R"(/v1/jobs/([^/]+))", [this, authorized, with_id](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    with_id(req, res, [this](int64_t id) { return service_.CancelJob(id); });
  });
  s.Get("/v1/queues", [this, loaded](const httplib::Request&, httplib::Response& res) {
    if (loaded(res)) Send(res, service_.Queues());
  });
  s.Get("/v1/nodes", [this, loaded](const httplib::Request&, httplib::Response& res) {
    if (loaded(res)) Send(res, service_.Nodes());
  });
  // The admin API: always needs the token (403 when the server has none); who
  // asked goes to the audit log.
  auto admin = [this, authorized, loaded](const httplib::Request& req, httplib::Response& res) {
    if (options_.token.empty()) Send(res, ApiResult::Error(403, "the admin API needs a token: serve with --token-file"));
    return !options_.token.empty() && authorized(req, res) && loaded(res);
  };
  auto who = [](const httplib::Request& req) { return "bearer token from " + req.remote_addr + ":" + std::to_string(req.remote_port); };
  s.Get("/v1/admin/nodes", [this, admin, who](const httplib::Request& req, httplib::Response& res) {
    if (admin(req, res)) Send(res, service_.AdminNodes(who(req)));
  });
  s.Post(R"(/v1/admin/nodes/([^/]+)/unquarantine)", [this, admin, who](const httplib::Request& req, httplib::Response& res) {
    if (admin(req, res)) Send(res, service_.Unquarantine(req.matches[1], who(req)));
  });
  s.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { Send(res, {200, {{"status", "ok"}}}); });
  s.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    if (service_.ready()) return Send(res, {200, {{"status", "ready"}}});
    Send(res, service_.NotReady());
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(service_.MetricsText(), "text/plain; version=0.0.4");
  });
  s.Post("/v1/extender/filter", [this](const httplib::Request& req, httplib::Response& res) {
    Send(res, service_.ExtenderFilter(req.body));
  });
  s.Post("/v1/extender/prioritize", [this](const httplib::Request& req, httplib::Response& res) {
    Send(res, service_.ExtenderPrioritize(req.body));
  });
  s.Post("/v1/extender/preempt", [this](const httplib::Request& req, httplib::Response& res) {
    Send(res, service_.ExtenderPreempt(req.body));
  });
  s.Post("/v1/extender/bind", [this](const httplib::Request& req, httplib::Response& res) {
    Send(res, service_.ExtenderBind(req.body));
  });

  // The other methods on the API's paths: 405 with the methods that work
  // (OPTIONS: 204 with them).
  struct Resource {
    const char* pattern;
    std::vector<std::string> allow;
  };
  const Resource resources[] = {{"/v1/jobs", {"GET", "POST"}},
                                {R"(/v1/jobs/([^/]+))", {"GET", "DELETE"}},
                                {R"(/v1/jobs/([^/]+)/why)", {"GET"}},
                                {"/v1/queues", {"GET"}},
                                {"/v1/nodes", {"GET"}},
                                {"/v1/admin/nodes", {"GET"}},
                                {R"(/v1/admin/nodes/([^/]+)/unquarantine)", {"POST"}},
                                {"/healthz", {"GET"}},
                                {"/readyz", {"GET"}},
                                {"/metrics", {"GET"}}};
  for (const Resource& r : resources) {
    std::string allow;
    for (const auto& m : r.allow) allow += (allow.empty() ? "" : ", ") + m;
    auto refuse = [allow](const httplib::Request& req, httplib::Response& res) {
      res.set_header("Allow", allow);
      Send(res, ApiResult::Error(405, req.method + " " + req.path + ": method not allowed (allowed: " + allow + ")"));
    };
    auto has = [&r](const char* m) { return std::find(r.allow.begin(), r.allow.end(), m) != r.allow.end(); };
    if (!has("POST")) s.Post(r.pattern, refuse);
    if (!has("DELETE")) s.Delete(r.pattern, refuse);
    s.Put(r.pattern, refuse);
    s.Patch(r.pattern, refuse);
    s.Options(r.pattern, [allow](const httplib::Request&, httplib::Response& res) {
      res.set_header("Allow", allow);
      res.status = 204;
    });
  }

  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;  // a handler already answered
    std::string msg = res.status == 404   ? "no route " + req.method + " " + req.path
                      : res.status == 413 ? "request body too large"
                                          : "request failed";
    Send(res, ApiResult::Error(res.status, msg));
  });
  s.set_exception_handler([this](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    log_.Error("handler_exception", {{"method", req.method}, {"path", req.path}, {"error", what}});
    Send(res, ApiResult::Error(500, "internal error: " + what));
  });
  s.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    ++metrics_.http_requests;
    if (res.status >= 400) {
      ++metrics_.http_errors;
      // A standby's readyz is 503 by design: probes would flood the log.
      if (res.status >= 500 && req.path != "/readyz")
        log_.Warn("http_error", {{"method", req.method}, {"path", req.path}, {"status", res.status}, {"body", res.body}});
    }
  });
}

Status HttpServer::Bind() {
  if (options_.port == 0) {
    port_ = server_->bind_to_any_port(options_.host);
    if (port_ <= 0) return Unavailable("cannot bind " + options_.host + ":0");
  } else {
    if (!server_->bind_to_port(options_.host, options_.port))
      return Unavailable("cannot bind " + options_.host + ":" + std::to_string(options_.port) +
                         " (in use, or not a local address)");
    port_ = options_.port;
  }
  if (listen_fd_ >= 0) ::listen(listen_fd_, 1024);  // Linux: a second listen() resizes the backlog
  return Status::Ok();
}

void HttpServer::Start() {
  thread_ = std::thread([this] { server_->listen_after_bind(); });
}

void HttpServer::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace berth::server
