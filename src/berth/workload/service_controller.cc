// The service controller.
#include "berth/workload/service_controller.h"

#include <algorithm>

#include "berth/job/lifecycle.h"

namespace berth::workload {

using job::JobState;

Status ControllerOptions::Validate() const {
  if (max_surge < 0 || max_unavailable < 0) return InvalidArgument("services: max_surge and max_unavailable must be >= 0");
  if (max_surge == 0 && max_unavailable == 0)
    return InvalidArgument("services: max_surge and max_unavailable cannot both be 0 (a rolling update could not move)");
  if (!new_id) return InvalidArgument("services: no job id allocator");
  return autoscaler.Validate();
}

ServiceController::ServiceController(ControllerOptions options) : o_(std::move(options)) {}

Status ServiceController::Add(const job::JobSpec& service, TimeUs now) {
  if (!service.service) return InvalidArgument("job '" + service.name + "': not a service");
  if (!service.id.valid()) return InvalidArgument("service '" + service.name + "': no id");
  if (services_.count(service.id) > 0 || replica_to_service_.count(service.id) > 0)
    return InvalidArgument("service '" + service.name + "': id " + std::to_string(service.id.value()) + " is in use");
  BERTH_RETURN_IF_ERROR(job::ValidateJob(service));
  Entry e{service, 0, service.service->replicas, false, Autoscaler(*service.service, o_.autoscaler), {}};
  services_.emplace(service.id, std::move(e));
  return Status::Ok();
}

Status ServiceController::ReportLoad(JobId service, int64_t milli_rps, TimeUs now) {
  auto it = services_.find(service);
  if (it == services_.end()) return NotFound("service " + std::to_string(service.value()) + ": no such service");
  if (milli_rps < 0) return InvalidArgument("service " + std::to_string(service.value()) + ": load must not be negative");
  it->second.autoscaler.Observe(now, milli_rps);
  return Status::Ok();
}

Status ServiceController::Update(JobId service, const job::TaskGroup& shape, TimeUs) {
  auto it = services_.find(service);
  if (it == services_.end()) return NotFound("service " + std::to_string(service.value()) + ": no such service");
  job::JobSpec next = it->second.spec;
  next.groups = {shape};
  next.groups[0].count = 1;
  BERTH_RETURN_IF_ERROR(job::ValidateJob(next));
  it->second.spec = std::move(next);
  ++it->second.version;
  return Status::Ok();
}

Status ServiceController::Remove(JobId service) {
  auto it = services_.find(service);
  if (it == services_.end()) return NotFound("service " + std::to_string(service.value()) + ": no such service");
  it->second.removing = true;
  return Status::Ok();
}

JobId ServiceController::ServiceOf(JobId job) const {
  auto it = replica_to_service_.find(job);
  return it == replica_to_service_.end() ? JobId() : it->second;
}

job::JobSpec ServiceController::MakeReplica(const Entry& e, int32_t active) {
  job::JobSpec r = e.spec;
  r.id = o_.new_id();
  r.replica_of = e.spec.id;
  r.name = e.spec.name + "-r" + std::to_string(r.id.value());
  r.duration = -1;  // a replica runs until stopped
  r.checkpoint_interval = -1;
  r.priority = e.spec.priority + (active < e.spec.service->min_replicas ? kGuaranteedBoost : kBurstBoost) +
               (e.spec.service->latency_class == job::LatencyClass::kCritical ? kCriticalBoost : 0);
  return r;
}

void ServiceController::Reconcile(Entry& e, ControllerActions& out) {
  auto stop = [&](Replica& r) {
    out.stop.push_back(r.id);
    r.state = JobState::kCancelled;
  };
  if (e.removing) {
    for (auto it = e.replicas.rbegin(); it != e.replicas.rend(); ++it) stop(*it);
    return;
  }
  auto count = [&](bool current_version, bool running_only) {
    int32_t n = 0;
    for (const Replica& r : e.replicas) {
      if (job::IsTerminal(r.state)) continue;
      if (current_version != (r.version == e.version)) continue;
      if (running_only && r.state != JobState::kRunning) continue;
      ++n;
    }
    return n;
  };
  const int32_t desired = e.desired;
  // Old pending replicas serve nothing: replace them at once.
  for (Replica& r : e.replicas)
    if (r.version != e.version && !job::IsTerminal(r.state) && r.state != JobState::kRunning) stop(r);
  int32_t old_active = count(false, false);
  int32_t fresh = count(true, false);
  int32_t running = count(true, true) + count(false, true);
  const int32_t surge = old_active > 0 ? o_.max_surge : 0;
  auto start_one = [&] {
    job::JobSpec r = MakeReplica(e, old_active + fresh);
    replica_to_service_[r.id] = e.spec.id;
    e.replicas.push_back({r.id, e.version, JobState::kPending});
    out.start.push_back(std::move(r));
    ++fresh;
  };
  while (fresh < desired && old_active + fresh < desired + surge) start_one();
  // Old running replicas go while enough others stay available.
  const int32_t min_available = std::max(e.spec.service->min_replicas, desired - o_.max_unavailable);
  for (Replica& r : e.replicas) {
    if (old_active == 0) break;
    if (r.version == e.version || r.state != JobState::kRunning) continue;
    if (running - 1 < min_available) break;
    stop(r);
    --old_active;
    --running;
  }
  while (fresh < desired && old_active + fresh < desired + surge) start_one();
  // Too many of the current version (scaled down): newest first, pending first.
  for (bool pending_pass : {true, false}) {
    for (auto it = e.replicas.rbegin();
         it != e.replicas.rend() && (fresh > desired || fresh + old_active > desired + surge); ++it) {
      if (it->version != e.version) continue;
      if (job::IsTerminal(it->state) || (it->state == JobState::kRunning) == pending_pass) continue;
      if (!pending_pass && old_active > 0) break;  // mid-rollout the old ones go first
      stop(*it);
      --fresh;
    }
  }
}

ControllerActions ServiceController::Tick(const scheduler::Scheduler& sched, TimeUs now) {
  ControllerActions out;
  for (auto it = services_.begin(); it != services_.end();) {
    Entry& e = it->second;
    // What the scheduler holds: drop replicas that ended.
    std::erase_if(e.replicas, [&](Replica& r) {
      const scheduler::JobRecord* rec = sched.Find(r.id);
      if (rec != nullptr) r.state = rec->state;
      const bool gone = rec == nullptr ? job::IsTerminal(r.state) : job::IsTerminal(rec->state);
      if (gone) replica_to_service_.erase(r.id);
      return gone;
    });
    if (e.removing && e.replicas.empty()) {
      it = services_.erase(it);
      continue;
    }
    if (!e.removing && now >= e.autoscaler.next_evaluation()) {
      e.desired = e.autoscaler.Evaluate(now, e.desired);
    }
    Reconcile(e, out);
    ++it;
  }
  return out;
}

std::optional<ServiceStatus> ServiceController::Find(JobId service) const {
  auto it = services_.find(service);
  if (it == services_.end()) return std::nullopt;
  const Entry& e = it->second;
  ServiceStatus s;
  s.id = e.spec.id;
  s.name = e.spec.name;
  s.desired = e.removing ? 0 : e.desired;
  s.version = e.version;
  s.load = e.autoscaler.load();
  s.scaled_load = e.autoscaler.scaled_load();
  for (const Replica& r : e.replicas) {
    if (r.state == JobState::kRunning) {
      ++s.running;
      if (r.version == e.version) ++s.updated;
    } else if (!job::IsTerminal(r.state)) {
      ++s.pending;
    } else {
      continue;
    }
    if (r.version != e.version) s.rolling = true;
    s.replicas.push_back(r.id);
  }
  return s;
}

std::vector<ServiceStatus> ServiceController::All() const {
  std::vector<ServiceStatus> out;
  for (const auto& [id, e] : services_) out.push_back(*Find(id));
  return out;
}

TimeUs ServiceController::NextEvaluation() const {
  TimeUs t = -1;
  for (const auto& [id, e] : services_)
    if (!e.removing && (t < 0 || e.autoscaler.next_evaluation() < t)) t = e.autoscaler.next_evaluation();
  return t;
}

}  // namespace berth::workload
