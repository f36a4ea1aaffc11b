// `berth serve`: the scheduling core as a daemon (HTTP API, durable store,
// optional virtual nodes). With no flags: the embedded store in ./berth-data/
// and a small demo cluster of virtual nodes.
//
// With --store etcd:...: one of several replicas. It serves HTTP at once (as
// a standby: 503 naming the leader), campaigns for the store's term, and
// leads once it wins and has loaded the state. When it loses the term it
// stops deciding at once and exits with status 3 (kExitSteppedDown); a
// supervisor restarts it, and it rejoins as a standby.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>

#include "berth/cluster/loaders.h"
#include "berth/hetero/catalog_aliases.h"
#include "berth/hetero/ledger_speeds.h"
#include "berth/kubesched/extender_link.h"
#include "berth/server/colocation_flags.h"
#include "berth/server/http_server.h"
#include "berth/server/service.h"
#include "berth/store/store.h"
#include "berth/tenancy/queue_yaml.h"
#include "commands.h"
#include "install_paths.h"
#include "serve_federation.h"
#include "version_info.h"
#include "serve_kube.h"

namespace berth::apps {

StatusOr<std::string> ReadToken(const std::string& path, const std::string& flag) {
  std::ifstream in(path);
  if (!in) return NotFound(flag + " " + path + ": cannot open");
  std::string token((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.front()))) token.erase(token.begin());
  if (token.empty()) return InvalidArgument(flag + " " + path + ": empty");
  if (token.find_first_of(" \t\r\n") != std::string::npos) return InvalidArgument(flag + " " + path + ": the token has whitespace inside");
  return token;
}

namespace {

constexpr const char* kDemoCluster = "4x8:H100/leaf=2";
constexpr int kExitSteppedDown = 3;
// After losing its term the process has this long to stop in order.
constexpr int kStepDownGraceSeconds = 10;

struct ServeFlags {
  std::string listen = "127.0.0.1:7450";
  std::string store = "sqlite:./berth-data/berth.db";
  std::string cluster;
  std::string token_file;
  // Node agents (docs/agent.md): their token, where their task logs go, the
  // grace of a stopped task, heartbeat timing.
  std::string node_token_file;
  std::string agent_log_dir;
  std::string kill_grace;
  std::string heartbeat_interval;
  std::string heartbeat_timeout;
  // In-place repair with node agents, virtual nodes or --kube (docs/failures.md): as in berth simulate.
  std::string spares = "none";
  std::string repair;  // "" = in-place with --spares, else requeue
  std::string repair_cost;
  std::string failure_rates;  // sizes --spares leaf|spine
  std::string restart_cost;
  std::string repair_peers = "keep";
  std::string repair_timeout;  // --kube: how long a repaired task waits for its replacement pod
  std::string tls_cert, tls_key, tls_client_ca;
  bool tls_require_client_cert = false;  // every connection must present a verified client certificate  // TLS for the API (http/tls.h)
  bool extender_anonymous = false;               // extender verbs without credentials (loopback only)
  int max_connections_per_client = 64;
  std::string policy = "topology";
  std::string queues;  // queue tree YAML ("" = every tenant its own queue)
  server::ServeColocation colocation;  // --reserved-nodes, --colocation-mode, --overcommit, --colocation-spill
  bool virtual_nodes = false;
  bool require_federation_lease = false;
  double speedup = 1.0;
  // Kubernetes: schedule the API server's pods (serve_kube.cc).
  bool kube = false;
  bool extender = false;  // extender verbs on --cluster, binding and pod watch through the API server
  KubeServeFlags k;
  std::string preemption_grace;  // durations, parsed in Serve
  std::string yield_best_effort, yield_training_grace;
  std::string min_runtime;
  std::vector<std::string> plugin_args;  // --plugin-arg PLUGIN.KEY=VALUE
  std::string restore_cost;
  std::string pass_budget;
  int32_t scheduler_nice = server::ServiceOptions{}.scheduler_nice;
  int32_t scheduler_rt_priority = 0;
  std::string large_read_sched = "idle";
  std::string throughputs;
  std::string idempotency_ttl;  // duration, parsed in Serve
  bool accept_cluster_change = false;
  int64_t extender_max_groups = server::ExtenderLimits{}.max_groups;
  int64_t extender_max_pods = server::ExtenderLimits{}.max_pods;
  server::AdmissionLimits limits;  // --max-tasks-per-job, ...
  FedServeFlags fed;               // --federation and the dispatcher's flags
  std::string launch_ports = "29500-30499";  // MIN-MAX of MASTER_PORT in launch specs
  std::string reports;  // a folder of simulation reports the dashboard opens ("" = none)
};

// --launch-ports MIN-MAX; a malformed text gives a range Validate refuses.
workload::LaunchOptions ParseLaunchPorts(const std::string& r) {
  workload::LaunchOptions o;
  o.port_min = o.port_max = -1;
  const size_t dash = r.find('-');
  if (dash == std::string::npos || dash == 0 || dash + 1 >= r.size() || dash > 5 || r.size() - dash - 1 > 5 ||
      r.find_first_not_of("0123456789-") != std::string::npos || r.find('-', dash + 1) != std::string::npos)
    return o;
  o.port_min = std::stoi(r.substr(0, dash));
  o.port_max = std::stoi(r.substr(dash + 1));
  return o;
}

}  // namespace

