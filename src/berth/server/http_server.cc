// Routes, authentication and error mapping.
#include "berth/server/http_server.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "berth/http/server.h"
#include "berth/server/dashboard.h"

// The route handlers keep cpp-httplib's spelling (this file served on it
// before): its Request and Response are Berth's own here.
namespace httplib {
using Request = ::berth::http::Request;
using Response = ::berth::http::Response;
}  // namespace httplib

namespace berth::server {

using nlohmann::json;

namespace {

void Send(httplib::Response& res, const ApiResult& r) { SendJson(res, r); }
std::optional<int64_t> ParseId(const std::string& s) { return ParseIdSegment(s); }

// The HTTP server's own counters, in Prometheus text.
std::string HttpMetricsText(const http::ServerStats& st) {
  std::string out;
  auto line = [&out](const char* name, const char* type, const char* help, uint64_t v) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " +
           std::to_string(v) + "\n";
  };
  line("berth_http_connections_open", "gauge", "Open HTTP connections.",
       static_cast<uint64_t>(std::max<int64_t>(0, st.open_connections.load())));
  line("berth_http_connections_accepted_total", "counter", "HTTP connections accepted.", st.accepted.load());
  line("berth_http_connections_refused_total", "counter",
       "HTTP connections refused over the total or per-client limit.",
       st.refused_total_limit.load() + st.refused_client_limit.load());
  line("berth_http_timeouts_total", "counter", "HTTP requests or answers past their deadline.", st.timed_out.load());
  line("berth_http_bad_requests_total", "counter", "HTTP requests refused while reading (framing, limits).",
       st.bad_requests.load());
  line("berth_http_tls_failures_total", "counter", "TLS handshakes refused.", st.tls_failures.load());
  line("berth_http_busy_total", "counter", "HTTP requests answered 503: every worker busy, the queue full.",
       st.busy.load());
  return out;
}

}  // namespace

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char d = 0;
  for (size_t i = 0; i < a.size(); ++i) d |= static_cast<unsigned char>(a[i] ^ b[i]);
  return d == 0;
}

// The credentials of "Authorization: Bearer TOKEN" (the scheme in any case,
// spaces around the token allowed); "" when the header is not a bearer one.
std::string BearerToken(const std::string& h) {
  size_t i = 0;
  while (i < h.size() && (h[i] == ' ' || h[i] == '\t')) ++i;
  const std::string scheme = "bearer";
  if (h.size() < i + scheme.size() + 1) return "";
  for (size_t k = 0; k < scheme.size(); ++k)
    if (std::tolower(static_cast<unsigned char>(h[i + k])) != scheme[k]) return "";
  i += scheme.size();
  if (h[i] != ' ' && h[i] != '\t') return "";
  while (i < h.size() && (h[i] == ' ' || h[i] == '\t')) ++i;
  size_t e = h.size();
  while (e > i && (h[e - 1] == ' ' || h[e - 1] == '\t')) --e;
  return h.substr(i, e - i);
}

bool WriteAuthorized(const std::string& token, const http::Request& req, http::Response& res) {
  if (token.empty()) return true;
  const std::string h = req.get_header_value("Authorization");
  const std::string t = BearerToken(h);
  if (!t.empty() && ConstantTimeEquals(t, token)) return true;
  res.set_header("WWW-Authenticate", "Bearer");
  SendJson(res, ApiResult::Error(401, h.empty() ? "missing bearer token (Authorization: Bearer TOKEN)"
                                                : "invalid bearer token"));
  return false;
}

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr a{};
  if (inet_pton(AF_INET, host.c_str(), &a) == 1) return (ntohl(a.s_addr) >> 24) == 127;
  return false;
}

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

void SendJson(http::Response& res, const ApiResult& r) {
  res.status = r.code;
  if (!r.text.empty()) {
    res.set_content(r.text + "\n", "application/json");
    return;
  }
  res.set_content(r.body.dump(-1, ' ', false, json::error_handler_t::replace) + "\n", "application/json");
}

