// `berth serve --federation FILE`: the live federation dispatcher over member
// `berth serve` processes (serve_federation.cc; the dispatcher itself is
// src/berth/fedserve).
#pragma once

#include <csignal>
#include <string>
#include <vector>

#include "berth/server/http_server.h"
#include "berth/server/job_json.h"
#include "berth/server/log.h"

namespace berth::apps {

struct FedServeFlags {
  std::string file;                  // the federation file
  std::vector<std::string> members;  // NAME=URL, overriding the file's endpoints
  std::string policy = "global";     // --dispatch-policy
  std::string member_token_file;     // bearer token presented to the members
  std::string member_ca_cert;        // CA of https members
  std::string poll_interval = "0.5s";
  std::string member_timeout = "5s";
  std::string requeue_running_after = "60s";
  std::string member_request_timeout = "2s";
  double member_speedup = 1.0;
  int32_t batch_min = 8;
};

// The default store of a dispatcher (not a member's: ./berth-data/).
inline constexpr const char* kFederationStore = "sqlite:./berth-fed-data/berth.db";

// How a replica (a member's `berth serve`, or a dispatcher) announces itself
// to the others on a replicated store while it leads: {"id", "address"}
// (serve_cmd.cc).
std::string Announcement(const std::string& host, int port, bool tls);

// Runs the dispatcher until SIGINT/SIGTERM; over an etcd store, as one of
// several: it serves at once (a standby answers 503 naming the leader),
// leads once it holds the store's term, and exits with status 3 when it
// loses it (or a write fails). `http` holds the listener, token and TLS
// options already checked. Returns the exit status.
int ServeFederation(const FedServeFlags& f, const server::HttpOptions& http, const std::string& store_url,
                    const server::AdmissionLimits& limits, server::Logger& log, sigset_t stop_signals);

}  // namespace berth::apps
