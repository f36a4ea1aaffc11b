// The live federation dispatcher: submissions, the loop (digests, dispatch,
// forwarding, following jobs, failures) and recovery (dispatcher.h). The
// read side is in dispatcher_reads.cc; the role (standby, stepping down),
// Reconcile and cancels in dispatcher_role.cc; gangs split across regions in
// dispatcher_span.cc.
#include "berth/common/clock.h"
#include "berth/fedserve/dispatcher.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "berth/federation/digest_json.h"
#include "berth/federation/ledger.h"
#include "berth/federation/span.h"
#include "berth/federation/speed.h"
#include "berth/server/records.h"

namespace berth::fedserve {

using job::JobState;
using nlohmann::json;
using server::ApiResult;

namespace {
// Connections per member that forwards use at once.
constexpr int kForwardConnections = 8;
}  // namespace

Status DispatcherOptions::Validate() const {
  auto p = federation::ParsePolicy(policy);
  if (!p) return InvalidArgument("--policy '" + policy + "': expected one of " + federation::PolicyNames());
  if (*p == federation::Policy::kMultiKueue)
    return InvalidArgument("--policy multikueue: the live dispatcher sends each job to one member; "
                           "multikueue is simulated only");
  if (poll_interval <= 0) return InvalidArgument("--poll-interval must be positive");
  if (member_timeout <= 0) return InvalidArgument("--member-timeout must be positive");
  if (requeue_running_after < 0) return InvalidArgument("--requeue-running-after must not be negative");
  if (!(member_speedup > 0) || member_speedup > 1e6) return InvalidArgument("--member-speedup must be in (0, 1e6]");
  if (link.timeout <= 0) return InvalidArgument("--member-request-timeout must be positive");
  return limits.Validate();
}

Dispatcher::Dispatcher(const federation::Federation& fed, std::vector<std::string> endpoints, store::Store& store,
                       DispatcherOptions options, server::Logger& log)
    : fed_(fed), store_(store), options_(std::move(options)), log_(log) {
  if (auto p = federation::ParsePolicy(options_.policy)) policy_ = *p;
  dispatcher_ = std::make_unique<federation::Dispatcher>(policy_, fed_);
  speed_ = federation::BuildSpeedTable(fed_, nullptr);
  const size_t nm = fed_.members.size();
  members_.resize(nm);
  views_.resize(nm);
  in_flight_.resize(nm);
  for (size_t m = 0; m < nm; ++m) {
    const std::string url = m < endpoints.size() ? endpoints[m] : "";
    members_[m].link = std::make_unique<MemberLink>(url, options_.link);
    for (int k = 0; k < kForwardConnections; ++k) members_[m].pool.push_back(std::make_unique<MemberLink>(url, options_.link));
    // Until its first digest a member is taken as its whole cluster, empty.
    state::ClusterState empty(*fed_.members[m].cluster);
    federation::Digest d = federation::BuildDigest(static_cast<int32_t>(m), 0, 0, empty, {}, {});
    capacity_.push_back(d.types);
    views_[m] = std::move(d);
  }
  link_busy_.assign(fed_.regions.size(), std::vector<TimeUs>(fed_.regions.size(), 0));
}

Dispatcher::~Dispatcher() { Stop(); }

TimeUs Dispatcher::SteadyNow() const { return SteadyNowUs(); }

Status Dispatcher::Start() {
  BERTH_RETURN_IF_ERROR(options_.Validate());
  role_ = Role::kAcquiring;  // a standby while another process holds the term
  BERTH_ASSIGN_OR_RETURN(fence_, store_.Acquire());
  Role acquiring = Role::kAcquiring;
  if (!role_.compare_exchange_strong(acquiring, Role::kLoading))
    return FailedPrecondition("the store's term was lost before loading");
  BERTH_RETURN_IF_ERROR(Recover());
  const TimeUs now = SteadyNow();
  for (auto& m : members_) m.last_ok = now;  // each gets a full timeout to answer first
  Role loading = Role::kLoading;
  if (!role_.compare_exchange_strong(loading, Role::kLeading))
    return FailedPrecondition("the store's term was lost while loading");  // StepDown() came first
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = false;
  }
  loop_ = std::thread([this] { Loop(); });
  ready_ = true;
  log_.Info("leading", {{"store", store_.Describe()}, {"term", fence_.term}, {"jobs", jobs_.size()}});
  return Status::Ok();
}

void Dispatcher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (loop_.joinable()) loop_.join();
  ready_ = false;
  store_.Flush();
}

// --- the store ---

void Dispatcher::Append(store::Record rec, bool wait) {
  auto done = std::make_shared<std::promise<Status>>();
  std::future<Status> f = done->get_future();
  const std::string what = store::RecordKindName(rec.kind);
  store_.Append(fence_, {std::move(rec)}, [this, done, what](const Status& s, int64_t) {
    if (!s.ok()) OnWriteFailed(what, s);
    done->set_value(s);
  });
  if (wait) f.wait();
}

