// The read side of the live dispatcher (dispatcher.h): job documents (the
// member's keys plus where the job went and why), the job list, the
// federation view (members, digests, leases, counters) and metrics.
#include <algorithm>

#include "berth/federation/digest_json.h"
#include "berth/federation/ledger.h"
#include "berth/fedserve/dispatcher.h"
#include "berth/server/records.h"

namespace berth::fedserve {

using job::JobState;
using nlohmann::json;
using server::ApiResult;

namespace {

json Seconds(TimeUs t) { return t < 0 ? json(nullptr) : json(UsToSeconds(t)); }

const char* PhaseName(int phase) {
  switch (phase) {
    case 0: return "waiting";
    case 1: return "sending";
    case 2: return "at_member";
    default: return "ended";
  }
}

}  // namespace

json Dispatcher::JobJson(const Job& j, bool detail) const {
  json out = {{"id", j.id},
              {"name", j.spec.name},
              {"state", job::JobStateName(j.state)},
              {"queue", j.spec.queue.empty() ? (j.spec.tenant.empty() ? "default" : j.spec.tenant) : j.spec.queue},
              {"tenant", j.spec.tenant},
              {"gpus", j.spec.total_gpus()},
              {"submitted_at", Seconds(j.accepted_at)},
              {"started_at", Seconds(j.state == JobState::kPending ? -1 : j.started_at)},
              {"finished_at", Seconds(j.finished_at)},
              {"dispatched_at", Seconds(j.dispatched_at)},
              {"nodes", j.nodes},
              {"why", j.why},
              {"member", j.member >= 0 ? json(fed_.members[j.member].name) : json(nullptr)},
              {"region", j.member >= 0 ? json(fed_.regions[fed_.members[j.member].region]) : json(nullptr)},
              {"member_job", j.member_job >= 0 ? json(j.member_job) : json(nullptr)}};
  if (!detail) return out;
  out["idempotency_key"] = j.key;
  out["spec"] = server::JobToJson(j.spec);
  out["phase"] = PhaseName(static_cast<int>(j.phase));
  out["attempt"] = j.attempt;
  out["requeues"] = j.requeues;
  out["promise"] = j.promise;
  out["placements"] = json::array();  // at the member: GET its /v1/jobs/{member_job}
  if (j.remaining >= 0) out["remaining_s"] = UsToSeconds(j.remaining);
  if (j.ckpt.region >= 0) {
    out["checkpoint"] = {{"region", fed_.regions[j.ckpt.region]}, {"mib", j.ckpt.mib}};
    if (j.phase == Phase::kSending && j.send_after > 0)
      out["checkpoint"]["in_place_in_s"] = std::max(0.0, UsToSeconds(j.send_after - clock_.Now()));
  }
  if (!j.end_reason.empty()) out["reason"] = j.end_reason;
  json ex = json::array();
  for (int32_t m : j.excluded) ex.push_back(fed_.members[m].name);
  out["refused_by"] = ex;
  json cands = json::array();
  for (const Candidate& c : j.candidates) {
    const federation::Estimate& e = c.estimate;
    const cluster::Cluster& cl = *fed_.members[c.member].cluster;
    cands.push_back({{"member", fed_.members[c.member].name},
                     {"region", fed_.regions[fed_.members[c.member].region]},
                     {"chosen", c.member == j.member},
                     {"feasible", e.feasible},
                     {"fits_now", e.fits_now},
                     {"gpu_type", e.type >= 0 && e.type < static_cast<int32_t>(cl.gpu_types().size())
                                      ? json(cl.gpu_types()[e.type].name)
                                      : json(nullptr)},
                     {"wait_s", UsToSeconds(e.wait)},
                     {"staging_s", UsToSeconds(std::max<TimeUs>(0, e.data.ready - c.at))},
                     {"data_moved_mib", e.data.from_region >= 0 ? e.data.mib : 0},
                     {"run_s", UsToSeconds(e.run)},
                     {"finish_in_s", UsToSeconds(e.finish - c.at)},
                     {"cost_usd", e.cost_usd()}});
  }
  out["candidates"] = cands;
  if (!j.parts.empty()) out.update(SpanJson(j));  // a gang split across regions: its parts and why
  return out;
}

ApiResult Dispatcher::GetJob(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end() || !it->second.durable) return ApiResult::Error(404, "no job " + std::to_string(id));
  return {200, JobJson(it->second, true)};
}

ApiResult Dispatcher::WhyJob(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end() || !it->second.durable) return ApiResult::Error(404, "no job " + std::to_string(id));
  const Job& j = it->second;
  json d = JobJson(j, true);
  json out = {{"id", id}, {"state", d["state"]}, {"why", j.why}, {"member", d["member"]}, {"candidates", d["candidates"]}};
  if (d.contains("parts")) out["parts"] = d["parts"], out["span"] = d["span"];
  return {200, out};
}

ApiResult Dispatcher::ListJobs(const std::string& state, int64_t after, int64_t limit) {
  std::optional<JobState> want;
  if (!state.empty()) {
    want = server::ParseJobState(state);
    if (!want || *want == JobState::kAdmitted || *want == JobState::kPreempted)
      return ApiResult::Error(400, "state: '" + state + "' is not one of pending, running, succeeded, failed, cancelled");
  }
  if (limit <= 0 || limit > 10000) return ApiResult::Error(400, "limit: must be in 1..10000");
  std::lock_guard<std::mutex> lock(mu_);
  json items = json::array();
  int64_t last = after;
  bool more = false;
  for (auto it = jobs_.upper_bound(after); it != jobs_.end(); ++it) {
    const Job& j = it->second;
    if (!j.durable || (want && j.state != *want)) continue;
    if (static_cast<int64_t>(items.size()) == limit) {
      more = true;
      break;
    }
    items.push_back(JobJson(j, false));
    last = j.id;
  }
  json out = {{"jobs", std::move(items)}};
  if (more) out["next_after"] = last;
  return {200, out};
}

