// `berth serve --federation FILE` (serve_federation.h): loads the federation
// file (each member's cluster as the dispatcher's model of it), pairs every
// member with its endpoint (the file's `endpoint`, or --member NAME=URL),
// opens the dispatcher's own store, serves its API until a stop signal.
#include "serve_federation.h"

#include <iostream>
#include <map>

#include "berth/cluster/loaders.h"
#include "berth/federation/federation.h"
#include "berth/fedserve/dispatcher.h"
#include "berth/fedserve/fed_http.h"
#include "berth/store/store.h"
#include "berth/tenancy/queue_yaml.h"
#include "client_util.h"
#include "commands.h"
#include "serve_kube.h"

namespace berth::apps {

StatusOr<std::string> ReadToken(const std::string& path, const std::string& flag);

int ServeFederation(const FedServeFlags& f, const server::HttpOptions& http, const std::string& store_url,
                    const server::AdmissionLimits& limits, server::Logger& log, sigset_t stop_signals) {
  auto fail = [&](const std::string& what, const Status& s) { return StartupFailed(log, what, s); };
  fedserve::DispatcherOptions o;
  o.policy = f.policy;
  o.limits = limits;
  o.batch_min = f.batch_min;
  o.member_speedup = f.member_speedup;
  for (const auto& [flag, text, out] :
       {std::tuple{"--poll-interval", &f.poll_interval, &o.poll_interval},
        std::tuple{"--member-timeout", &f.member_timeout, &o.member_timeout},
        std::tuple{"--requeue-running-after", &f.requeue_running_after, &o.requeue_running_after},
        std::tuple{"--member-request-timeout", &f.member_request_timeout, &o.link.timeout}}) {
    auto d = tenancy::ParseQueueDuration(*text);
    if (!d.ok()) {
      std::cerr << "berth serve: " << flag << ": " << d.status().message() << "\n";
      return kExitUsage;
    }
    *out = *d;
  }
  if (Status s = o.Validate(); !s.ok()) {
    std::cerr << "berth serve: " << s.message() << "\n";
    return kExitUsage;
  }
  if (!f.member_token_file.empty()) {
    auto token = ReadToken(f.member_token_file, "--member-token-file");
    if (!token.ok()) return fail("member token", token.status());
    o.link.token = *token;
  }
  o.link.ca_cert = f.member_ca_cert;
  auto fed = federation::LoadFederation(f.file, [](const std::string& s) { return cluster::LoadCluster(s); });
  if (!fed.ok()) return fail("federation", fed.status());
  std::map<std::string, std::string> given;
  for (const auto& m : f.members) {
    const size_t eq = m.find('=');
    if (eq == std::string::npos || eq == 0)
      return fail("federation", InvalidArgument("--member '" + m + "': expected NAME=URL"));
    given[m.substr(0, eq)] = m.substr(eq + 1);
  }
  std::vector<std::string> endpoints;
  for (const auto& m : fed->members) {
    std::string url = m.endpoint;
    if (auto it = given.find(m.name); it != given.end()) {
      url = it->second;
      given.erase(it);
    }
    if (url.empty())
      return fail("federation", InvalidArgument(f.file + ": member '" + m.name +
                                                "' has no endpoint: give it `endpoint:` in the file or --member " +
                                                m.name + "=URL"));
    auto norm = NormalizeServer(url, "member '" + m.name + "' endpoint");
    if (!norm.ok()) return fail("federation", norm.status());
    endpoints.push_back(*norm);
  }
  if (!given.empty())
    return fail("federation", InvalidArgument("--member " + given.begin()->first + "=...: no member of that name in " +
                                              f.file));
  store::StoreOptions so;
  auto store = store::OpenStore(store_url, so);
  if (!store.ok()) return fail("store", store.status());
  fedserve::Dispatcher dispatcher(*fed, endpoints, **store, o, log);
  fedserve::FedHttpServer server(dispatcher, log, http);
  if (Status s = server.Bind(); !s.ok()) return fail("listen", s);
  if (Status s = dispatcher.Start(); !s.ok()) return fail("recovery", s);
  server.Start();
  nlohmann::json members = nlohmann::json::array();
  for (size_t m = 0; m < fed->members.size(); ++m)
    members.push_back({{"name", fed->members[m].name}, {"endpoint", endpoints[m]}});
  log.Info("listening", {{"host", http.host}, {"port", server.port()}, {"role", "federation-dispatcher"},
                         {"federation", fed->name}, {"policy", f.policy}, {"members", members},
                         {"store", (*store)->Describe()}, {"auth", !http.token.empty()},
                         {"member_auth", !o.link.token.empty()}, {"tls", !http.tls_cert_file.empty()}});
  int sig = 0;
  while (sig <= 0) {
    siginfo_t info;
    const timespec tick{0, 200'000'000};
    sig = sigtimedwait(&stop_signals, &info, &tick);
  }
  log.Info("stopping", {{"signal", sig}});
  server.Stop();
  dispatcher.Stop();
  log.Info("stopped", {{"exit_status", 0}});
  return 0;
}

}  // namespace berth::apps