json Dispatcher::AssignedBody(const Job& j, const std::string& outcome) const {
  json body = {{"member", fed_.members[j.member].name},
               {"attempt", j.attempt},
               {"member_job", j.member_job},
               {"outcome", outcome}};
  if (j.remaining >= 0) body["remaining_s"] = UsToSeconds(j.remaining);
  if (j.ckpt.region >= 0)
    body["checkpoint"] = {{"region", fed_.regions[j.ckpt.region]},
                          {"mib", j.ckpt.mib},
                          {"ready_unix_s", UsToSeconds(j.send_after)}};
  return body;
}

void Dispatcher::AppendAssigned(const Job& j, const std::string& outcome, bool wait) {
  const json body = AssignedBody(j, outcome);
  Append({store::RecordKind::kJobAssigned, j.id, clock_.Now(), fed_.members[j.member].name, body.dump()}, wait);
}

// A job_assigned record's remaining work and checkpoint (whole runs and splits).
Status Dispatcher::RecoverProgress(Job& j, const json& b, const std::string& where) const {
  if (b.contains("remaining_s") && b["remaining_s"].is_number()) j.remaining = SecondsToUs(b["remaining_s"].get<double>());
  if (b.contains("checkpoint") && b["checkpoint"].is_object()) {
    const json& c = b["checkpoint"];
    const std::optional<int32_t> region = fed_.FindRegion(c.value("region", std::string()));
    if (!region)
      return FailedPrecondition(where + ": job " + std::to_string(j.id) + "'s checkpoint is in region '" +
                                c.value("region", std::string()) + "', which the federation file no longer has");
    j.ckpt = {*region, c.value("mib", MiB{0})};
    j.send_after = SecondsToUs(c.value("ready_unix_s", 0.0));
  }
  return Status::Ok();
}

Status Dispatcher::Recover() {
  BERTH_ASSIGN_OR_RETURN(store::Loaded loaded, store_.Load());
  std::lock_guard<std::mutex> lock(mu_);
  int64_t assigned = 0;
  for (const store::Record& r : loaded.records) {
    const std::string where = "store record " + std::to_string(r.revision);
    switch (r.kind) {
      case store::RecordKind::kJobAccepted: {
        Job j;
        j.id = r.job;
        j.key = r.key;
        BERTH_RETURN_IF_ERROR(server::DecodeAccepted(r.body, j.spec, j.fingerprint));
        j.spec.id = JobId(j.id);
        j.accepted_at = r.time;
        j.durable = true;
        j.dataset = federation::JobDataset(fed_, j.spec, j.id);
        std::promise<Status> p;
        p.set_value(Status::Ok());
        j.accepted = p.get_future().share();
        next_id_ = std::max(next_id_, j.id + 1);
        by_key_[j.key] = j.id;
        jobs_[j.id] = std::move(j);
        break;
      }
      case store::RecordKind::kJobAssigned: {
        auto it = jobs_.find(r.job);
        if (it == jobs_.end()) continue;
        Job& j = it->second;
        json b = json::parse(r.body, nullptr, false);
        if (!b.is_object() || !b.contains("member") || !b["member"].is_string())
          return Internal(where + ": a job assignment without a member");
        if (b.contains("parts")) {  // a split gang (dispatcher_span.cc)
          BERTH_RETURN_IF_ERROR(RecoverSpan(j, b, where));
          ++assigned;
          break;
        }
        int32_t m = -1;
        for (size_t k = 0; k < fed_.members.size(); ++k)
          if (fed_.members[k].name == b["member"].get<std::string>()) m = static_cast<int32_t>(k);
        if (m < 0)
          return FailedPrecondition(where + ": job " + std::to_string(j.id) + " was sent to member '" +
                                    b["member"].get<std::string>() + "', which the federation file no longer has");
        const int32_t attempt = b.value("attempt", 0);
        const int64_t member_job = b.value("member_job", int64_t{-1});
        const std::string outcome = b.value("outcome", "sent");
        SupersedeLocked(j, attempt);  // superseded: cancel it there
        j.member = m;
        j.attempt = attempt;
        j.member_job = member_job;
        BERTH_RETURN_IF_ERROR(RecoverProgress(j, b, where));
        if (outcome == "refused") {
          j.excluded.push_back(m);
          j.phase = Phase::kWaiting;
        } else {
          j.phase = outcome == "accepted" ? Phase::kAtMember : Phase::kSending;
        }
        ++assigned;
        break;
      }
      case store::RecordKind::kJobFinished: {
        auto it = jobs_.find(r.job);
        if (it == jobs_.end()) continue;
        JobState st;
        std::string reason;
        BERTH_RETURN_IF_ERROR(server::DecodeEnd(r.body, st, reason));
        it->second.phase = Phase::kEnded;
        it->second.state = st;
        it->second.end_reason = reason;
        it->second.finished_at = r.time;
        break;
      }
      case store::RecordKind::kJobRequeued:
        break;
      default:
        return FailedPrecondition(where + " (" + store::RecordKindName(r.kind) +
                                  ") was written by a member service, not a federation dispatcher; give the "
                                  "dispatcher a store of its own");
    }
  }
  int64_t ended = 0, waiting = 0;
  for (auto& [id, j] : jobs_) {
    if (j.phase == Phase::kEnded) {
      ++ended;
      // Copies left behind on members are still cancelled when reachable.
      continue;
    }
    if (j.phase == Phase::kWaiting) {
      waiting_.insert(id);
      ++waiting;
    }
    j.why = j.phase == Phase::kWaiting ? "waiting for dispatch" : "recovered; following it at its member";
  }
  log_.Info("recovered", {{"jobs", jobs_.size()}, {"assignments", assigned}, {"ended", ended},
                          {"to_dispatch", waiting}, {"revision", loaded.revision}});
  return Status::Ok();
}

