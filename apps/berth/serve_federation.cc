// `berth serve --federation FILE` (serve_federation.h): loads the federation
// file (each member's cluster as the dispatcher's model of it), pairs every
// member with its endpoint (the file's `endpoint`, or --member NAME=URL),
// opens the dispatcher's own store, serves its API until a stop signal.
// Over etcd it is one of several dispatchers: it serves at once as a standby
// (503 naming the leader), campaigns, leads once it holds the term, and
// exits with status 3 when it loses it, as a member replica does.
#include "serve_federation.h"

#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

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
namespace {
constexpr int kExitFedSteppedDown = 3;       // as a member replica that lost its term
constexpr int kFedStepDownGraceSeconds = 10;  // longest an orderly stop may take after that
}  // namespace


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
  // The store's thread reports a lost term (etcd: the lease lapsed or a
  // fenced write was refused): the dispatcher stops deciding at once.
  struct Lost {
    std::mutex mu;
    fedserve::Dispatcher* dispatcher = nullptr;
    std::string reason;
    std::atomic<bool> lost{false};
  } lost;
  store::StoreOptions so;
  so.on_lost = [&lost](const Status& why) {
    std::lock_guard<std::mutex> lock(lost.mu);
    if (lost.dispatcher) lost.dispatcher->StepDown(why.message());
    lost.reason = why.message();
    lost.lost = true;
  };
  auto store = store::OpenStore(store_url, so);
  if (!store.ok()) return fail("store", store.status());
  const bool replicated = store_url.rfind("etcd:", 0) == 0;
  fedserve::Dispatcher dispatcher(*fed, endpoints, **store, o, log);
  {
    std::lock_guard<std::mutex> lock(lost.mu);
    lost.dispatcher = &dispatcher;
  }
  fedserve::FedHttpServer server(dispatcher, log, http);
  if (Status s = server.Bind(); !s.ok()) return fail("listen", s);
  nlohmann::json members = nlohmann::json::array();
  for (size_t m = 0; m < fed->members.size(); ++m)
    members.push_back({{"name", fed->members[m].name}, {"endpoint", endpoints[m]}});
  auto listening = [&](const char* role) {
    log.Info("listening", {{"host", http.host}, {"port", server.port()}, {"role", role},
                           {"federation", fed->name}, {"policy", f.policy}, {"members", members},
                           {"store", (*store)->Describe()}, {"auth", !http.token.empty()},
                           {"member_auth", !o.link.token.empty()}, {"tls", !http.tls_cert_file.empty()}});
  };
  std::thread starter;
  std::atomic<bool> start_done{false};
  Status start_status;
  if (replicated) {
    // Serve at once (a standby answers 503 naming the leader), then campaign.
    (*store)->Announce(Announcement(http.host, server.port(), !http.tls_cert_file.empty()));
    server.Start();
    listening("federation-dispatcher");  // a standby until it holds the term
    log.Info("campaigning", {{"store", (*store)->Describe()}});
    starter = std::thread([&] {
      start_status = dispatcher.Start();
      start_done = true;
    });
  } else {
    if (Status s = dispatcher.Start(); !s.ok()) return fail("recovery", s);
    server.Start();
    listening("federation-dispatcher");
  }
  // Wait for a stop signal, the loss of the term, or a failed start.
  int sig = 0, code = 0;
  for (;;) {
    siginfo_t info;
    const timespec tick{0, 100'000'000};
    if (const int got = sigtimedwait(&stop_signals, &info, &tick); got > 0) {
      sig = got;
      break;
    }
    if (lost.lost || dispatcher.stepped_down()) break;
    if (start_done && !start_status.ok()) break;
  }
  if (sig) {
    log.Info("stopping", {{"signal", sig}});
  } else if (lost.lost || dispatcher.stepped_down()) {
    code = kExitFedSteppedDown;
    {
      std::lock_guard<std::mutex> lock(lost.mu);
      log.Error("stepping_down", {{"reason", lost.lost ? lost.reason : "a store write failed"},
                                  {"exit_status", code},
                                  {"hint", "restart this process: it rejoins as a standby"}});
    }
    // Stopping in order waits for in-flight requests; never for long.
    std::thread([code] {
      std::this_thread::sleep_for(std::chrono::seconds(kFedStepDownGraceSeconds));
      std::_Exit(code);
    }).detach();
  } else {
    log.Error("startup_failed", {{"what", "recovery"}, {"error", start_status.message()}});
    std::cerr << "berth serve: " << start_status.message() << "\n";
    code = 1;
  }
  (*store)->Interrupt();  // a standby stops campaigning
  if (starter.joinable()) starter.join();
  server.Stop();
  dispatcher.Stop();
  {
    std::lock_guard<std::mutex> lock(lost.mu);
    lost.dispatcher = nullptr;
  }
  log.Info("stopped", {{"exit_status", code}});
  return code;
}

}  // namespace berth::apps