std::optional<int64_t> ParseIdSegment(const std::string& s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

std::optional<ApiResult> ParseListPage(const http::Request& req, int64_t& after, int64_t& limit) {
  after = -1;
  limit = 1000;
  if (req.has_param("after")) {
    auto v = ParseIdSegment(req.get_param_value("after"));
    if (!v) return ApiResult::Error(400, "after: expected a job id");
    after = *v;
  }
  if (req.has_param("limit")) {
    auto v = ParseIdSegment(req.get_param_value("limit"));
    if (!v) return ApiResult::Error(400, "limit: expected a positive integer");
    limit = *v;
  }
  return std::nullopt;
}

void InstallJsonErrorHandlers(http::Server& s, Logger& log) {
  s.set_error_handler([](const http::Request& req, http::Response& res) {
    if (!res.body.empty()) return;  // a handler already answered
    std::string msg = !res.error.empty()  ? res.error
                      : res.status == 404 ? "no route " + req.method + " " + req.path
                      : res.status == 413 ? "request body too large"
                                          : "request failed";
    SendJson(res, ApiResult::Error(res.status, msg));
  });
  s.set_exception_handler([&log](const http::Request& req, http::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    log.Error("handler_exception", {{"method", req.method}, {"path", req.path}, {"error", what}});
    SendJson(res, ApiResult::Error(500, "internal error: " + what));
  });
}

http::ServerOptions ToServerOptions(const HttpOptions& options) {
  http::ServerOptions o;
  o.host = options.host;
  o.port = options.port;
  o.workers = options.threads;
  o.heavy_idle = options.large_reads_idle;
  o.max_connections = options.max_connections;
  o.max_connections_per_client = options.max_connections_per_client;
  o.header_timeout = std::chrono::milliseconds(options.header_timeout_ms);
  o.body_timeout = std::chrono::milliseconds(options.body_timeout_ms);
  o.limits.max_body_bytes = options.max_body_bytes;
  o.limits.max_header_bytes = options.max_header_bytes;
  if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
    o.tls = true;
    o.tls_options.cert_file = options.tls_cert_file;
    o.tls_options.key_file = options.tls_key_file;
    o.tls_options.client_ca_file = options.tls_client_ca_file;
    o.tls_options.require_client_cert = options.tls_require_client_cert;
  }
  return o;
}