// --- submissions ---

ApiResult Dispatcher::SubmitJob(const std::string& body) {
  StatusOr<server::JobSubmission> sub = server::ParseJobBody(body);
  if (!sub.ok()) return ApiResult::Error(400, sub.status().message());
  Status within = server::CheckAdmissionLimits(sub->spec, sub->idempotency_key, options_.limits);
  if (!within.ok()) return ApiResult::Error(422, within.message());
  if (!ready_) return NotReady();
  const std::string key = sub->idempotency_key.empty() ? "name:" + sub->spec.name : sub->idempotency_key;
  const std::string fingerprint = server::SpecFingerprint(sub->spec);
  std::shared_future<Status> accepted;
  int64_t id = -1;
  bool duplicate = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = by_key_.find(key); it != by_key_.end()) {
      const Job& j = jobs_.at(it->second);
      if (j.fingerprint != fingerprint)
        return ApiResult{409,
                         {{"error", "idempotency key '" + key + "' is already used by job " + std::to_string(j.id) +
                                        " with a different spec"},
                          {"id", j.id}}};
      id = j.id;
      duplicate = true;
      accepted = j.accepted;
    } else {
      // It must be able to run on some member (regions, types, sizes).
      federation::Request req;
      req.spec = &sub->spec;
      if (dispatcher_->Allowed(ContextLocked(clock_.Now()), req).empty() &&
          !(federation::Splittable(sub->spec) && federation::PlanSpan(ContextLocked(clock_.Now()), req).could_ever))
        return ApiResult::Error(422, std::string("the job can never run in this federation: no member in the regions "
                                                 "it allows has GPU types and nodes that hold it") +
                                         (sub->spec.span_regions ? ", and no split across regions could" : ""));
      if (federation::Splittable(sub->spec) && sub->spec.name.size() + 16 > options_.limits.max_name_bytes)
        return ApiResult::Error(422, "name: " + std::to_string(sub->spec.name.size()) +
                                         " bytes leaves no room for the part suffix (.part-K) of a split gang");
      Job j;
      j.id = id = next_id_++;
      j.key = key;
      j.fingerprint = fingerprint;
      j.spec = std::move(sub->spec);
      j.spec.id = JobId(j.id);
      j.accepted_at = clock_.Now();
      j.dataset = federation::JobDataset(fed_, j.spec, j.id);
      j.why = "being stored";
      auto promise = std::make_shared<std::promise<Status>>();
      j.accepted = accepted = promise->get_future().share();
      store::Record rec{store::RecordKind::kJobAccepted, j.id, j.accepted_at, key,
                        server::EncodeAccepted(j.spec, fingerprint)};
      by_key_.emplace(key, id);
      jobs_.emplace(id, std::move(j));
      store_.Append(fence_, {std::move(rec)}, [this, promise, id](const Status& s, int64_t) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          auto it = jobs_.find(id);
          if (it != jobs_.end() && s.ok()) {
            it->second.durable = true;
            it->second.why = "waiting for dispatch";
            waiting_.insert(id);
            wake_ = true;
          }
        }
        if (s.code() == StatusCode::kFailedPrecondition) OnWriteFailed("job_accepted", s);  // fenced out
        cv_.notify_all();
        promise->set_value(s);
      });
    }
  }
  if (accepted.wait_for(std::chrono::microseconds(options_.request_timeout)) != std::future_status::ready)
    return ApiResult::Error(503, "the store did not make the job durable in time; retry with the same key");
  const Status s = accepted.get();
  if (!s.ok()) return ApiResult::Error(503, "not stored: " + s.message() + "; retry with the same key");
  return ApiResult{duplicate ? 200 : 201, {{"id", id}, {"duplicate", duplicate}}};
}

ApiResult Dispatcher::CancelJob(int64_t id) {
  if (!ready_) return NotReady();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end() || !it->second.durable) return ApiResult::Error(404, "no job " + std::to_string(id));
  Job& j = it->second;
  if (j.phase == Phase::kEnded)
    return ApiResult::Error(409, "job " + std::to_string(id) + " already " + job::JobStateName(j.state));
  j.cancel_requested = true;
  if (j.phase == Phase::kWaiting) {
    EndLocked(j, JobState::kCancelled, "cancelled before dispatch");
  } else {
    wake_ = true;
    cv_.notify_all();
  }
  return ApiResult{200, {{"id", id}, {"state", "cancelled"}}};
}

// --- the loop ---

