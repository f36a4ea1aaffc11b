// `berth serve`: the scheduling core as a daemon (HTTP API, durable store,
// optional virtual nodes). With no flags: the embedded store in ./berth-data/
// and a small demo cluster of virtual nodes.
#include <csignal>
#include <fstream>
#include <iostream>

#include "berth/cluster/loaders.h"
#include "berth/server/http_server.h"
#include "berth/server/service.h"
#include "berth/store/store.h"
#include "berth/tenancy/queue_yaml.h"
#include "commands.h"

namespace berth::apps {
namespace {

constexpr const char* kDemoCluster = "4x8:H100/leaf=2";

struct ServeFlags {
  std::string listen = "127.0.0.1:7450";
  std::string store = "sqlite:./berth-data/berth.db";
  std::string cluster;
  std::string token_file;
  std::string policy = "topology";
  std::string queues;  // queue tree YAML ("" = every tenant its own queue)
  bool virtual_nodes = false;
  double speedup = 1.0;
};

StatusOr<std::string> ReadToken(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("--token-file " + path + ": cannot open");
  std::string token((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.front()))) token.erase(token.begin());
  if (token.empty()) return InvalidArgument("--token-file " + path + ": empty");
  if (token.find_first_of(" \t\r\n") != std::string::npos) return InvalidArgument("--token-file " + path + ": the token has whitespace inside");
  return token;
}

int Serve(const ServeFlags& f) {
  // Block the stop signals in every thread; the main thread waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  server::Logger log;
  auto fail = [&](const std::string& what, const Status& s) {
    log.Error("startup_failed", {{"what", what}, {"error", s.message()}});
    std::cerr << "berth serve: " << s.message() << "\n";
    return 1;
  };
  auto listen = server::ParseListen(f.listen);
  if (!listen.ok()) return fail("listen", listen.status());
  const bool demo = f.cluster.empty();
  auto cluster = cluster::LoadCluster(demo ? kDemoCluster : f.cluster);
  if (!cluster.ok()) return fail("cluster", cluster.status());
  server::HttpOptions http;
  http.host = listen->first;
  http.port = listen->second;
  if (!f.token_file.empty()) {
    auto token = ReadToken(f.token_file);
    if (!token.ok()) return fail("token", token.status());
    http.token = *token;
  } else {
    log.Warn("writes_unauthenticated", {{"hint", "pass --token-file to require a bearer token for writes"}});
  }

  server::Metrics metrics;
  store::StoreOptions so;
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
  opts.virtual_nodes = f.virtual_nodes || demo;
  opts.speedup = f.speedup;
  if (!f.queues.empty()) {
    auto file = tenancy::ReadQueueFile(f.queues);
    if (!file.ok()) return fail("queues", file.status());
    auto tree = tenancy::BuildQueueTree(*file, f.queues, *cluster);
    if (!tree.ok()) return fail("queues", tree.status());
    opts.queues = std::make_shared<const tenancy::QueueTree>(std::move(tree).value());
    opts.usage_half_life = file->half_life;
  }
  server::Service service(*cluster, **store, opts, log, metrics);
  server::HttpServer http_server(service, metrics, log, http);
  Status s = http_server.Bind();
  if (!s.ok()) return fail("listen", s);
  s = service.Start();
  if (!s.ok()) return fail("recovery", s);
  http_server.Start();
  log.Info("listening", {{"host", http.host}, {"port", http_server.port()}, {"cluster", cluster->Summary()},
                         {"demo_cluster", demo}, {"auth", !http.token.empty()}});

  int sig = 0;
  sigwait(&stop_signals, &sig);
  log.Info("stopping", {{"signal", sig}});
  http_server.Stop();
  service.Stop();
  log.Info("stopped");
  return 0;
}

}  // namespace

void AddServeCommand(CLI::App& app, std::function<int()>& run) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand("serve", "Run the scheduler as a service (HTTP API, durable store)");
  cmd->add_option("--listen", flags->listen, "HOST:PORT to listen on (port 0: any free port)")->capture_default_str();
  cmd->add_option("--store", flags->store, "sqlite:PATH (embedded) or etcd:http://HOST:PORT,...")->capture_default_str();
  cmd->add_option("--cluster", flags->cluster, "cluster file (.yaml, .csv) or compact spec; default: a demo cluster " +
                                                   std::string(kDemoCluster) + " of virtual nodes");
  cmd->add_option("--token-file", flags->token_file, "file holding the bearer token that writes must present");
  cmd->add_flag("--virtual-nodes", flags->virtual_nodes, "simulate node agents that heartbeat and run jobs");
  cmd->add_option("--speedup", flags->speedup, "virtual nodes run a job for duration/N")->capture_default_str();
  cmd->add_option("--policy", flags->policy, "scheduling policy (see berth simulate)")->capture_default_str();
  cmd->add_option("--queues", flags->queues,
                  "queue tree YAML (docs/queues.md): quotas are enforced; default: every tenant its own queue");
  cmd->callback([flags, &run] { run = [flags] { return Serve(*flags); }; });
}

}  // namespace berth::apps
