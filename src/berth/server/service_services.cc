// Services in the daemon: a job of kind `service` is handed to the service
// controller (workload/service_controller.h) instead of the scheduler; the
// controller's replicas are jobs of their own (not persisted: after a restart
// the controller starts them again from the durable service), submitted and
// stopped on the scheduling thread at each turn of the loop. Load reports
// (POST /v1/services/{id}/load) feed its autoscaler.
#include "berth/server/records.h"
#include "berth/server/service.h"

namespace berth::server {

using job::JobState;
using nlohmann::json;

void Service::ServiceAccepted(JobEntry& e) {
  Status s = services_->Add(e.spec, clock_.Now());
  if (!s.ok()) {
    e.state = JobState::kFailed;
    e.finished_at = clock_.Now();
    e.end_reason = s.message();
    ReleaseKey(e);
    MarkView(e);
    AppendRecord({store::RecordKind::kJobFinished, e.id, 0, "", EncodeEnd(e.state, e.end_reason)});
    return;
  }
  // The service itself runs while it is not cancelled; its replicas hold the GPUs.
  e.state = JobState::kRunning;
  e.started_at = clock_.Now();
  MarkView(e);
  dirty_ = true;
  log_.Info("service_accepted", {{"job", e.id}, {"name", e.spec.name}, {"replicas", e.spec.service->replicas}});
}

void Service::ServicesTick() {
  const TimeUs now = clock_.Now();
  workload::ControllerActions a = services_->Tick(*sched_, now);
  for (JobId id : a.stop) {
    auto it = jobs_.find(id.value());
    if (it == jobs_.end()) continue;
    JobEntry& e = it->second;
    if (job::IsTerminal(e.state)) continue;
    if (Status s = sched_->Finish(id, JobState::kCancelled); !s.ok()) {
      log_.Warn("replica_stop", {{"job", e.id}, {"error", s.message()}});
      continue;
    }
    if (vnodes_) vnodes_->Kill(e.id);
    pending_.erase(e.id);
    running_.erase(e.id);
    e.state = JobState::kCancelled;
    e.finished_at = now;
    e.end_reason = "stopped by service " + std::to_string(e.spec.replica_of.value());
    e.placements.clear();
    MarkView(e);
    dirty_ = true;
  }
  for (job::JobSpec& spec : a.start) {
    JobEntry e;
    e.id = spec.id.value();
    e.key = "replica:" + std::to_string(e.id);
    e.spec = std::move(spec);
    e.accepted_at = now;
    e.durable = true;
    e.replica = true;
    if (Status s = sched_->Submit(e.spec); !s.ok()) {
      log_.Warn("replica_submit", {{"job", e.id}, {"error", s.message()}});
      continue;
    }
    pending_.insert(e.id);
    const int64_t id = e.id;
    MarkView(jobs_.emplace(id, std::move(e)).first->second);
    dirty_ = true;
  }
  // Replicas that ended in the scheduler (failed, never fit) drop out of the
  // controller at its next turn, which starts others.
}

ApiResult Service::ReportServiceLoad(int64_t id, const std::string& body) {
  if (!ready_) return NotReady();
  StatusOr<int64_t> parsed = ParseLoadReport(body);
  if (!parsed.ok()) return ApiResult::Error(400, parsed.status().message());
  const int64_t milli = *parsed;
  std::optional<ApiResult> out = Call<ApiResult>([this, id, milli]() -> ApiResult {
    Status s = services_->ReportLoad(JobId(id), milli, clock_.Now());
    if (s.code() == StatusCode::kNotFound) return ApiResult::Error(404, "no service " + std::to_string(id));
    if (!s.ok()) return ApiResult::Error(400, s.message());
    dirty_ = true;
    return ApiResult{200, {{"id", id}, {"requests_per_s", static_cast<double>(milli) / 1000.0}}};
  });
  if (!out) return ApiResult::Error(503, "the scheduling loop did not answer in time");
  return *out;
}

ApiResult Service::GetService(int64_t id) {
  std::optional<ApiResult> out = Call<ApiResult>([this, id]() -> ApiResult {
    std::optional<workload::ServiceStatus> s = services_->Find(JobId(id));
    if (!s) return ApiResult::Error(404, "no service " + std::to_string(id));
    json replicas = json::array();
    for (JobId r : s->replicas) replicas.push_back(r.value());
    return ApiResult{200,
                     {{"id", id},
                      {"name", s->name},
                      {"desired", s->desired},
                      {"running", s->running},
                      {"pending", s->pending},
                      {"version", s->version},
                      {"updated", s->updated},
                      {"rolling", s->rolling},
                      {"requests_per_s", static_cast<double>(s->load) / 1000.0},
                      {"replicas", replicas}}};
  });
  if (!out) return ApiResult::Error(503, "the scheduling loop did not answer in time");
  return *out;
}

}  // namespace berth::server