// How this replica announces itself to the others while it leads (serve_federation.h).
std::string Announcement(const std::string& host, int port, bool tls) {
  char name[256] = {0};
  if (::gethostname(name, sizeof name - 1) != 0) name[0] = '\0';
  const bool any = host.empty() || host == "0.0.0.0" || host == "::";
  const std::string shown = any ? std::string(name) : host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return nlohmann::json({{"id", std::string(name) + ":" + std::to_string(::getpid())},
                         {"address", std::string(tls ? "https://" : "http://") + shown + ":" + std::to_string(port)}})
      .dump();
}

namespace {

// What ends the wait of the main thread (besides a signal), written by store
// and starter threads.
struct Ending {
  std::mutex mu;
  server::Service* service = nullptr;
  std::atomic<bool> lost{false};   // the store's term was lost
  std::atomic<bool> start_done{false};
  Status start_status;
  std::string lost_reason;
};

int Serve(const ServeFlags& f) {
  // Bad flag values are usage errors, found before anything is opened.
  TimeUs grace = 0, min_runtime = -1, restore_cost = 0, idempotency_ttl = server::ServiceOptions{}.idempotency_ttl,
         pass_budget = server::ServiceOptions{}.pass_budget, kill_grace = server::ServiceOptions{}.kill_grace,
         heartbeat_interval = -1, heartbeat_timeout = -1, yield_best_effort = -1, yield_training_grace = -1,
         repair_cost = 0, restart_cost = 0, repair_timeout = KubeServeFlags{}.repair_timeout;
  for (const auto& [flag, text, out] : {std::tuple{"--preemption-grace", &f.preemption_grace, &grace},
                                        std::tuple{"--min-runtime", &f.min_runtime, &min_runtime},
                                        std::tuple{"--restore-cost", &f.restore_cost, &restore_cost},
                                        std::tuple{"--idempotency-ttl", &f.idempotency_ttl, &idempotency_ttl},
                                        std::tuple{"--pass-budget", &f.pass_budget, &pass_budget},
                                        std::tuple{"--kill-grace", &f.kill_grace, &kill_grace},
                                        std::tuple{"--heartbeat-interval", &f.heartbeat_interval, &heartbeat_interval},
                                        std::tuple{"--heartbeat-timeout", &f.heartbeat_timeout, &heartbeat_timeout},
                                        std::tuple{"--repair-cost", &f.repair_cost, &repair_cost},
                                        std::tuple{"--restart-cost", &f.restart_cost, &restart_cost},
                                        std::tuple{"--repair-timeout", &f.repair_timeout, &repair_timeout},
                                        std::tuple{"--yield-best-effort", &f.yield_best_effort, &yield_best_effort},
                                        std::tuple{"--yield-training-grace", &f.yield_training_grace,
                                                   &yield_training_grace}}) {
    if (text->empty()) continue;
    auto d = tenancy::ParseQueueDuration(*text);
    if (!d.ok()) {
      std::cerr << "berth serve: " << flag << ": " << d.status().message() << "\n";
      return kExitUsage;
    }
    *out = *d;
  }
  if (Status s = f.limits.Validate(); !s.ok()) {
    std::cerr << "berth serve: " << s.message() << "\n";
    return kExitUsage;
  }
  auto spares = faults::ParseSpareSetting(f.spares);
  if (!spares.ok()) {
    std::cerr << "berth serve: --spares: " << spares.status().message() << "\n";
    return kExitUsage;
  }
  // "leaf" and "spine" alone are sized from --failure-rates (else 1 a domain).
  std::vector<faults::FailureRate> spare_rates;
  if (!f.failure_rates.empty()) {
    auto spec = faults::LoadFailures(f.failure_rates, cluster::Cluster{}, "--failure-rates");
    if (spec.ok() && !spec->events.empty())
      spec = InvalidArgument("--failure-rates: " + f.failure_rates + " has timed events; give rates only");
    if (!spec.ok()) {
      std::string m = spec.status().message();
      if (m.rfind("--failure-rates", 0) != 0) m = "--failure-rates: " + m;
      std::cerr << "berth serve: " << m << "\n";
      return kExitUsage;
    }
    spare_rates = spec->rates;
  }
  if (spares->mode != faults::SpareMode::kNone && spares->per_domain < 0 && spare_rates.empty()) spares->per_domain = 1;
  std::optional<faults::RepairMode> repair =
      f.repair.empty() ? (spares->mode != faults::SpareMode::kNone ? faults::RepairMode::kInPlace
                                                                   : faults::RepairMode::kRequeue)
                       : faults::ParseRepairMode(f.repair);
  if (!repair) {
    std::cerr << "berth serve: --repair: expected requeue or in-place, got '" << f.repair << "'\n";
    return kExitUsage;
  }
  if (f.repair_peers != "keep" && f.repair_peers != "restart") {
    std::cerr << "berth serve: --repair-peers: expected keep or restart, got '" << f.repair_peers << "'\n";
    return kExitUsage;
  }
  if (Status s = ParseLaunchPorts(f.launch_ports).Validate(); !s.ok()) {
    std::cerr << "berth serve: " << s.message() << "\n";
    return kExitUsage;
  }
  if (!f.extender && (f.kube || !f.k.kubeconfig.empty())) {
    if (!f.restore_cost.empty()) {
      std::cerr << "berth serve: --restore-cost is not supported with --kube/--kubeconfig yet\n";
      return kExitUsage;
    }
    if (Status s = server::ValidateColocation(f.colocation); !s.ok()) {  // names: against the Nodes, later
      std::cerr << "berth serve: " << s.message() << "\n";
      return kExitUsage;
    }
    KubeServeFlags k = f.k;
    k.colocation = f.colocation;
    k.yield_best_effort = yield_best_effort;
    k.yield_training_grace = yield_training_grace;
    k.throughputs = f.throughputs;
    k.listen = f.listen;
    k.token_file = f.token_file;
    k.policy = f.policy;
    k.queues = f.queues;
    k.min_runtime = min_runtime;
    k.plugin_args = f.plugin_args;
    k.preemption_grace = grace;
    k.repair = *repair;
    k.spares = *spares;
    k.repair_cost = repair_cost;
    k.repair_timeout = repair_timeout;
    return ServeKube(k);
  }
  // Block the stop signals in every thread; the main thread waits for them.
  sigset_t stop_signals = BlockStopSignals();
  server::Logger log;
  log.set_format(f.k.log_format);
  log.set_level(f.k.log_level);
  auto fail = [&](const std::string& what, const Status& s) { return StartupFailed(log, what, s); };
  auto listen = server::ParseListen(f.listen);
  if (!listen.ok()) return fail("listen", listen.status());
  // With node agents and no --cluster, the cluster is the registered agents.
  const bool agents = !f.node_token_file.empty();
  if (agents && !f.cluster.empty())
    return fail("cluster", InvalidArgument("--node-token-file: the cluster is the registered agents; drop --cluster"));
  if (agents && f.virtual_nodes)
    return fail("cluster", InvalidArgument("--node-token-file and --virtual-nodes do not go together"));
  const bool demo = f.cluster.empty() && !agents;
  auto cluster = agents ? StatusOr<cluster::Cluster>(cluster::Cluster{})
                        : cluster::LoadCluster(demo ? kDemoCluster : f.cluster);
  if (!cluster.ok()) return fail("cluster", cluster.status());
  if (!agents) {  // product names (NVIDIA-H100-80GB-HBM3) find the cluster's types in jobs and quotas
    StatusOr<hetero::Catalog> catalog = hetero::LoadCatalog(f.k.catalog);
    if (catalog.ok()) hetero::AddCatalogAliases(*catalog, *cluster);
  }
  server::HttpOptions http;
  http.host = listen->first;
  http.port = listen->second;
  if (!f.token_file.empty()) {
    auto token = ReadToken(f.token_file, "--token-file");
    if (!token.ok()) return fail("token", token.status());
    http.token = *token;
  } else {
    if (agents) log.Warn("user_api_unauthenticated", {{"hint", "agents run what jobs ask: pass --token-file too"}});
    log.Warn("writes_unauthenticated", {{"hint", "pass --token-file to require a bearer token for writes"}});
  }
  if (agents) {
    auto token = ReadToken(f.node_token_file, "--node-token-file");
    if (!token.ok()) return fail("node token", InvalidArgument(token.status().message() + " (--node-token-file)"));
    if (*token == http.token) return fail("node token", InvalidArgument("--node-token-file: the node token must differ from the user token"));
    http.node_token = *token;
  }
  if (f.tls_cert.empty() != f.tls_key.empty())
    return fail("tls", InvalidArgument("--tls-cert and --tls-key go together"));
  if (!f.tls_client_ca.empty() && f.tls_cert.empty())
    return fail("tls", InvalidArgument("--tls-client-ca needs --tls-cert and --tls-key (client certificates come with TLS)"));
  http.tls_cert_file = f.tls_cert;
  http.tls_key_file = f.tls_key;
  http.tls_client_ca_file = f.tls_client_ca;
  if (f.tls_require_client_cert && f.tls_client_ca.empty())
    return fail("tls", InvalidArgument("--tls-require-client-cert needs --tls-client-ca (the CA client certificates are verified against)"));
  http.tls_require_client_cert = f.tls_require_client_cert;
  if (f.max_connections_per_client < 1)
    return fail("listen", InvalidArgument("--max-connections-per-client: expected a positive integer"));
  http.max_connections_per_client = f.max_connections_per_client;
  if (f.large_read_sched != "idle" && f.large_read_sched != "nice")
    return fail("listen", InvalidArgument("--large-read-sched: expected idle or nice, got '" + f.large_read_sched + "'"));
  http.large_reads_idle = f.large_read_sched == "idle";
  if (f.extender_anonymous && !server::IsLoopbackHost(http.host))
    return fail("extender", InvalidArgument("--extender-allow-anonymous is only for a loopback --listen (127.0.0.1, ::1); "
                                            "give kube-scheduler a client certificate (--tls-client-ca) instead"));
  http.extender_anonymous = f.extender_anonymous;
  if (!f.reports.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(f.reports, ec))
      return fail("reports", InvalidArgument("--reports '" + f.reports + "': not a folder"));
    http.reports_dir = f.reports;
  }
  if (f.extender_anonymous) log.Warn("extender_unauthenticated", {{"hint", "the extender verbs accept anyone on loopback"}});