void Dispatcher::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    lock.unlock();
    if (leading()) Turn();  // a dispatcher that stepped down decides nothing more
    lock.lock();
    if (stopping_) break;
    cv_.wait_for(lock, std::chrono::microseconds(options_.tick), [this] { return stopping_ || wake_; });
    wake_ = false;
  }
}

void Dispatcher::Turn() {
  const TimeUs now = SteadyNow();
  // Each step first checks that the term is still held (StepDown may come
  // from a store thread at any time).
  for (void (Dispatcher::*step)(TimeUs) : {&Dispatcher::PollMembers, &Dispatcher::HandleDownMembers,
                                           &Dispatcher::SendAssigned, &Dispatcher::DispatchWaiting,
                                           &Dispatcher::SendAssigned, &Dispatcher::SendSpans,
                                           &Dispatcher::PollJobs}) {
    if (!leading()) return;
    (this->*step)(now);
  }
  if (!leading()) return;
  DoCancels();
  // Copies left on members that are up (cancelled while being sent, or
  // superseded before a restart) go too.
  std::vector<int32_t> dirty;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stale_dirty_) {
      stale_dirty_ = false;
      for (size_t m = 0; m < members_.size(); ++m)
        if (members_[m].ever_reached && ResponsiveLocked(m, now)) dirty.push_back(static_cast<int32_t>(m));
    }
  }
  for (int32_t m : dirty) Reconcile(m);
}

federation::EstimateContext Dispatcher::ContextLocked(TimeUs now) {
  federation::EstimateContext c;
  c.fed = &fed_;
  c.speed = &speed_;
  c.views = views_;
  c.in_flight = in_flight_;
  c.link_busy = &link_busy_;
  c.capacity = &capacity_;
  c.now = now;
  return c;
}

bool Dispatcher::ResponsiveLocked(size_t m, TimeUs now) const {
  const MemberState& ms = members_[m];
  // A member slow to answer under load is not hung: its poll may be out
  // for half the member timeout before the loop stops calling it.
  const TimeUs patience = std::max(options_.poll_interval, options_.member_timeout / 2);
  return ms.up && ms.last_error.empty() && !(ms.polling && now - ms.poll_started > patience);
}

std::string Dispatcher::DigestPathLocked(size_t m, TimeUs now) {
  MemberState& ms = members_[m];
  if (!ms.up) return "/v1/digest";
  // A member with copies still to cancel gets no lease: it stays fenced
  // (starts nothing) until they are gone.
  for (const auto& [id, j] : jobs_)
    for (const Copy& c : j.stale)
      if (c.member == static_cast<int32_t>(m)) return "/v1/digest";
  const TimeUs wall = clock_.Now();
  const TimeUs until = wall - (now - ms.last_ok) + options_.member_timeout * 3 / 4;
  if (until <= wall) return "/v1/digest";
  ms.lease_until = std::max(ms.lease_until, until);
  char buf[128];
  std::snprintf(buf, sizeof buf, "/v1/digest?lease_until=%.6f&hold_running_s=%.6f", UsToSeconds(until),
                UsToSeconds(options_.requeue_running_after));
  return buf;
}

void Dispatcher::PollMembers(TimeUs now) {
  for (size_t m = 0; m < members_.size(); ++m) {
    bool returned = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      MemberState& ms = members_[m];
      if (!ms.polling) {
        if (ms.next_poll > now) continue;
        ms.next_poll = now + options_.poll_interval;
        MemberLink* link = ms.link.get();
        std::string path = DigestPathLocked(m, now);
        ms.poll = std::async(std::launch::async, [this, link, path = std::move(path)] {
          MemberReply r = link->Call("GET", path);
          const TimeUs after = SteadyNow();
          {
            std::lock_guard<std::mutex> l(mu_);
            wake_ = true;
          }
          cv_.notify_all();
          return std::make_pair(std::move(r), after);
        });
        ms.polling = true;
        ms.poll_started = now;
        continue;  // its answer is taken on a later turn: the loop never waits for a member
      }
      if (ms.poll.wait_for(std::chrono::seconds(0)) != std::future_status::ready) continue;
      auto [r, after] = ms.poll.get();
      ms.polling = false;
      ApplyDigestLocked(m, r, after, returned);
    }
    if (returned) Reconcile(static_cast<int32_t>(m));
  }
}

void Dispatcher::ApplyDigestLocked(size_t m, const MemberReply& r, TimeUs after, bool& returned) {
  StatusOr<federation::Digest> d = InvalidArgument("no digest");
  if (r.status == 200) d = federation::DigestFromJson(r.body, static_cast<int32_t>(m), *fed_.members[m].cluster);
  MemberState& ms = members_[m];
  ms.last_poll_failed = !d.ok();
  if (!d.ok()) {
    ms.last_error = r.reached() ? "HTTP " + std::to_string(r.status) + ": " +
                                      (r.status == 200 ? d.status().message() : r.error)
                                : r.error;
    return;
  }
  ms.last_ok = after;
  ms.last_error.clear();
  returned = !ms.up || !ms.ever_reached;
  if (!ms.up) log_.Info("member_up", {{"member", fed_.members[m].name}});
  ms.up = true;
  ms.ever_reached = true;
  // A restarted member numbers its digests anew: a later taken_at wins.
  federation::Digest& v = views_[m];
  if (d->version > v.version || d->taken_at > v.taken_at) {
    const TimeUs wall = clock_.Now();
    // Leases a digest ends: the job is in it (pending or running there).
    for (const auto& f : in_flight_[m])
      if (f.expires != federation::kNoExpiry && f.arrives <= d->taken_at) ++counters_.leases_released;
    counters_.leases_expired += federation::ReflectDigest(in_flight_[m], d->taken_at, wall);
    // Entries dropped from the ledger no longer belong to their jobs.
    for (auto& [id, j] : jobs_)
      if (j.member == static_cast<int32_t>(m) && j.ledger_attempt >= 0 &&
          std::none_of(in_flight_[m].begin(), in_flight_[m].end(),
                       [&](const federation::InFlight& f) { return f.attempt == j.ledger_attempt; }))
        j.ledger_attempt = -1;
    v = std::move(d).value();
  }
}

