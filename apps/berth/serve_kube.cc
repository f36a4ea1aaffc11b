// `berth serve --kubeconfig FILE`: Berth as a Kubernetes scheduler of its own
// (src/berth/kubesched/kube_scheduler.h). The cluster comes from the API server's
// Nodes; pods whose spec.schedulerName is --scheduler-name are placed and
// bound. HTTP serves /healthz, /readyz, /metrics, /v1/nodes, /v1/pods and the
// autoscaled Deployments: /v1/services, /v1/services/NS/NAME and POST
// /v1/services/NS/NAME/load (docs/services.md, "On Kubernetes").

#include <csignal>
#include <ctime>
#include <iostream>
#include <unistd.h>

#include "berth/cluster/node_labels.h"
#include "berth/http/server.h"
#include "berth/hetero/catalog.h"
#include "berth/kubesched/kube_scheduler.h"
#include "berth/kubesched/lease.h"
#include "berth/server/http_server.h"
#include "berth/tenancy/queue_yaml.h"
#include "serve_kube.h"
#include "version_info.h"

namespace berth::apps {

StatusOr<std::vector<std::pair<std::string, cluster::Level>>> ParseTopologyLabels(
    const std::vector<std::string>& specs) {
  std::vector<std::pair<std::string, cluster::Level>> out;
  for (const auto& s : specs) {
    auto one = cluster::ParseTopologyLabel(s);
    if (!one.ok()) return InvalidArgument("--topology-label: " + one.status().message());
    out.push_back(*one);
  }
  return out;
}

sigset_t BlockStopSignals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  return stop_signals;
}

int StartupFailed(server::Logger& log, const std::string& what, const Status& s) {
  log.Error("startup_failed", {{"what", what}, {"error", s.message()}});
  std::cerr << "berth serve: " << s.message() << "\n";
  return 1;
}