  if (!f.fed.file.empty()) {
    if (!demo || f.virtual_nodes || f.kube || f.extender || !f.queues.empty() || f.require_federation_lease)
      return fail("federation", InvalidArgument("--federation runs the dispatcher over member `berth serve` processes: "
                                                "--cluster, --virtual-nodes, --queues and --require-federation-lease belong to the members"));
    const std::string store = f.store == ServeFlags{}.store ? std::string(kFederationStore) : f.store;
    return ServeFederation(f.fed, http, store, f.limits, log, stop_signals);
  }
  server::Metrics metrics;
  metrics.build_version = BERTH_VERSION;
  metrics.build_commit = BERTH_GIT_COMMIT;
  metrics.build_type = BERTH_BUILD_TYPE;
  Ending ending;
  const bool replicated = f.store.rfind("etcd:", 0) == 0;
  store::StoreOptions so;
  so.on_lost = [&ending](const Status& why) {
    std::lock_guard<std::mutex> lock(ending.mu);
    if (ending.service) ending.service->StepDown(why.message());
    ending.lost_reason = why.message();
    ending.lost = true;
  };
  so.on_commit = [&metrics](const store::CommitInfo& c) {
    ++metrics.store_commits;
    metrics.store_records += c.records;
    metrics.commit_latency.Observe(UsToSeconds(c.latency));
    metrics.commit_batch.Observe(static_cast<double>(c.records));
  };
  auto store = store::OpenStore(f.store, so);
  if (!store.ok()) return fail("store", store.status());

