// `berth serve` against a Kubernetes API server (serve_kube.cc).
#pragma once

#include <csignal>
#include <string>
#include <utility>
#include <vector>

#include "berth/cluster/level.h"
#include "berth/common/quantity.h"
#include "berth/common/status.h"
#include "berth/faults/handler.h"
#include "berth/server/colocation_flags.h"
#include "berth/server/log.h"

namespace berth::apps {

struct KubeServeFlags {
  std::string listen = "127.0.0.1:7450";
  std::string token_file;  // the bearer token writes (POST .../load) must present ("" = none asked)
  std::string kubeconfig;  // "" = $KUBECONFIG, in-cluster, ~/.kube/config
  std::string scheduler_name = "berth";
  std::string policy = "topology";
  std::string queues;
  std::string catalog = "data/accelerators.yaml";
  std::string throughputs;  // measured table for a queue tree in normalized units ("" = specs only)
  std::vector<std::string> topology_labels;  // LABEL=LEVEL
  double kube_qps = 50;
  int kube_burst = 100;
  bool insecure_skip_tls_verify = false;
  TimeUs min_runtime = -1;      // -1: the policy's default
  std::vector<std::string> plugin_args;  // --plugin-arg PLUGIN.KEY=VALUE
  TimeUs preemption_grace = 0;
  TimeUs yield_best_effort = -1, yield_training_grace = -1;  // -1: the grace
  server::ServeColocation colocation;  // --reserved-nodes (Node names), --colocation-mode, --overcommit, ...
  // In-place repair (--repair, --spares, --repair-cost, --repair-timeout; parsed as for berth serve).
  faults::RepairMode repair = faults::RepairMode::kRequeue;
  faults::SpareSetting spares;
  TimeUs repair_cost = 0;
  TimeUs repair_timeout = 300'000'000;
  bool leader_elect = true;
  std::string lease_namespace;  // "" = the kubeconfig's namespace
  std::string lease_name = "berth-scheduler";
  std::string lease_identity;  // "" = the host name (a pod's name): a restarted replica takes its Lease back at once
  server::LogFormat log_format = server::LogFormat::kJson;
  server::LogLevel log_level = server::LogLevel::kInfo;
};

// LABEL=LEVEL options (repeatable --topology-label) as label -> level pairs.
StatusOr<std::vector<std::pair<std::string, cluster::Level>>> ParseTopologyLabels(
    const std::vector<std::string>& specs);

int ServeKube(const KubeServeFlags& flags);

// A bearer token from a file (surrounding whitespace dropped); errors name
// the flag and the file.
StatusOr<std::string> ReadToken(const std::string& path, const std::string& flag);

// Blocks SIGINT and SIGTERM in every thread (the main thread waits for them).
sigset_t BlockStopSignals();
// Logs and prints a startup error; returns the exit status (1).
int StartupFailed(server::Logger& log, const std::string& what, const Status& s);

}  // namespace berth::apps
