// The service controller: turns services (jobs of kind `service`) into
// replica jobs and keeps their number where the autoscaler wants it, in the
// scheduling loop of whichever driver runs the scheduler (the simulator, the
// daemon). It decides; the driver acts: Tick returns the replica jobs to
// submit and the ones to stop, and the driver passes them to the scheduler
// (Submit, Finish) through the same path as any job, so every placement is an
// Apply event of the one state.
//
//   ServiceController c(options);              // options.new_id hands out job ids
//   c.Add(service_spec, now);                  // a JobSpec with .service set
//   c.ReportLoad(service_id, 42'000, now);     // 42 requests/s
//   ControllerActions a = c.Tick(scheduler, now);
//   for (auto& r : a.start) scheduler.Submit(r);  for (JobId id : a.stop) scheduler.Finish(id, kCancelled);
//
// Replicas: each is a one-task job (the service's replica shape) with
// `replica_of` = the service's id and a copy of its ServiceSpec (so the spread
// filter sees the limits). Its priority is the service's plus
// kGuaranteedBoost while the service has fewer than min_replicas replicas
// (the guaranteed floor, which reclaims capacity from batch work through the
// preemption plugins), else plus kBurstBoost; latency-critical services add
// kCriticalBoost. Replicas are stopped newest first, pending before running.
//
// Rolling update (Update): replicas of older versions are replaced by the new
// shape at most max_surge above the desired count, and a running replica is
// stopped only while at least max(min_replicas, desired - max_unavailable)
// others stay running, so the available count never drops below the minimum.
// Pending old replicas are stopped at once (they serve nothing).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "berth/job/job.h"
#include "berth/scheduler/scheduler.h"
#include "berth/workload/autoscaler.h"

namespace berth::workload {

inline constexpr int32_t kGuaranteedBoost = 2000;
inline constexpr int32_t kBurstBoost = 1000;
inline constexpr int32_t kCriticalBoost = 100;

struct ControllerOptions {
  AutoscalerOptions autoscaler;
  int32_t max_surge = 1;
  int32_t max_unavailable = 1;
  std::function<JobId()> new_id;  // ids for replica jobs (required)
  Status Validate() const;
};

struct ControllerActions {
  std::vector<job::JobSpec> start;  // replica jobs to submit (ids set)
  std::vector<JobId> stop;          // replica jobs to end
  bool empty() const { return start.empty() && stop.empty(); }
};

// A service as the controller sees it after the last Tick.
struct ServiceStatus {
  JobId id;
  std::string name;
  int32_t desired = 0;
  int32_t running = 0;   // replicas placed (any version)
  int32_t pending = 0;
  int32_t version = 0;   // of the replica shape; Update increments it
  int32_t updated = 0;   // replicas of the current version, running
  bool rolling = false;  // replicas of older versions remain
  int64_t load = 0;         // the latest load report, milli-rps
  int64_t scaled_load = 0;  // what the autoscaler scaled for (forecast when predictive)
  std::vector<JobId> replicas;  // in id order
};

class ServiceController {
 public:
  explicit ServiceController(ControllerOptions options);

  // A new service: `service.service` set, `service.id` valid and unused.
  Status Add(const job::JobSpec& service, TimeUs now);
  // The service's load (milli-requests/s) at `now`. NotFound for an unknown service.
  Status ReportLoad(JobId service, int64_t milli_rps, TimeUs now);
  // A rolling update to a new replica shape (one task group, count 1).
  Status Update(JobId service, const job::TaskGroup& shape, TimeUs now);
  // Ends the service: every replica is stopped at the next Tick.
  Status Remove(JobId service);
  // Reconciles every service (in id order) with what the scheduler holds.
  ControllerActions Tick(const scheduler::Scheduler& sched, TimeUs now);

  bool Has(JobId service) const { return services_.count(service) > 0; }
  // The service a replica job belongs to (invalid when `job` is no replica).
  JobId ServiceOf(JobId job) const;
  std::optional<ServiceStatus> Find(JobId service) const;
  std::vector<ServiceStatus> All() const;
  // The earliest time a Tick has autoscaling work (the next evaluation).
  TimeUs NextEvaluation() const;

 private:
  struct Replica {
    JobId id;
    int32_t version = 0;
    job::JobState state = job::JobState::kPending;
  };
  struct Entry {
    job::JobSpec spec;
    int32_t version = 0;
    int32_t desired = 0;
    bool removing = false;
    Autoscaler autoscaler;
    std::vector<Replica> replicas;  // in id order
  };
  job::JobSpec MakeReplica(const Entry& e, int32_t active);
  void Reconcile(Entry& e, ControllerActions& out);

  ControllerOptions o_;
  std::map<JobId, Entry> services_;
  std::map<JobId, JobId> replica_to_service_;
};

}  // namespace berth::workload