void Dispatcher::HandleDownMembers(TimeUs now) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t m = 0; m < members_.size(); ++m) {
    MemberState& ms = members_[m];
    // Silent: nothing answered for the timeout, and a poll since says so
    // (it failed, or has waited for half the timeout). A last answer that is
    // old only because this loop was busy (a long turn of forwards) is not
    // silence: the member has not been asked again yet.
    const bool asked = ms.last_poll_failed || (ms.polling && now - ms.poll_started > options_.member_timeout / 2);
    if (ms.up && now - ms.last_ok > options_.member_timeout && asked) {
      ms.up = false;
      ms.down_since = now;
      ++ms.down_events;
      log_.Warn("member_down", {{"member", fed_.members[m].name}, {"error", ms.last_error},
                                {"silent_s", UsToSeconds(now - ms.last_ok)}});
      in_flight_[m].clear();
    }
    if (ms.up) continue;
    SpanMemberDownLocked(static_cast<int32_t>(m));
    const bool requeue_running = now - ms.down_since >= options_.requeue_running_after;
    for (auto& [id, j] : jobs_) {
      if (j.member != static_cast<int32_t>(m) || j.phase == Phase::kEnded || j.phase == Phase::kWaiting) continue;
      if (j.state == JobState::kRunning) {
        if (!requeue_running) continue;
        // From its last checkpoint: the run seen so far, in job time, less
        // what the checkpoints keep.
        const TimeUs total = j.remaining >= 0 ? j.remaining : j.spec.duration;
        const TimeUs ran = SecondsToUs(j.run_seen_s * options_.member_speedup);
        TimeUs kept = 0;
        if (j.spec.checkpoint_interval > 0) kept = ran / j.spec.checkpoint_interval * j.spec.checkpoint_interval;
        if (total >= 0) j.remaining = std::max<TimeUs>(0, total - kept);
        // The checkpoint is data in the region it was written in: it moves with the job.
        if (kept > 0)
          j.ckpt = {fed_.members[m].region,
                    static_cast<MiB>(std::llround(fed_.checkpoint_gib_per_gpu * 1024.0 *
                                                  static_cast<double>(federation::JobGpus(j.spec))))};
        ++counters_.requeued_running;
        ++j.requeues;
        log_.Warn("job_requeued", {{"job", j.id}, {"member", fed_.members[m].name},
                                   {"ran_s", UsToSeconds(ran)}, {"kept_s", UsToSeconds(kept)},
                                   {"lost_s", UsToSeconds(ran - kept)}});
        Append({store::RecordKind::kJobRequeued, j.id, clock_.Now(), fed_.members[m].name,
                server::EncodeEnd(JobState::kPending, "member " + fed_.members[m].name + " down")},
               false);
        MoveAwayLocked(j, "member " + fed_.members[m].name + " down; requeued from its last checkpoint");
      } else {
        MoveAwayLocked(j, "member " + fed_.members[m].name + " down; re-dispatched");
      }
    }
  }
}

void Dispatcher::MoveAwayLocked(Job& j, const std::string& why) {
  if (j.member >= 0) {
    if (j.ledger_attempt >= 0) federation::ReleaseAttempt(in_flight_[j.member], j.ledger_attempt);
    j.stale.push_back({j.member, j.attempt, j.member_job});
    stale_dirty_ = true;
  }
  j.ledger_attempt = -1;
  j.phase = Phase::kWaiting;
  j.state = JobState::kPending;
  j.member_job = -1;
  j.nodes.clear();
  j.started_at = -1;
  j.run_seen_s = 0;
  j.why = why;
  ++counters_.redispatches;
  waiting_.insert(j.id);
}

void Dispatcher::EndLocked(Job& j, JobState state, const std::string& reason) {
  if (j.ledger_attempt >= 0 && j.member >= 0) federation::ReleaseAttempt(in_flight_[j.member], j.ledger_attempt);
  ReleasePartLeasesLocked(j);
  j.ledger_attempt = -1;
  j.phase = Phase::kEnded;
  j.state = state;
  j.end_reason = reason;
  j.why = reason;
  j.finished_at = clock_.Now();
  waiting_.erase(j.id);
  Append({store::RecordKind::kJobFinished, j.id, j.finished_at, "", server::EncodeEnd(state, reason)}, false);
}

