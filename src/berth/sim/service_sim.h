// Services beside batch work on one cluster, in simulated time: each service's
// load follows a request trace (request_trace.h; requests per minute scaled so
// the busiest minute is `peak_rps`), the service controller and its
// autoscaler (workload/) size the replicas in the loop, and training jobs of a
// trace (e.g. Philly's) arrive at their submit times (rebased to the start)
// and run for their durations on what is left. One scheduler, one state.
// Services of the trace itself (kind: service lines of a native trace) start
// at their submit times with their replica counts (they have no load, so the
// autoscaler keeps them) and end after their duration_s when they give one.
//
// The run lasts the load trace (times `repeat`). Events: a load report at
// every minute, an autoscaler evaluation every period, batch arrivals and
// completions, and the moment each replica works (after the grace of what it
// evicted). After each time's events the controller's actions are applied and
// the scheduler runs (until both settle).
//
// Scaling modes compared over the same input:
//   static      the service held at the replicas its peak needs
//               (ceil(peak load / per-replica target)), no autoscaling;
//   reactive    the autoscaler on the load now;
//   predictive  the autoscaler on max(load now, Holt forecast `horizon` ahead).
//
// Figures per service (integrated between events; "serving" = placed and past
// its startup delay):
//   replica_seconds              placed replicas x time;
//   static_peak_replica_seconds  peak replicas x the run;
//   under_capacity_s             time with serving x capacity_per_replica < load;
//   under_target_s               time with serving x target < load;
//   service_shortfall_replica_s  (desired - placed)+ x time: wanted, not placed.
// Batch: jobs finished, mean JCT of those, GPU-hours held, batch_goodput =
// (GPU-hours held - GPU-hours lost to evictions) / GPU-hours held; yield_p99_s
// = p99 over replicas that evicted batch work of (works - wanted).
#pragma once

#include <string>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/framework/registry.h"
#include "berth/sim/request_trace.h"
#include "berth/sim/trace.h"
#include "berth/workload/autoscaler.h"

namespace berth::sim {

struct SimService {
  job::JobSpec spec;        // kind service: replica shape, min/max, target, spread, latency class
  std::string load_trace;   // a request trace (Azure LLM inference CSV)
  double peak_rps = 0;      // the busiest minute's requests/s after scaling (0: as recorded)
  ServingModel serving;
};

struct ServiceSimConfig {
  std::vector<SimService> services;
  workload::AutoscalerOptions autoscaler;
  int32_t repeat = 1;            // the load traces this many times over
  TimeUs checkpoint_interval = -1;  // for batch jobs that declare none (-1: keep)
};

// The YAML file (docs/services.md, "Simulating services"); relative paths
// are taken from the file's folder. Errors name the file and the key.
StatusOr<ServiceSimConfig> ReadServiceSimConfig(const std::string& path);

enum class ScalingMode { kStatic, kReactive, kPredictive };
const char* ScalingModeName(ScalingMode m);
bool ParseScalingMode(const std::string& s, ScalingMode& out);

struct ServiceSimOptions {
  ScalingMode mode = ScalingMode::kReactive;
  uint64_t seed = 42;
  TimeUs preemption_grace = 0;
  bool check_indexes = false;
};

struct ServiceFigures {
  std::string name;
  double capacity_per_replica_rps = 0;
  double target_per_replica_rps = 0;
  double peak_load_rps = 0;
  int32_t peak_replicas = 0;
  int32_t max_placed = 0;
  double replica_seconds = 0;
  double static_peak_replica_seconds = 0;
  double under_capacity_s = 0;
  double under_target_s = 0;
  double service_shortfall_replica_s = 0;
  int64_t scale_events = 0;  // changes of the desired count
};

struct ServiceSimResult {
  std::string mode;
  std::string policy;
  double duration_s = 0;
  std::vector<ServiceFigures> services;
  int64_t batch_jobs = 0;
  int64_t batch_finished = 0;
  double batch_jct_mean_s = 0;
  double batch_gpu_hours = 0;
  double batch_lost_gpu_hours = 0;
  double batch_goodput = 0;
  int64_t batch_preemptions = 0;
  double yield_p99_s = 0;
  int64_t yields = 0;
  double gpu_allocation_ratio = 0;
  std::string decision_log_hash;
};

StatusOr<ServiceSimResult> RunServiceSim(const cluster::Cluster& cluster, const Trace& batch,
                                         const ServiceSimConfig& config, const framework::Profile& profile,
                                         const framework::PluginRegistry& registry, const ServiceSimOptions& options);

std::string ServiceResultsToJson(const std::vector<ServiceSimResult>& results);
std::string ServiceResultsText(const std::vector<ServiceSimResult>& results);

}  // namespace berth::sim