int ServeKube(const KubeServeFlags& f) {
  sigset_t stop_signals = BlockStopSignals();
  server::Logger log;
  log.set_format(f.log_format);
  log.set_level(f.log_level);
  auto fail = [&](const std::string& what, const Status& s) { return StartupFailed(log, what, s); };
  auto listen = server::ParseListen(f.listen);
  if (!listen.ok()) return fail("listen", listen.status());
  auto cfg = kube::ResolveKubeConfig(f.kubeconfig);
  if (!cfg.ok()) return fail("kubeconfig", cfg.status());
  if (f.insecure_skip_tls_verify) cfg->insecure_skip_tls_verify = true;
  kube::KubeSchedulerOptions opts;
  opts.scheduler_name = f.scheduler_name;
  opts.policy = f.policy;
  opts.min_runtime = f.min_runtime;
  opts.plugin_args = f.plugin_args;
  opts.preemption_grace = f.preemption_grace;
  opts.yield_best_effort = f.yield_best_effort;
  opts.yield_training_grace = f.yield_training_grace;
  opts.colocation = f.colocation;
  opts.repair = f.repair;
  opts.spares = f.spares;
  opts.repair_cost = f.repair_cost;
  opts.replacement_timeout = f.repair_timeout;
  auto levels = ParseTopologyLabels(f.topology_labels);
  if (!levels.ok()) return fail("topology-label", levels.status());
  opts.node_model.levels = *levels;
  hetero::Catalog catalog;
  bool have_catalog = false;
  if (!f.catalog.empty()) {
    auto c = hetero::LoadCatalog(f.catalog);
    if (c.ok()) {
      catalog = std::move(c).value();
      have_catalog = true;
    } else {
      log.Warn("catalog_unavailable", {{"catalog", f.catalog}, {"error", c.status().message()},
                                       {"hint", "GPU products are used as type names as they are"}});
    }
  }
  if (have_catalog) opts.node_model.catalog = &catalog;
  opts.catalog = f.catalog;  // a queue tree in normalized units converts through it
  opts.throughputs = f.throughputs;
  if (!f.queues.empty()) {  // resolved against the cluster the Nodes make
    auto file = tenancy::ReadQueueFile(f.queues);
    if (!file.ok()) return fail("queues", file.status());
    opts.usage_half_life = file->half_life;
    opts.queue_file = std::move(file).value();
    opts.queue_file_name = f.queues;
  }
  kube::ClientOptions co;
  co.qps = f.kube_qps;
  co.burst = f.kube_burst;
  kube::KubeClient client(*cfg, co);
  kube::KubeConfig event_cfg = *cfg;
  event_cfg.temp_files.clear();  // owned by the first client
  kube::ClientOptions eo = co;
  kube::KubeClient event_client(event_cfg, eo);
  server::Metrics metrics;
  metrics.build_version = BERTH_VERSION;
  metrics.build_commit = BERTH_GIT_COMMIT;
  metrics.build_type = BERTH_BUILD_TYPE;
  std::atomic<bool> leading{!f.leader_elect};
  if (f.leader_elect) opts.leading = &leading;
  kube::KubeScheduler sched(client, event_client, opts, log, metrics);
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  kube::LeaseOptions lo;
  lo.ns = f.lease_namespace.empty() ? cfg->ns : f.lease_namespace;
  lo.name = f.lease_name;
  lo.identity = f.lease_identity.empty() ? std::string(host) : f.lease_identity;
  kube::LeaseElector elector(client, lo);

  std::string token;  // what POST /v1/services/NS/NAME/load must present
  if (!f.token_file.empty()) {
    auto t = ReadToken(f.token_file, "--token-file");
    if (!t.ok()) return fail("token", t.status());
    token = *t;
  } else {
    log.Warn("writes_unauthenticated", {{"hint", "pass --token-file to require a bearer token for load reports"}});
  }

  // Berth's HTTP server (src/berth/http): deadlines and connection limits.
  http::ServerOptions ho;
  ho.host = listen->first;
  ho.port = listen->second;
  http::Server http(ho);
  http.Get("/healthz", [](const http::Request&, http::Response& res) { res.set_content("ok\n", "text/plain"); },
           http::RunOn::kOnLoop);
  http.Get("/readyz", [&](const http::Request&, http::Response& res) {
    const bool ready = sched.ready() && leading.load();
    res.status = ready ? 200 : 503;
    res.set_content(ready ? "ready\n" : (leading.load() ? "loading\n" : "standby: leader " + elector.holder() + "\n"),
                    "text/plain");
  });
  http.Get("/metrics", [&](const http::Request&, http::Response& res) {
    res.set_content(sched.MetricsText() + sched.QueueMetricsText(), "text/plain; version=0.0.4");
  });
  http.Get("/v1/queues", [&](const http::Request&, http::Response& res) {
    res.set_content(sched.QueuesJson().dump(), "application/json");
  });
  http.Get("/v1/nodes", [&](const http::Request&, http::Response& res) {
    res.set_content(nlohmann::json({{"nodes", sched.NodesJson()}}).dump(), "application/json");
  });
  http.Get("/v1/pods", [&](const http::Request&, http::Response& res) {
    res.set_content(nlohmann::json({{"pods", sched.PodsJson()}}).dump(), "application/json");
  });
  // Services (autoscaled Deployments, src/berth/kubesched/kube_autoscale.h).
  auto answer = [](http::Response& res, const kube::KubeScheduler::Answer& a) {
    res.status = a.status;
    res.set_content(a.body.dump(), "application/json");
  };
  http.Get("/v1/services", [&](const http::Request&, http::Response& res) {
    res.set_content(nlohmann::json({{"services", sched.ServicesJson()}}).dump(), "application/json");
  });
  http.Get(R"(/v1/services/([^/]+)/([^/]+))", [&](const http::Request& req, http::Response& res) {
    answer(res, sched.GetService(req.matches[1], req.matches[2]));
  });
  http.Post(R"(/v1/services/([^/]+)/([^/]+)/load)", [&](const http::Request& req, http::Response& res) {
    if (!server::WriteAuthorized(token, req, res)) return;
    if (!leading.load()) {
      answer(res, {503, {{"error", "standby: leader " + elector.holder()}}});
      return;
    }
    answer(res, sched.ReportServiceLoad(req.matches[1], req.matches[2], req.body));
  });
  if (Status bound = http.Bind(); !bound.ok()) return fail("listen", bound);
  const int port = http.port();
  http.Start();
  log.Info("listening", {{"host", listen->first}, {"port", port}, {"kube", cfg->server},
                         {"scheduler_name", f.scheduler_name}, {"leader_elect", f.leader_elect}});
  // Wait for a signal while campaigning, then while leading.
  std::atomic<bool> stop{false};
  std::atomic<bool> lost{false};
  std::string lost_reason;
  std::mutex lost_mu;
  std::thread campaign;
  std::atomic<bool> start_done{false};
  Status start_status;
  auto lead = [&] {
    if (f.leader_elect) {
      log.Info("campaigning", {{"lease", lo.ns + "/" + lo.name}, {"identity", lo.identity}});
      if (!elector.Campaign(stop).ok()) return;
      leading = true;
      log.Info("leading", {{"lease", lo.ns + "/" + lo.name}, {"identity", lo.identity}});
      elector.KeepLeading([&](const std::string& why) {
        leading = false;
        std::lock_guard<std::mutex> lock(lost_mu);
        lost_reason = why;
        lost = true;
      });
    }
    start_status = sched.Start();
    start_done = true;
  };
  campaign = std::thread(lead);
  int sig = 0;
  int code = 0;
  while (sig <= 0) {
    siginfo_t info;
    const timespec tick{0, 200'000'000};
    sig = sigtimedwait(&stop_signals, &info, &tick);
    if (lost) {
      std::lock_guard<std::mutex> lock(lost_mu);
      log.Error("stepping_down", {{"reason", lost_reason}, {"exit_status", 3}});
      code = 3;
      break;
    }
    if (start_done && !start_status.ok()) {
      log.Error("startup_failed", {{"what", "kube"}, {"error", start_status.message()}});
      std::cerr << "berth serve: " << start_status.message() << "\n";
      code = 1;
      break;
    }
  }
  if (sig > 0) log.Info("stopping", {{"signal", sig}});
  stop = true;
  if (campaign.joinable()) campaign.join();
  sched.Stop();
  if (f.leader_elect && code == 0) elector.Resign();
  http.Stop();
  log.Info("stopped", {{"exit_status", code}});
  return code;
}

}  // namespace berth::apps