void Dispatcher::DispatchWaiting(TimeUs now) {
  std::unique_lock<std::mutex> lock(mu_);
  if (waiting_.empty()) return;
  // Nothing is decided before every member has sent its first digest or is
  // down (after a start, the first polls are still on their way).
  for (size_t m = 0; m < members_.size(); ++m)
    if (members_[m].up && views_[m].version == 0) return;
  const TimeUs wall = clock_.Now();
  for (size_t m = 0; m < members_.size(); ++m) counters_.leases_expired += federation::ExpireLeases(in_flight_[m], wall);
  std::vector<int64_t> ids;
  std::vector<federation::Request> reqs;
  for (int64_t id : waiting_) {
    Job& j = jobs_.at(id);
    if (j.cancel_requested) continue;
    federation::Request r;
    r.spec = &j.spec;
    r.dataset = j.dataset;
    r.key = j.id;
    r.excluded = j.excluded;
    r.checkpoint = j.ckpt;
    // Members that are down, or whose first digest has not come yet.
    for (size_t m = 0; m < members_.size(); ++m)
      if (!members_[m].up || views_[m].version == 0) r.excluded.push_back(static_cast<int32_t>(m));
    ids.push_back(id);
    reqs.push_back(std::move(r));
  }
  std::vector<int64_t> sent;
  const bool solved = federation::DispatchBatch(
      *dispatcher_, [&] { return ContextLocked(wall); }, reqs, options_.batch_min,
      [&](size_t i, const federation::Choice& c) {
        Job& j = jobs_.at(ids[i]);
        if (TrySpanLocked(j, reqs[i], c, wall, now)) {
          if (j.phase == Phase::kSending) sent.push_back(j.id);
          return;
        }
        if (c.member < 0) {
          j.why = "no member that is up can run it; waiting";
          return;
        }
        // Every candidate's estimate, for `berth status` (why it went there).
        j.candidates.clear();
        const federation::EstimateContext ctx = ContextLocked(wall);
        for (int32_t m : dispatcher_->Allowed(ctx, reqs[i]))
          j.candidates.push_back(
              {m, federation::EstimateOn(ctx, j.spec, j.dataset, m, federation::CardChoice::kFastest, j.ckpt), wall});
        // A double promise: the digest shows the GPUs free, but jobs sent
        // since and not yet in any digest hold them (0 by construction for
        // the global policies; the baselines make them).
        const federation::Digest& v = views_[c.member];
        const int64_t gpus = federation::JobGpus(j.spec);
        const int64_t seen_free = v.version == 0 ? fed_.members[c.member].cluster->total_gpus() : v.free_gpus;
        int64_t held = 0;
        for (const auto& f : in_flight_[c.member]) held += f.gpus;
        const bool global = policy_ == federation::Policy::kGlobal || policy_ == federation::Policy::kGlobalCost;
        if ((!global || c.promise) && gpus > 0 && seen_free >= gpus && seen_free - held < gpus)
          ++counters_.double_promises;
        // A checkpoint from another region moves over the links first (FIFO).
        const federation::DataMove move = federation::PlanCheckpoint(ctx, j.ckpt, c.member);
        j.send_after = 0;
        if (move.from_region >= 0) {
          const int32_t to = fed_.members[c.member].region;
          link_busy_[move.from_region][to] = move.ready;
          j.send_after = move.ready;
          j.ckpt.region = to;
          ++counters_.checkpoint_moves;
          counters_.checkpoint_bytes += static_cast<double>(move.mib) * 1024.0 * 1024.0;
          counters_.checkpoint_egress_usd += move.egress_usd;
          log_.Info("checkpoint_moved", {{"job", j.id}, {"from", fed_.regions[move.from_region]},
                                         {"to", fed_.regions[to]}, {"mib", move.mib},
                                         {"transfer_s", UsToSeconds(move.ready - wall)},
                                         {"egress_usd", move.egress_usd}});
        }
        j.member = c.member;
        ++j.attempt;
        j.member_job = -1;
        j.promise = c.promise;
        j.phase = Phase::kSending;
        j.sent_at = now;
        j.ledger_attempt = next_ledger_attempt_++;
        in_flight_[c.member].push_back(
            federation::SentEntry(j.spec, j.ledger_attempt, c.promise, c.estimate.type, federation::kNoExpiry / 2,
                                  fed_.lease_ttl));
        if (c.promise) ++counters_.promises;
        ++counters_.dispatches;
        j.why = (j.send_after > wall ? "moving its checkpoint to " + fed_.regions[fed_.members[c.member].region] +
                                           ", then sending to "
                                     : "sending to ") +
                fed_.members[c.member].name;
        sent.push_back(j.id);
      });
  if (solved) ++counters_.batches;
  for (int64_t id : sent) waiting_.erase(id);
  // The assignments are durable before any is forwarded: after a restart the
  // dispatcher sends them again with the same keys, never elsewhere too.
  std::vector<store::Record> recs;
  for (int64_t id : sent) {
    const Job& j = jobs_.at(id);
    if (!j.parts.empty()) {
      recs.push_back(SpanRecord(j, "sent"));
      continue;
    }
    const json body = AssignedBody(j, "sent");
    recs.push_back({store::RecordKind::kJobAssigned, id, wall, fed_.members[j.member].name, body.dump()});
  }
  lock.unlock();
  if (recs.empty()) return;
  auto done = std::make_shared<std::promise<Status>>();
  std::future<Status> f = done->get_future();
  store_.Append(fence_, std::move(recs), [done](const Status& s, int64_t) { done->set_value(s); });
  // Not durable: none of them may be forwarded (SendAssigned checks the role).
  if (const Status s = f.get(); !s.ok()) OnWriteFailed("job_assigned", s);
}