  server::ServiceOptions opts;
  opts.policy = f.policy;
  opts.catalog = f.k.catalog;
  opts.throughputs = f.throughputs;
  opts.preemption_grace = grace;
  opts.min_runtime = min_runtime;
  opts.plugin_args = f.plugin_args;
  opts.restore_cost = restore_cost;
  opts.yield_best_effort = yield_best_effort;
  opts.yield_training_grace = yield_training_grace;
  opts.pass_budget = pass_budget;
  opts.scheduler_nice = f.scheduler_nice;
  opts.scheduler_rt_priority = f.scheduler_rt_priority;
  opts.virtual_nodes = f.virtual_nodes || demo;
  opts.require_federation_lease = f.require_federation_lease;
  opts.idempotency_ttl = idempotency_ttl;
  opts.accept_cluster_change = f.accept_cluster_change;
  opts.speedup = f.speedup;
  opts.limits = f.limits;
  opts.agent_nodes = agents;
  opts.kill_grace = kill_grace;
  if (heartbeat_interval > 0) opts.heartbeat_interval = heartbeat_interval;
  else if (agents) opts.heartbeat_interval = 1'000'000;  // real agents: 1 s, down after 10 s of silence
  if (heartbeat_timeout > 0) opts.heartbeat_timeout = heartbeat_timeout;
  else if (agents) opts.heartbeat_timeout = std::max<TimeUs>(10'000'000, 3 * opts.heartbeat_interval);
  if (agents) {
    opts.agent_log_dir = f.agent_log_dir;
    if (opts.agent_log_dir.empty()) {  // beside the embedded store, else ./berth-data/logs
      const std::string sq = "sqlite:";
      std::string dir = "./berth-data";
      if (f.store.rfind(sq, 0) == 0) {
        const std::string path = f.store.substr(sq.size());
        const size_t slash = path.rfind('/');
        dir = slash == std::string::npos ? "." : path.substr(0, slash);
      }
      opts.agent_log_dir = dir + "/logs";
    }
  }
  opts.launch = ParseLaunchPorts(f.launch_ports);
  opts.repair = *repair;
  opts.spares = *spares;
  opts.repair_cost = repair_cost;
  opts.restart_cost = restart_cost;
  opts.spare_rates = std::move(spare_rates);
  opts.repair_peers = f.repair_peers == "restart" ? server::ServiceOptions::RepairPeers::kRestart
                                                  : server::ServiceOptions::RepairPeers::kKeep;
  std::optional<tenancy::QueueFile> queue_file;  // as written (its per-queue overcommit ratios)
  if (!f.queues.empty()) {
    auto file = tenancy::ReadQueueFile(f.queues);
    if (!file.ok()) return fail("queues", file.status());
    queue_file = *file;
    if (agents) {  // resolved again against the registered nodes whenever one joins or changes
      opts.queue_file = *file;
      opts.queue_file_name = f.queues;
      file = tenancy::QuotasForCluster(*file, *cluster, nullptr);  // no nodes yet: the tenants' leaves only
    }
    auto tree = tenancy::BuildQueueTree(*file, f.queues, *cluster);
    if (!tree.ok()) return fail("queues", tree.status());
    if (Status s = hetero::AddCatalogPrices(*tree, f.k.catalog); !s.ok()) return fail("queues", s);
    opts.queues = std::make_shared<const tenancy::QueueTree>(std::move(tree).value());
    opts.usage_half_life = file->half_life;
  }
  if (!f.colocation.reserved.empty()) {  // the services' reserved nodes (docs/service.md)
    if (agents)
      return fail("colocation", InvalidArgument("--reserved-nodes does not go with node agents (the cluster is "
                                                "the nodes that register)"));
    auto args = server::ColocationArgs(f.colocation, *cluster, queue_file ? &*queue_file : nullptr);
    if (!args.ok()) return fail("colocation", args.status());
    opts.colocation = std::move(args).value();
  }
  // Extender mode with an API server: bindVerb creates the Binding, a pod
  // watch releases what Kubernetes deleted or ended.
  std::unique_ptr<kube::KubeClient> kube_client, lookup_client;
  std::shared_ptr<kube::ExtenderLink> link;
  opts.extender_limits.max_groups = f.extender_max_groups;
  opts.extender_limits.max_pods = f.extender_max_pods;
  if (f.extender) {
    auto cfg = kube::ResolveKubeConfig(f.k.kubeconfig);
    if (!cfg.ok()) return fail("kubeconfig", cfg.status());
    if (f.k.insecure_skip_tls_verify) cfg->insecure_skip_tls_verify = true;
    kube::ClientOptions co;
    co.qps = f.k.kube_qps;
    co.burst = f.k.kube_burst;
    kube_client = std::make_unique<kube::KubeClient>(*cfg, co);
    kube::KubeConfig lookup_cfg = *cfg;
    lookup_cfg.temp_files.clear();  // owned by the first client
    lookup_client = std::make_unique<kube::KubeClient>(lookup_cfg, co);
    link = std::make_shared<kube::ExtenderLink>(*kube_client, *lookup_client, log);
    opts.k8s_bind = link->Binder();
    // The verbs check each pod against the API server: it must exist with
    // the uid sent, be unbound and name --scheduler-name ("" accepts any).
    opts.k8s_pods = link;
    if (!f.k.scheduler_name.empty()) opts.extender_scheduler_names = {f.k.scheduler_name};
  }
  server::Service service(*cluster, **store, opts, log, metrics);
  {
    std::lock_guard<std::mutex> lock(ending.mu);
    ending.service = &service;
  }
  server::HttpServer http_server(service, metrics, log, http);
  Status s = http_server.Bind();
  if (!s.ok()) return fail("listen", s);
  std::thread starter;
  if (replicated) {
    // Serve at once (a standby answers 503 naming the leader), then campaign.
    (*store)->Announce(Announcement(http.host, http_server.port(), !http.tls_cert_file.empty()));
    http_server.Start();
    log.Info("listening", {{"host", http.host}, {"port", http_server.port()}, {"cluster", cluster->Summary()},
                           {"demo_cluster", demo}, {"auth", !http.token.empty()},
                           {"tls", !http.tls_cert_file.empty()}, {"client_ca", !http.tls_client_ca_file.empty()}, {"client_cert_required", http.tls_require_client_cert},
                           {"role", "standby"}});
    log.Info("campaigning", {{"store", (*store)->Describe()}});
    starter = std::thread([&] {
      Status st = service.Start();
      if (st.ok() && link) link->Start(service);
      std::lock_guard<std::mutex> lock(ending.mu);
      ending.start_status = st;
      ending.start_done = true;
    });
  } else {
    s = service.Start();
    if (!s.ok()) return fail("recovery", s);
    if (link) link->Start(service);
    http_server.Start();
    log.Info("listening", {{"host", http.host}, {"port", http_server.port()}, {"cluster", cluster->Summary()},
                           {"demo_cluster", demo}, {"auth", !http.token.empty()},
                           {"tls", !http.tls_cert_file.empty()}, {"client_ca", !http.tls_client_ca_file.empty()}, {"client_cert_required", http.tls_require_client_cert}});
  }

