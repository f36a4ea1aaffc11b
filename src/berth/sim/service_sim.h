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
// completions, the moment each replica works (after the grace of what it
// evicted), and, while a replica waits, the next moment a running job passes
// the policy's min-runtime guard (it may then be its victim; the scheduler
// names it: Scheduler::NextGuardExpiry).
// After each time's events the controller's actions are applied and the
// scheduler runs (until both settle).
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
// = p99 over replicas that evicted batch work of (works - wanted); with a
// colocation mode, over every replica that did not work the moment it was
// wanted (it evicted, or it waited; still waiting at the end: end - wanted),
// so that a mode without evictions still shows how long capacity took to
// come back. Co-location modes (ColocationMode) add a reservation of the
// first nodes for the services and compare sharing it with batch work.
#pragma once

#include <map>
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

// Co-location (the file's `colocation:` section; docs/services.md,
// "Co-location and overcommit"): the services' reservation, the overcommit
// ratios for best-effort work on it, and the yield deadlines.
struct ColocationSettings {
  int32_t reserved_nodes = 0;   // the first N nodes (by id) are reserved for services
  double overcommit = 1.0;      // best effort's share of a reserved node's GPUs
  std::map<std::string, double> node_overcommit;   // by node name
  std::map<std::string, double> queue_overcommit;  // by queue (else tenant)
  TimeUs best_effort_deadline = SecondsToUs(30);   // SchedulerOptions::yield_best_effort
  TimeUs training_grace = SecondsToUs(300);        // SchedulerOptions::yield_training_grace
  // A replica that no reserved node can hold (the reservation's free room is
  // split over nodes) runs on a batch node, evicting there within the yield
  // deadlines, while the services stay within the reservation's totals
  // (colocate and unbounded modes; the colocation plugin's `spill`).
  bool spill = true;
};

struct ServiceSimConfig {
  std::vector<SimService> services;
  workload::AutoscalerOptions autoscaler;
  int32_t repeat = 1;            // the load traces this many times over
  TimeUs checkpoint_interval = -1;  // for batch jobs that declare none, best effort excepted (-1: keep)
  // A window of the batch trace's own time [from, to) (to < 0: none): jobs
  // and trace services submitted in it, plus those alive at `from` (started
  // then with what is left of their run); the run lasts at least the window.
  TimeUs window_from = 0;
  TimeUs window_to = -1;
  // openb pods by their qos column: LS and Guaranteed pods become one-replica
  // latency-critical services, BE pods best-effort batch, the rest batch.
  bool openb_qos = true;
  ColocationSettings colocation;
};

// The YAML file (docs/services.md, "Simulating services"); relative paths
// are taken from the file's folder. Errors name the file and the key.
StatusOr<ServiceSimConfig> ReadServiceSimConfig(const std::string& path);

enum class ScalingMode { kStatic, kReactive, kPredictive };
const char* ScalingModeName(ScalingMode m);
bool ParseScalingMode(const std::string& s, ScalingMode& out);

// How batch work and services share the cluster (with a reservation):
//   none        no reservation: everything everywhere (the plain run);
//   colocate    services on their reserved nodes, batch work there too on
//               what they leave idle (best effort within the overcommit
//               ratio), capacity given back within the yield deadlines;
//   static      static partitioning: services and batch on separate nodes;
//   unbounded   co-location with no yield bound: services do not evict, they
//               wait until the work on their capacity ends.
enum class ColocationMode { kNone, kColocate, kStatic, kUnbounded };
const char* ColocationModeName(ColocationMode m);
bool ParseColocationMode(const std::string& s, ColocationMode& out);

struct ServiceSimOptions {
  ColocationMode colocation = ColocationMode::kNone;
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
  std::string colocation;  // ColocationModeName
  double duration_s = 0;
  std::vector<ServiceFigures> services;
  // Services of the trace itself (openb LS pods): how many, and their
  // replica-seconds wanted but not placed (all / latency-critical ones).
  int64_t trace_services = 0;
  double trace_service_replica_seconds = 0;
  double trace_service_shortfall_replica_s = 0;
  double critical_shortfall_replica_s = 0;  // load and trace services of latency class critical
  int64_t reserved_gpus = 0;
  double yield_bound_s = 0;  // the largest yield deadline in force (0: none)
  double yield_max_s = 0;
  int64_t best_effort_jobs = 0;
  int64_t best_effort_finished = 0;
  double best_effort_jct_mean_s = 0;
  int64_t best_effort_preemptions = 0;
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