std::string Dispatcher::ForwardBody(const Job& j) const {
  json b = server::JobToJson(j.spec);
  if (j.remaining >= 0) b["duration_s"] = UsToSeconds(j.remaining);
  b["idempotency_key"] = "fed-" + std::to_string(j.id) + "-" + std::to_string(j.attempt);
  return b.dump();
}


// Each member's submissions go out over its pool of connections at once (a
// member answers a submission once it is durable: one at a time would wait out
// every commit in turn); none once the term is lost. replies[i] and
// answered[i] (steady time) belong to posts[i].
void Dispatcher::PostJobs(const std::vector<std::pair<int32_t, const std::string*>>& posts,
                          std::vector<MemberReply>& replies, std::vector<TimeUs>& answered) {
  replies.assign(posts.size(), MemberReply{});
  answered.assign(posts.size(), 0);
  std::vector<std::vector<size_t>> of(members_.size());
  for (size_t i = 0; i < posts.size(); ++i) of[posts[i].first].push_back(i);
  std::vector<std::thread> senders;
  for (size_t m = 0; m < members_.size(); ++m) {
    const size_t conns = std::min(of[m].size(), members_[m].pool.size());
    for (size_t k = 0; k < conns; ++k)
      senders.emplace_back([&, m, k, conns] {
        for (size_t x = k; x < of[m].size() && leading(); x += conns) {
          const size_t i = of[m][x];
          replies[i] = members_[m].pool[k]->Call("POST", "/v1/jobs", *posts[i].second);
          answered[i] = SteadyNow();
        }
      });
  }
  for (auto& t : senders) t.join();
}

void Dispatcher::SendAssigned(TimeUs now) {
  struct Send {
    int64_t id;
    int32_t member, attempt;
    std::string body;
  };
  std::vector<Send> todo;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, j] : jobs_)
      if (j.phase == Phase::kSending && j.parts.empty() && ResponsiveLocked(j.member, now) && !j.cancel_requested &&
          clock_.Now() >= j.send_after)  // its checkpoint is there
        todo.push_back({id, j.member, j.attempt, ForwardBody(j)});
  }
  // The answers are taken in order.
  std::vector<std::pair<int32_t, const std::string*>> posts;
  for (const Send& t : todo) posts.emplace_back(t.member, &t.body);
  std::vector<MemberReply> replies;
  std::vector<TimeUs> answered;
  PostJobs(posts, replies, answered);
  for (size_t i = 0; i < todo.size(); ++i) {
    const Send& s = todo[i];
    const MemberReply& r = replies[i];
    const TimeUs after = answered[i];
    std::unique_lock<std::mutex> lock(mu_);
    Job& j = jobs_.at(s.id);
    if (j.phase != Phase::kSending || j.member != s.member || j.attempt != s.attempt) continue;
    MemberState& ms = members_[s.member];
    const std::string name = fed_.members[s.member].name;
    if ((r.status == 200 || r.status == 201) && r.body.is_object() && r.body.contains("id") &&
        r.body["id"].is_number_integer()) {
      ms.last_ok = after;
      j.member_job = r.body["id"].get<int64_t>();
      j.phase = Phase::kAtMember;
      j.dispatched_at = clock_.Now();
      j.why = "queued at " + name + " (job " + std::to_string(j.member_job) + ")";
      // The ledger entry now counts from its arrival: a digest taken after
      // it reflects the job.
      for (auto& f : in_flight_[s.member])
        if (f.attempt == j.ledger_attempt) {
          f.arrives = clock_.Now();
          if (f.expires != federation::kNoExpiry) f.expires = f.arrives + fed_.lease_ttl;
        }
      Job copy = j;
      lock.unlock();
      AppendAssigned(copy, "accepted", false);
      log_.Info("job_dispatched", {{"job", s.id}, {"member", name}, {"member_job", copy.member_job},
                                   {"attempt", copy.attempt}, {"promise", copy.promise},
                                   {"latency_ms", UsToSeconds(after - copy.sent_at) * 1e3}});
      continue;
    }
    if (r.status == 422 || r.status == 409) {
      // Refused: it can never run there (or the key clashes): elsewhere.
      ms.last_ok = after;
      ++counters_.refusals;
      j.excluded.push_back(s.member);
      if (j.ledger_attempt >= 0) federation::ReleaseAttempt(in_flight_[s.member], j.ledger_attempt);
      j.ledger_attempt = -1;
      Job copy = j;
      j.phase = Phase::kWaiting;
      j.why = name + " refused it: " + r.error;
      ++counters_.redispatches;
      waiting_.insert(j.id);
      lock.unlock();
      AppendAssigned(copy, "refused", false);
      log_.Warn("job_refused", {{"job", s.id}, {"member", name}, {"status", r.status}, {"error", r.error}});
      continue;
    }
    // Not reached, or busy: sent again next turn with the same key.
    ++counters_.forward_retries;
    ms.last_error = r.reached() ? "HTTP " + std::to_string(r.status) + ": " + r.error : r.error;
    j.why = "sending to " + name + ": " + ms.last_error;
  }
}