  // Wait for a stop signal, the loss of the term, or a failed start.
  int sig = 0;
  int code = 0;
  const timespec tick{0, 100'000'000};
  for (;;) {
    siginfo_t info;
    const int got = sigtimedwait(&stop_signals, &info, &tick);
    if (got > 0) {
      sig = got;
      break;
    }
    if (ending.lost) break;
    if (ending.start_done) {
      std::lock_guard<std::mutex> lock(ending.mu);
      if (!ending.start_status.ok()) break;
    }
  }
  if (sig) {
    log.Info("stopping", {{"signal", sig}});
  } else if (ending.lost) {
    code = kExitSteppedDown;
    {
      std::lock_guard<std::mutex> lock(ending.mu);
      log.Error("stepping_down", {{"reason", ending.lost_reason}, {"exit_status", code},
                                  {"hint", "restart this process: it rejoins as a standby"}});
    }
    // Stopping in order waits for in-flight requests; never for long.
    std::thread([code] {
      std::this_thread::sleep_for(std::chrono::seconds(kStepDownGraceSeconds));
      std::_Exit(code);
    }).detach();
  } else {
    std::lock_guard<std::mutex> lock(ending.mu);
    log.Error("startup_failed", {{"what", "recovery"}, {"error", ending.start_status.message()}});
    std::cerr << "berth serve: " << ending.start_status.message() << "\n";
    code = 1;
  }
  (*store)->Interrupt();  // a standby stops campaigning
  if (starter.joinable()) starter.join();
  if (link) link->Stop();
  http_server.Stop();
  service.Stop();
  {
    std::lock_guard<std::mutex> lock(ending.mu);
    ending.service = nullptr;
  }
  log.Info("stopped", {{"exit_status", code}});
  return code;
}

}  // namespace

