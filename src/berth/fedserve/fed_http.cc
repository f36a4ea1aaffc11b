// Routes of the dispatcher's HTTP API (fed_http.h).
#include "berth/fedserve/fed_http.h"

#include <charconv>

#include "berth/http/server.h"

namespace berth::fedserve {

using nlohmann::json;
using server::ApiResult;

namespace {

void Send(http::Response& res, const ApiResult& r) { server::SendJson(res, r); }
std::optional<int64_t> ParseId(const std::string& s) { return server::ParseIdSegment(s); }

}  // namespace

FedHttpServer::FedHttpServer(Dispatcher& dispatcher, server::Logger& log, server::HttpOptions options)
    : d_(dispatcher), log_(log), options_(std::move(options)) {
  server_ = std::make_unique<http::Server>(server::ToServerOptions(options_));
  Routes();
}

FedHttpServer::~FedHttpServer() { Stop(); }

void FedHttpServer::Routes() {
  http::Server& s = *server_;
  auto authorized = [this](const http::Request& req, http::Response& res) {
    return server::WriteAuthorized(options_.token, req, res);
  };
  auto ready = [this](http::Response& res) {
    if (d_.ready()) return true;
    Send(res, d_.NotReady());  // a standby names the leader
    return false;
  };
  auto with_id = [](const http::Request& req, http::Response& res, auto&& fn) {
    auto id = ParseId(req.matches[1]);
    if (!id)
      return Send(res, ApiResult::Error(400, "job id '" + std::string(req.matches[1]) + "': expected a non-negative integer"));
    Send(res, fn(*id));
  };
  s.Post("/v1/jobs", [this, authorized](const http::Request& req, http::Response& res) {
    if (authorized(req, res)) Send(res, d_.SubmitJob(req.body));
  });
  s.Get("/v1/jobs", [this, ready](const http::Request& req, http::Response& res) {
    if (!ready(res)) return;
    int64_t after = -1, limit = 1000;
    if (auto bad = server::ParseListPage(req, after, limit)) return Send(res, *bad);
    Send(res, d_.ListJobs(req.get_param_value("state"), after, limit));
  }, http::RunOn::kHeavy);
  s.Get(R"(/v1/jobs/([^/]+)/why)", [this, ready, with_id](const http::Request& req, http::Response& res) {
    if (ready(res)) with_id(req, res, [this](int64_t id) { return d_.WhyJob(id); });
  });
  s.Get(R"(/v1/jobs/([^/]+))", [this, ready, with_id](const http::Request& req, http::Response& res) {
    if (ready(res)) with_id(req, res, [this](int64_t id) { return d_.GetJob(id); });
  });
  s.Delete(R"(/v1/jobs/([^/]+))", [this, authorized, with_id](const http::Request& req, http::Response& res) {
    if (authorized(req, res)) with_id(req, res, [this](int64_t id) { return d_.CancelJob(id); });
  });
  s.Get("/v1/federation", [this, ready](const http::Request&, http::Response& res) {
    if (ready(res)) Send(res, d_.Federation());
  });
  s.Get("/healthz", [](const http::Request&, http::Response& res) { Send(res, {200, {{"status", "ok"}}}); },
        http::RunOn::kOnLoop);
  s.Get("/readyz", [this](const http::Request&, http::Response& res) {
    Send(res, d_.ready() ? ApiResult{200, {{"status", "ready"}, {"role", "federation-dispatcher"}}} : d_.NotReady());
  });
  s.Get("/metrics", [this](const http::Request&, http::Response& res) {
    res.set_content(d_.MetricsText(), "text/plain; version=0.0.4");
  });
  server::InstallJsonErrorHandlers(s, log_);
}

Status FedHttpServer::Bind() {
  BERTH_RETURN_IF_ERROR(server_->Bind());
  port_ = server_->port();
  return Status::Ok();
}

void FedHttpServer::Start() { server_->Start(); }

void FedHttpServer::Stop() {
  if (server_) server_->Stop();
}

}  // namespace berth::fedserve