HttpServer::HttpServer(Service& service, Metrics& metrics, Logger& log, HttpOptions options)
    : service_(service), metrics_(metrics), log_(log), options_(std::move(options)),
      server_() {
  server_ = std::make_unique<http::Server>(ToServerOptions(options_));
  Routes();
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Routes() {
  http::Server& s = *server_;

  auto token_ok = [this](const httplib::Request& req) {
    const std::string t = BearerToken(req.get_header_value("Authorization"));
    return !t.empty() && ConstantTimeEquals(t, options_.token);
  };
  // Writes need the token when one is configured.
  auto authorized = [this](const httplib::Request& req, httplib::Response& res) {
    return WriteAuthorized(options_.token, req, res);
  };
  // The extender verbs need a verified client certificate or the token;
  // anonymous only when the operator said so (loopback listeners).
  auto extender_authorized = [this, token_ok](const httplib::Request& req, httplib::Response& res) {
    if (req.peer_verified || options_.extender_anonymous) return true;
    if (!options_.token.empty() && token_ok(req)) return true;
    res.set_header("WWW-Authenticate", "Bearer");
    Send(res, ApiResult::Error(401, "extender verbs need a verified TLS client certificate (--tls-client-ca) or the "
                                    "bearer token (--token-file)"));
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
    if (auto bad = ParseListPage(req, after, limit)) return Send(res, *bad);
    Send(res, service_.ListJobs(req.get_param_value("state"), after, limit, /*as_text=*/true));
  }, http::RunOn::kHeavy);  // large reads: a pool of their own, never holding the workers writes need
  s.Get(R"(/v1/jobs/([^/]+)/why)", [this, with_id, loaded](const httplib::Request& req, httplib::Response& res) {
    if (!loaded(res)) return;
    with_id(req, res, [this](int64_t id) { return service_.WhyJob(id); });
  });
  s.Get(R"(/v1/jobs/([^/]+)/launch)", [this, with_id, loaded](const httplib::Request& req, httplib::Response& res) {
    if (!loaded(res)) return;
    with_id(req, res, [this](int64_t id) { return service_.GetLaunch(id); });
  }, http::RunOn::kHeavy);  // a large gang's spec is a large answer
  s.Get(R"(/v1/jobs/([^/]+))", [this, with_id, loaded](const httplib::Request& req, httplib::Response& res) {
    if (!loaded(res)) return;
    with_id(req, res, [this](int64_t id) { return service_.GetJob(id); });
  });
  s.Delete(R"(/v1/jobs/([^/]+))", [this, authorized, with_id](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    with_id(req, res, [this](int64_t id) { return service_.CancelJob(id); });
  });
  s.Get(R"(/v1/jobs/([^/]+)/logs)", [this, loaded, authorized](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res) || !loaded(res)) return;
    auto id = ParseId(req.matches[1]);
    if (!id) return Send(res, ApiResult::Error(400, "job id: expected a non-negative integer"));
    auto task = ParseId(req.get_param_value("task"));
    if (!req.has_param("task") || !task || *task > INT32_MAX)
      return Send(res, ApiResult::Error(400, "task: expected ?task=N, a task index"));
    int64_t generation = 0;
    if (req.has_param("generation")) {
      auto g = ParseId(req.get_param_value("generation"));
      if (!g || *g < 1 || *g > INT32_MAX) return Send(res, ApiResult::Error(400, "generation: expected a run number >= 1"));
      generation = *g;
    }
    ApiResult r = service_.JobLogs(*id, static_cast<int32_t>(*task), static_cast<int32_t>(generation));
    if (r.code != 200) return Send(res, r);
    res.status = 200;
    res.set_header("X-Berth-Generation", std::to_string(r.body.value("generation", 0)));
    res.set_content(r.body["text"].get<std::string>(), "text/plain; charset=utf-8");
  });
  // The node API: the node token, never the user token.
  auto node_authorized = [this](const httplib::Request& req, httplib::Response& res) {
    if (options_.node_token.empty()) {
      Send(res, ApiResult::Error(403, "the node API is closed: serve with --node-token-file"));
      return false;
    }
    const std::string t = BearerToken(req.get_header_value("Authorization"));
    if (!t.empty() && ConstantTimeEquals(t, options_.node_token)) return true;
    res.set_header("WWW-Authenticate", "Bearer");
    Send(res, ApiResult::Error(401, t.empty() ? "missing node token (Authorization: Bearer TOKEN)" : "invalid node token"));
    return false;
  };
  s.Post("/v1/agent/register", [this, node_authorized](const httplib::Request& req, httplib::Response& res) {
    if (node_authorized(req, res)) Send(res, service_.AgentRegister(req.body));
  });
  s.Post("/v1/agent/heartbeat", [this, node_authorized](const httplib::Request& req, httplib::Response& res) {
    if (node_authorized(req, res)) Send(res, service_.AgentHeartbeat(req.body));
  });
  s.Post("/v1/agent/status", [this, node_authorized](const httplib::Request& req, httplib::Response& res) {
    if (node_authorized(req, res)) Send(res, service_.AgentTaskStatus(req.body));
  });
  s.Post("/v1/agent/logs", [this, node_authorized](const httplib::Request& req, httplib::Response& res) {
    if (!node_authorized(req, res)) return;
    auto num = [&](const char* key, int64_t max) -> std::optional<int64_t> {
      if (!req.has_param(key)) return std::nullopt;
      auto v = ParseId(req.get_param_value(key));
      if (!v || *v > max) return std::nullopt;
      return v;
    };
    auto job = num("job", INT64_MAX), gen = num("generation", INT32_MAX), task = num("task", INT32_MAX),
         offset = num("offset", INT64_MAX);
    const auto attempt = req.has_param("attempt") ? num("attempt", INT32_MAX) : std::optional<int64_t>(0);
    if (!job || !gen || !task || !offset || !attempt || !req.has_param("name") || !req.has_param("agent_id"))
      return Send(res, ApiResult::Error(400, "expected ?name=&agent_id=&job=&generation=&task=&offset=[&attempt=] "
                                             "(non-negative integers)"));
    Send(res, service_.AgentLogUpload(req.get_param_value("name"), req.get_param_value("agent_id"), *job,
                                      static_cast<int32_t>(*gen), static_cast<int32_t>(*task), *offset, req.body,
                                      static_cast<int32_t>(*attempt)));
  });
  s.Post(R"(/v1/services/([^/]+)/load)", [this, authorized, with_id](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    with_id(req, res, [this, &req](int64_t id) { return service_.ReportServiceLoad(id, req.body); });
  });
  s.Get(R"(/v1/services/([^/]+))", [this, with_id, loaded](const httplib::Request& req, httplib::Response& res) {
    if (!loaded(res)) return;
    with_id(req, res, [this](int64_t id) { return service_.GetService(id); });
  });
  s.Get("/v1/queues", [this, loaded](const httplib::Request&, httplib::Response& res) {
    if (loaded(res)) Send(res, service_.Queues());
  }, http::RunOn::kHeavy);
  s.Get("/v1/nodes", [this, loaded](const httplib::Request&, httplib::Response& res) {
    if (loaded(res)) Send(res, service_.Nodes());
  }, http::RunOn::kHeavy);
  s.Get("/v1/topology", [this, loaded](const httplib::Request&, httplib::Response& res) {
    if (loaded(res)) Send(res, service_.Topology());
  }, http::RunOn::kHeavy);
  // The web dashboard (docs/dashboard.md): open like the reads above.
  InstallDashboard(s);
  if (!options_.reports_dir.empty()) InstallReports(s, options_.reports_dir);
  // A federation dispatcher's poll (docs/federation.md, "The live service").
  // With ?lease_until=UNIX_S[&hold_running_s=S] it also grants the member a
  // lease (the dispatcher's fence; needs the token when the server has one).
  s.Get("/v1/digest", [this, loaded, authorized](const httplib::Request& req, httplib::Response& res) {
    if (!loaded(res)) return;
    if (req.has_param("lease_until")) {
      if (!authorized(req, res)) return;
      auto seconds = [&](const char* name, double& out) {
        const std::string v = req.get_param_value(name);
        char* end = nullptr;
        out = std::strtod(v.c_str(), &end);
        return !v.empty() && end == v.c_str() + v.size() && std::isfinite(out) && out >= 0 && out < 1e11;
      };
      double until = 0, hold = 1e10;
      if (!seconds("lease_until", until))
        return Send(res, ApiResult::Error(400, "lease_until: expected seconds since the epoch (a number >= 0)"));
      if (req.has_param("hold_running_s") && !seconds("hold_running_s", hold))
        return Send(res, ApiResult::Error(400, "hold_running_s: expected seconds (a number >= 0)"));
      service_.GrantFederationLease(SecondsToUs(until), SecondsToUs(hold));
    }
    Send(res, service_.Digest());
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
  }, http::RunOn::kWorker, 4 << 10);  // takes no body
  s.Post(R"(/v1/admin/nodes/([^/]+)/quarantine)", [this, admin, who](const httplib::Request& req, httplib::Response& res) {
    if (admin(req, res)) Send(res, service_.Quarantine(req.matches[1], who(req)));
  }, http::RunOn::kWorker, 4 << 10);  // takes no body
  s.Post(R"(/v1/admin/nodes/([^/]+)/drain)", [this, admin, who](const httplib::Request& req, httplib::Response& res) {
    if (admin(req, res)) Send(res, service_.Drain(req.matches[1], req.body, who(req)));
  }, http::RunOn::kWorker, 4 << 10);  // an optional {"deadline_s": S}
  // On the I/O thread: answers while every worker is busy.
  s.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { Send(res, {200, {{"status", "ok"}}}); },
        http::RunOn::kOnLoop);
  s.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    if (service_.ready()) return Send(res, {200, {{"status", "ready"}}});
    Send(res, service_.NotReady());
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(service_.MetricsText() + HttpMetricsText(server_->stats()), "text/plain; version=0.0.4");
  });
  s.Post("/v1/extender/filter", [this, extender_authorized](const httplib::Request& req, httplib::Response& res) {
    if (!extender_authorized(req, res)) return;
    Send(res, service_.ExtenderFilter(req.body));
  });
  s.Post("/v1/extender/prioritize", [this, extender_authorized](const httplib::Request& req, httplib::Response& res) {
    if (!extender_authorized(req, res)) return;
    Send(res, service_.ExtenderPrioritize(req.body));
  });
  s.Post("/v1/extender/preempt", [this, extender_authorized](const httplib::Request& req, httplib::Response& res) {
    if (!extender_authorized(req, res)) return;
    Send(res, service_.ExtenderPreempt(req.body));
  });
  s.Post("/v1/extender/bind", [this, extender_authorized](const httplib::Request& req, httplib::Response& res) {
    if (!extender_authorized(req, res)) return;
    Send(res, service_.ExtenderBind(req.body));
  });

  // Other methods on these paths answer 405 with Allow, OPTIONS 204: the
  // server does it from the routes.

  InstallJsonErrorHandlers(s, log_);
  s.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    ++metrics_.http_requests;
    static constexpr const char* kMethods[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"};
    std::string method = "other";
    for (const char* m : kMethods)
      if (req.method == m) method = m;
    metrics_.http_by_route.Add({method, HandlerLabel(req.route), std::to_string(res.status)});
    if (res.status >= 400) {
      ++metrics_.http_errors;
      // A standby's readyz is 503 by design: probes would flood the log.
      if (res.status >= 500 && req.path != "/readyz")
        log_.Warn("http_error", {{"method", req.method}, {"path", req.path}, {"status", res.status}, {"body", res.body}});
      else if (res.status < 500)  // 4xx: with --log-level debug (a scan of unknown paths must not flood the log)
        log_.Debug("http_client_error", {{"method", method}, {"path", req.path}, {"status", res.status},
                                         {"client", req.remote_addr}});
    }
  });
}

Status HttpServer::Bind() {
  BERTH_RETURN_IF_ERROR(server_->Bind());
  port_ = server_->port();
  return Status::Ok();
}

void HttpServer::Start() { server_->Start(); }

void HttpServer::Stop() {
  if (server_) server_->Stop();
}

}  // namespace berth::server