void AddServeCommand(CLI::App& app, std::function<int()>& run) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand("serve", "Run the scheduler as a service (HTTP API, durable store)");
  cmd->add_option("--listen", flags->listen, "HOST:PORT to listen on (port 0: any free port)")->capture_default_str();
  cmd->add_option("--reports", flags->reports,
                  "a folder of `berth simulate --json/--report` files the dashboard's Reports page lists and opens");
  cmd->add_option("--store", flags->store, "sqlite:PATH (embedded) or etcd:http://HOST:PORT,...")->capture_default_str();
  cmd->add_option("--cluster", flags->cluster, "cluster file (.yaml, .csv) or compact spec; default: a demo cluster " +
                                                   std::string(kDemoCluster) + " of virtual nodes");
  cmd->add_option("--token-file", flags->token_file,
                  "file holding the bearer token that writes (and the extender verbs, without a client certificate) must present");
  cmd->add_option("--tls-cert", flags->tls_cert, "serve HTTPS: the server certificate (PEM, chain)");
  cmd->add_option("--tls-key", flags->tls_key, "serve HTTPS: the certificate's private key (PEM)");
  cmd->add_option("--tls-client-ca", flags->tls_client_ca,
                  "CA (PEM) that client certificates are verified against; a verified one authorizes the extender verbs");
  cmd->add_flag("--tls-require-client-cert", flags->tls_require_client_cert,
                "refuse every connection without a client certificate that verifies against --tls-client-ca "
                "(mutual TLS for all clients, not only the extender)");
  cmd->add_flag("--extender-allow-anonymous", flags->extender_anonymous,
                "the extender verbs without a client certificate or token; refused unless --listen is loopback");
  cmd->add_option("--max-connections-per-client", flags->max_connections_per_client,
                  "open connections one client address may hold (429 beyond)")
      ->capture_default_str();
  cmd->add_option("--node-token-file", flags->node_token_file,
                  "accept node agents (berth agent) that present the token in this file (not the user token); "
                  "with no --cluster the cluster is exactly the registered agents (docs/agent.md)");
  cmd->add_option("--agent-log-dir", flags->agent_log_dir,
                  "where the task logs agents upload are kept (default: logs/ beside the sqlite store)");
  cmd->add_option("--kill-grace", flags->kill_grace,
                  "a task Berth stops (cancel, requeue, a failed gang) gets SIGTERM, then SIGKILL this long after, "
                  "e.g. 30s (default 10s)");
  cmd->add_option("--heartbeat-interval", flags->heartbeat_interval,
                  "how often agents heartbeat (told at registration), e.g. 1s (default 1s; virtual nodes 0.2s)");
  cmd->add_option("--heartbeat-timeout", flags->heartbeat_timeout,
                  "a node silent this long is down and its gangs requeued, e.g. 10s (default 10s, at least 3 "
                  "intervals; virtual nodes 2s)");
  cmd->add_option("--spares", flags->spares,
                  "node agents, --virtual-nodes or --kube: hot spare nodes kept idle per domain for in-place repairs: "
                  "none, leaf:N or spine:N, or leaf / spine: sized from --failure-rates for the largest gang held "
                  "(--kube, or without rates: 1; at most half a domain's nodes)")
      ->capture_default_str();
  cmd->add_option("--failure-rates", flags->failure_rates,
                  "with --spares leaf|spine: the failure rates that size the spares: a built-in profile (llama3, "
                  "llama3*SCALE) or a failure file's rate lines (docs/failures.md)");
  cmd->add_option("--restart-cost", flags->restart_cost,
                  "with sized --spares: time a gang restarted whole loses (jobs without restart_cost_s), e.g. 30m "
                  "(default 0)");
  cmd->add_option("--repair", flags->repair,
                  "node agents, --virtual-nodes or --kube: what a gang hit by a node or GPU failure does: requeue "
                  "(restart whole) or in-place (only the failed tasks restart, with their ranks, on a spare or free "
                  "node of their domain; else requeue). --kube: a lost node (NotReady, NoExecute taint) evicts only "
                  "its pods and their replacements are bound to the target nodes; a gang's berth.dev/repair "
                  "annotation overrides the flag. Default: in-place with --spares, else requeue");
  cmd->add_option("--repair-cost", flags->repair_cost,
                  "with --repair in-place: time a repaired gang spends restoring before it works, e.g. "
                  "5m (default 0)");
  cmd->add_option("--repair-timeout", flags->repair_timeout,
                  "--kube with in-place repair: how long a repaired task's target node is held for its replacement "
                  "pod; then the whole gang is requeued, e.g. 10m (default 5m)");
  cmd->add_option("--repair-peers", flags->repair_peers,
                  "node agents with --repair in-place: the repaired gang's other tasks keep running and are told "
                  "of the new peer (keep), or restart too as new attempts on their own GPUs (restart)")
      ->capture_default_str();
  cmd->add_flag("--virtual-nodes", flags->virtual_nodes, "simulate node agents that heartbeat and run jobs");
  cmd->add_flag("--require-federation-lease", flags->require_federation_lease,
                "a federation member: start nothing until a dispatcher's lease is granted (docs/federation.md, "
                "\"Fencing\"); without it the fence holds from the first lease on");
  cmd->add_option("--speedup", flags->speedup, "virtual nodes run a job for duration/N")->capture_default_str();
  cmd->add_option("--policy", flags->policy, "scheduling policy (berth policies lists them)")->capture_default_str();
  cmd->add_option("--queues", flags->queues,
                  "queue tree YAML (docs/queues.md): quotas are enforced; default: every tenant its own queue");
  cmd->add_option("--reserved-nodes", flags->colocation.reserved,
                  "nodes reserved for services' replicas (names, ids or id ranges, e.g. node-0,node-1 or 0-11; with "
                  "--kube: Node names, and a Deployment's pods are the replicas): "
                  "replicas run only there, other work borrows what they leave idle (docs/service.md, \"Reserved "
                  "nodes for services\")");
  cmd->add_option("--colocation-mode", flags->colocation.mode,
                  "with --reserved-nodes: colocate (batch and best effort borrow the reservation's idle capacity) "
                  "or static (batch never runs there)")
      ->capture_default_str();
  cmd->add_option("--overcommit", flags->colocation.overcommit,
                  "with --reserved-nodes: best-effort work's share (0..1) of each reserved node's GPUs; per queue: "
                  "the queue file's overcommit")
      ->capture_default_str();
  cmd->add_option("--colocation-spill", flags->colocation.spill,
                  "with --reserved-nodes in colocate mode: a replica no reserved node can hold runs on another "
                  "node while the services stay within the reservation's totals (true or false)")
      ->capture_default_str();
  cmd->add_option("--preemption-grace", flags->preemption_grace,
                  "grace an evicted job gets to checkpoint and leave, e.g. 30s; its preemptor starts that much "
                  "later (default 0)");
  cmd->add_option("--yield-best-effort", flags->yield_best_effort,
                  "best-effort jobs (\"best_effort\": true) evicted for others give their GPUs back within this, "
                  "e.g. 30s (default: the grace)");
  cmd->add_option("--yield-training-grace", flags->yield_training_grace,
                  "evicted jobs that checkpoint leave at their next checkpoint if it comes within this, else after "
                  "it, e.g. 5m (default: the grace)");
  cmd->add_option("--plugin-arg", flags->plugin_args,
                  "PLUGIN.KEY=VALUE: an argument of the policy's plugin (repeatable), e.g. tiresias.thresholds_gpu_h=16 "
                  "(README, \"Plugin arguments\")");
  cmd->add_option("--min-runtime", flags->min_runtime,
                  "the least a job runs before preemption may evict it, e.g. 2m (default 10m); policies that "
                  "preempt only (fairshare, priority-preempt, srtf, tiresias, ...)");
  cmd->add_option("--restore-cost", flags->restore_cost,
                  "time a job resumed after preemption spends restoring its checkpoint before working, e.g. 2m "
                  "(default 0)");
  cmd->add_option("--pass-budget", flags->pass_budget,
                  "longest a scheduling pass runs before it yields to heartbeats, submissions and reads, e.g. "
                  "0.1s (default), 0.5s; the next turn continues it where it stopped");
  cmd->add_option("--scheduler-nice", flags->scheduler_nice,
                  "nice value of the scheduling thread, below the HTTP threads (0) and the large-read pool (10) so "
                  "reads cannot take its core mid-pass (default -5; 0: unchanged; needs CAP_SYS_NICE or RLIMIT_NICE, "
                  "else a warning and 0)");
  cmd->add_option("--scheduler-rt-priority", flags->scheduler_rt_priority,
                  "1-99: run the scheduling thread under SCHED_FIFO at this priority, so no normal thread "
                  "(HTTP, reads, other processes) takes its core mid-pass (default 0: off, --scheduler-nice "
                  "applies; needs CAP_SYS_NICE or RLIMIT_RTPRIO, else a warning and --scheduler-nice)");
  cmd->add_option("--large-read-sched", flags->large_read_sched,
                  "how the pool that builds large reads (job, node and queue lists) runs: idle (default; "
                  "SCHED_IDLE: only on CPU no other thread wants, never preempting one) or nice (nice 10)");
  cmd->add_option("--throughputs", flags->throughputs,
                  "measured throughput table (Gavel JSON) the hetero-speed/hetero-cost model and a queue tree in "
                  "normalized units are fitted to (default: specs only)");
  cmd->add_option("--idempotency-ttl", flags->idempotency_ttl,
                  "how long after a submission its idempotency_key stays taken once the job has ended, e.g. 1h "
                  "(default 24h; 0: freed when the job ends). Keys made from the job's name are freed when it ends");
  cmd->add_flag("--accept-cluster-change", flags->accept_cluster_change,
                "start even though --cluster differs from the cluster recorded in the store; jobs that no longer "
                "fit stay pending and are reported");
  cmd->add_option("--launch-ports", flags->launch_ports,
                  "MIN-MAX: the range MASTER_PORT of launch specs is chosen from (by job id; docs/launch.md)")
      ->capture_default_str();
  cmd->add_option("--max-tasks-per-job", flags->limits.max_tasks_per_job,
                  "admission: most tasks one job may have (sum of its groups' counts; 422 beyond)")
      ->capture_default_str();
  cmd->add_option("--max-groups-per-job", flags->limits.max_groups_per_job,
                  "admission: most task groups one job may have (422 beyond)")
      ->capture_default_str();
  cmd->add_option("--max-name-bytes", flags->limits.max_name_bytes,
                  "admission: longest job name and idempotency key, in bytes (422 beyond)")
      ->capture_default_str();
  cmd->add_option("--max-label-bytes", flags->limits.max_label_bytes,
                  "admission: longest tenant, queue, job_class, dataset, group and GPU type names, in bytes "
                  "(422 beyond)")
      ->capture_default_str();
  cmd->add_option("--federation", flags->fed.file,
                  "run the global dispatcher of this federation file over its members' `berth serve` processes "
                  "(docs/federation.md, \"The live service\"); default store " +
                      std::string(kFederationStore));
  cmd->add_option("--member", flags->fed.members,
                  "with --federation: NAME=URL of a member's berth serve (repeatable; overrides the file's endpoint)");
  cmd->add_option("--dispatch-policy", flags->fed.policy,
                  "with --federation: global, global-cost, karmada-weights, round-robin, least-loaded, data-local, "
                  "cheapest, fastest")
      ->capture_default_str();
  cmd->add_option("--member-token-file", flags->fed.member_token_file,
                  "with --federation: file holding the bearer token the members' --token-file holds");
  cmd->add_option("--member-ca-cert", flags->fed.member_ca_cert,
                  "with --federation: CA (PEM) that https:// members' certificates are checked against");
  cmd->add_option("--poll-interval", flags->fed.poll_interval,
                  "with --federation: how often members' digests and jobs are read")
      ->capture_default_str();
  cmd->add_option("--member-timeout", flags->fed.member_timeout,
                  "with --federation: a member no call reached this long is down; its queued jobs go elsewhere")
      ->capture_default_str();
  cmd->add_option("--requeue-running-after", flags->fed.requeue_running_after,
                  "with --federation: a member down this long has its running jobs re-dispatched from their last "
                  "checkpoint")
      ->capture_default_str();
  cmd->add_option("--member-request-timeout", flags->fed.member_request_timeout,
                  "with --federation: longest wait for one call to a member")
      ->capture_default_str();
  cmd->add_option("--member-speedup", flags->fed.member_speedup,
                  "with --federation: the members' --speedup (their run time x this = job time, for checkpoints)")
      ->capture_default_str();
  cmd->add_option("--batch-min", flags->fed.batch_min,
                  "with --federation: jobs waiting at once that are dispatched as one assignment problem (global)")
      ->capture_default_str();
  cmd->add_option("--kubeconfig", flags->k.kubeconfig,
                  "schedule a Kubernetes cluster: its Nodes and the pods whose schedulerName is --scheduler-name");
  cmd->add_flag("--kube", flags->kube,
                "schedule the Kubernetes cluster found through $KUBECONFIG, the pod's service account or ~/.kube/config");
  cmd->add_flag("--extender", flags->extender,
                "with --kubeconfig/--kube: serve kube-scheduler's extender verbs on --cluster; bindVerb creates the "
                "Binding and a pod watch releases deleted and ended pods");
  cmd->add_option("--scheduler-name", flags->k.scheduler_name,
                  "spec.schedulerName of the pods Berth schedules (with --extender: of the pods the verbs accept, "
                  "the kube-scheduler profile that calls Berth; \"\" accepts any)")
      ->capture_default_str();
  cmd->add_option("--extender-max-groups", flags->extender_max_groups,
                  "with --extender: most pod groups (Berth jobs) tracked at once; more are refused until some end")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--extender-max-pods", flags->extender_max_pods,
                  "with --extender: most pods tracked at once over every group")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--topology-label", flags->k.topology_labels,
                  "LABEL=LEVEL: a node label naming the node's domain at LEVEL (region, cluster, spine, leaf, "
                  "nvlink); repeatable, checked before the built-in keys");
  cmd->add_option("--kube-qps", flags->k.kube_qps, "API server requests per second (client-go's QPS)")
      ->capture_default_str();
  cmd->add_option("--kube-burst", flags->k.kube_burst, "API server request burst")->capture_default_str();
  cmd->add_option("--log-format", flags->k.log_format, "log lines: json (one object a line: ts, level, msg, event, "
                  "fields) or text")
      ->transform(CLI::CheckedTransformer(std::map<std::string, server::LogFormat>{
          {"json", server::LogFormat::kJson}, {"text", server::LogFormat::kText}}))
      ->default_str("json");
  cmd->add_option("--log-level", flags->k.log_level, "drop log lines below: debug, info, warn, error")
      ->transform(CLI::CheckedTransformer(std::map<std::string, server::LogLevel>{
          {"debug", server::LogLevel::kDebug}, {"info", server::LogLevel::kInfo},
          {"warn", server::LogLevel::kWarn}, {"error", server::LogLevel::kError}}))
      ->default_str("info");
  flags->k.catalog = ShippedFile("data/accelerators.yaml");
  cmd->add_option("--catalog", flags->k.catalog,
                  "accelerator catalog: maps nvidia.com/gpu.product to GPU types (--kube) and feeds the "
                  "hetero-speed/hetero-cost model")
      ->capture_default_str();
  cmd->add_option("--leader-elect", flags->k.leader_elect,
                  "with --kubeconfig/--kube: elect one leader through a coordination.k8s.io Lease; only it binds")
      ->capture_default_str();
  cmd->add_option("--lease-namespace", flags->k.lease_namespace, "namespace of the Lease (default: the kubeconfig's)");
  cmd->add_option("--lease-name", flags->k.lease_name, "name of the Lease")->capture_default_str();
  cmd->add_option("--lease-identity", flags->k.lease_identity,
                  "this replica's name in the Lease (default: the host name, so a restart takes it back at once)");
  cmd->add_flag("--insecure-skip-tls-verify", flags->k.insecure_skip_tls_verify,
                "do not verify the API server's certificate");
  cmd->callback([flags, &run] { run = [flags] { return Serve(*flags); }; });
}

}  // namespace berth::apps