void Dispatcher::PollJobs(TimeUs now) {
  // One listing per member (GET /v1/jobs, paged from the oldest job
  // followed there), not a call per job.
  for (size_t m = 0; m < members_.size(); ++m) {
    int64_t lo = -1, hi = -1;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!ResponsiveLocked(m, now) || now - members_[m].last_job_poll < options_.poll_interval) continue;
      for (const auto& [id, j] : jobs_)
        if (j.phase == Phase::kAtMember && j.member == static_cast<int32_t>(m)) {
          lo = lo < 0 ? j.member_job : std::min(lo, j.member_job);
          hi = std::max(hi, j.member_job);
        }
      SpanRangeLocked(static_cast<int32_t>(m), lo, hi);
      if (lo < 0) continue;
      members_[m].last_job_poll = now;
    }
    std::unordered_map<int64_t, json> docs;
    bool complete = false;
    int64_t after = lo - 1;
    for (int page = 0; page < 100; ++page) {
      MemberReply r = members_[m].link->Call("GET", "/v1/jobs?limit=10000&after=" + std::to_string(after));
      if (r.status != 200 || !r.body.is_object() || !r.body.contains("jobs") || !r.body["jobs"].is_array()) {
        std::lock_guard<std::mutex> lock(mu_);
        members_[m].last_error = r.reached() ? "HTTP " + std::to_string(r.status) + ": " + r.error : r.error;
        break;
      }
      for (auto& d : r.body["jobs"])
        if (d.is_object() && d.contains("id") && d["id"].is_number_integer()) docs[d["id"].get<int64_t>()] = d;
      if (!r.body.contains("next_after") || !r.body["next_after"].is_number_integer()) {
        complete = true;
        break;
      }
      after = r.body["next_after"].get<int64_t>();
      if (after >= hi) {
        complete = true;
        break;
      }
    }
    if (docs.empty() && !complete) continue;
    // Not a sign of life: a member serves its job list from a snapshot even
    // when its scheduling thread hangs; only digests (taken there) count.
    std::lock_guard<std::mutex> lock(mu_);
    const std::string name = fed_.members[m].name;
    for (auto& [id, j] : jobs_) {
      if (j.phase != Phase::kAtMember || j.member != static_cast<int32_t>(m)) continue;
      auto it = docs.find(j.member_job);
      if (it == docs.end()) {
        // The member lost it (its store was reset): elsewhere.
        if (complete)
          MoveAwayLocked(j, name + " no longer knows job " + std::to_string(j.member_job) + "; re-dispatched");
        continue;
      }
      ApplyMemberDoc(j, it->second);
    }
    ApplySpanDocsLocked(static_cast<int32_t>(m), docs, complete);
  }
}

void Dispatcher::ApplyMemberDoc(Job& j, const json& doc) {
  const std::string name = fed_.members[j.member].name;
  auto st = server::ParseJobState(doc.value("state", ""));
  if (!st) return;
  j.nodes.clear();
  if (doc.contains("nodes") && doc["nodes"].is_array())
    for (const auto& n : doc["nodes"])
      if (n.is_string()) j.nodes.push_back(name + "/" + n.get<std::string>());
  const std::string at = name + " (job " + std::to_string(j.member_job) + ")";
  const std::string why = doc.contains("why") && doc["why"].is_string() ? doc["why"].get<std::string>() : "";
  if (*st == JobState::kRunning) {
    if (j.state != JobState::kRunning) {
      j.started_at = clock_.Now();
      // Admitted: the lease has done its work. The GPUs stay in the ledger
      // until a digest taken after the job arrived shows them taken (the
      // last digest may still show them free).
      for (auto& f : in_flight_[j.member])
        if (f.attempt == j.ledger_attempt && f.expires != federation::kNoExpiry) {
          f.expires = federation::kNoExpiry;
          ++counters_.leases_released;
        }
    }
    j.state = JobState::kRunning;
    if (doc.contains("started_at") && doc["started_at"].is_number())
      j.run_seen_s = std::max(0.0, UsToSeconds(clock_.Now()) - doc["started_at"].get<double>());
    j.why = "running at " + at;
  } else if (job::IsTerminal(*st)) {
    EndLocked(j, *st, at + ": " + (why.empty() ? std::string(job::JobStateName(*st)) : why));
  } else {
    j.state = JobState::kPending;
    j.why = "queued at " + at + (why.empty() ? "" : ": " + why);
  }
}

}  // namespace berth::fedserve