ApiResult Dispatcher::Federation() {
  std::lock_guard<std::mutex> lock(mu_);
  const TimeUs steady = SteadyNow(), wall = clock_.Now();
  json members = json::array();
  for (size_t m = 0; m < members_.size(); ++m) {
    const MemberState& ms = members_[m];
    json leases = json::array();
    for (const auto& f : in_flight_[m]) {
      int64_t job = -1;
      for (const auto& [id, j] : jobs_) {
        if (j.member == static_cast<int32_t>(m) && j.ledger_attempt == f.attempt) job = id;
        for (const Part& p : j.parts)
          if (p.member == static_cast<int32_t>(m) && p.ledger_attempt == f.attempt) job = id;
      }
      leases.push_back({{"job", job},
                        {"gpus", f.gpus},
                        {"promise", f.expires != federation::kNoExpiry && f.type >= 0},
                        {"expires_in_s", f.expires >= federation::kNoExpiry / 4 ? json(nullptr)
                                                                                : json(UsToSeconds(f.expires - wall))}});
    }
    int64_t queued = 0, running = 0;
    for (const auto& [id, j] : jobs_) {
      if (j.phase == Phase::kEnded || j.phase == Phase::kWaiting) continue;
      if (j.member == static_cast<int32_t>(m)) ++(j.state == JobState::kRunning ? running : queued);
      for (const Part& p : j.parts)  // a split gang's part there
        if (p.member == static_cast<int32_t>(m)) ++(p.state == JobState::kRunning ? running : queued);
    }
    json item = {{"name", fed_.members[m].name},
                 {"region", fed_.regions[fed_.members[m].region]},
                 {"endpoint", ms.link->endpoint()},
                 {"gpus", fed_.members[m].cluster->total_gpus()},
                 {"up", ms.up},
                 {"reached", ms.ever_reached},
                 {"silent_s", UsToSeconds(steady - ms.last_ok)},
                 {"down_events", ms.down_events},
                 {"responsive", ResponsiveLocked(m, steady)},
                 {"lease_expires_in_s", ms.lease_until > 0 ? json(UsToSeconds(ms.lease_until - wall)) : json(nullptr)},
                 {"jobs_queued", queued},
                 {"jobs_running", running},
                 {"in_flight", leases},
                 {"digest", views_[m].version > 0 ? federation::DigestToJson(views_[m]) : json(nullptr)}};
    if (!ms.last_error.empty()) item["last_error"] = ms.last_error;
    if (!ms.up) item["down_for_s"] = UsToSeconds(steady - ms.down_since);
    members.push_back(std::move(item));
  }
  const Counters& c = counters_;
  int64_t waiting = 0;
  for (int64_t id : waiting_)
    if (!jobs_.at(id).cancel_requested) ++waiting;
  return {200,
          {{"federation", fed_.name},
           {"policy", federation::PolicyName(policy_)},
           {"lease_s", UsToSeconds(fed_.lease_ttl)},
           {"members", members},
           {"jobs", jobs_.size()},
           {"waiting", waiting},
           {"counters",
            {{"dispatches", c.dispatches},
             {"promises", c.promises},
             {"double_promises", c.double_promises},
             {"redispatches", c.redispatches},
             {"refusals", c.refusals},
             {"leases_released", c.leases_released},
             {"leases_expired", c.leases_expired},
             {"requeued_running", c.requeued_running},
             {"duplicates_cancelled", c.duplicates_cancelled},
             {"batches", c.batches},
             {"forward_retries", c.forward_retries},
             {"checkpoint_moves", c.checkpoint_moves},
             {"checkpoint_bytes", c.checkpoint_bytes},
             {"checkpoint_egress_usd", c.checkpoint_egress_usd},
             {"spanning_jobs", c.spanning_jobs},
             {"spanning_parts", c.spanning_parts},
             {"span_releases", c.span_releases},
             {"span_breaks", c.span_breaks}}}}};
}

std::string Dispatcher::MetricsText() {
  json f = Federation().body;
  std::string out;
  auto line = [&out](const std::string& name, const std::string& labels, double v) {
    out += name + labels + " " + std::to_string(v) + "\n";
  };
  line("berth_federation_leading", "", ready() ? 1 : 0);  // 0: a standby, loading, or stepped down
  for (const auto& [k, v] : f["counters"].items()) line("berth_federation_" + k + "_total", "", v.get<double>());
  line("berth_federation_jobs", "", f["jobs"].get<double>());
  line("berth_federation_waiting_jobs", "", f["waiting"].get<double>());
  for (const auto& m : f["members"]) {
    const std::string l = "{member=\"" + m["name"].get<std::string>() + "\"}";
    line("berth_federation_member_up", l, m["up"].get<bool>() ? 1 : 0);
    line("berth_federation_member_jobs_running", l, m["jobs_running"].get<double>());
    line("berth_federation_member_jobs_queued", l, m["jobs_queued"].get<double>());
    line("berth_federation_member_in_flight", l, static_cast<double>(m["in_flight"].size()));
  }
  return out;
}

}  // namespace berth::fedserve
