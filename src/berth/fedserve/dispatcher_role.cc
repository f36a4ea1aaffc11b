// The dispatcher's role over a replicated store (dispatcher.h, "Standby"):
// the 503 a standby or a deposed dispatcher answers, naming the leader,
// stepping down when the term is lost, cancelling copies moved away from a
// member (Reconcile), which only a dispatcher a write proves to lead does,
// and the cancellations users ask for (DoCancels).
#include <algorithm>
#include <future>

#include "berth/fedserve/dispatcher.h"
#include "berth/store/leader.h"

namespace berth::fedserve {

using job::JobState;
using nlohmann::json;
using server::ApiResult;

const char* Dispatcher::RoleName(Role r) {
  switch (r) {
    case Role::kIdle: return "starting";
    case Role::kAcquiring: return "standby";
    case Role::kLoading: return "loading";
    case Role::kLeading: return "leading";
    case Role::kSteppedDown: return "stepped_down";
  }
  return "unknown";
}

void Dispatcher::StepDown(const std::string& reason) {
  const Role was = role_.exchange(Role::kSteppedDown);
  ready_ = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    wake_ = true;  // the loop notices at once
  }
  cv_.notify_all();
  if (was != Role::kSteppedDown)
    log_.Error("stepped_down", {{"reason", reason}, {"term", fence_.term}, {"was", RoleName(was)}});
}

void Dispatcher::OnWriteFailed(const std::string& what, const Status& s) {
  log_.Error("store_write_failed", {{"record", what}, {"error", s.message()}});
  StepDown("a " + what + " write failed: " + s.message());
}

bool Dispatcher::WriteUnderTerm(std::vector<store::Record> recs, const std::string& what) {
  if (!leading()) return false;
  auto done = std::make_shared<std::promise<Status>>();
  std::future<Status> f = done->get_future();
  store_.Append(fence_, std::move(recs), [done](const Status& s, int64_t) { done->set_value(s); });
  if (const Status s = f.get(); !s.ok()) {
    OnWriteFailed(what, s);
    return false;
  }
  return leading();
}

ApiResult Dispatcher::NotReady() const {
  json body = {{"status", "not ready"}};
  const store::LeaderAnnouncement leader = store::ReadLeader(store_);
  const std::string& where = leader.address;
  const Role role = role_.load();
  body["role"] = RoleName(role);
  switch (role) {
    case Role::kIdle:
      body["error"] = "the dispatcher is not started";
      break;
    case Role::kAcquiring:
      body["error"] = where.empty() ? "standby dispatcher: not the leader, and no leader is known yet; retry"
                                    : "standby dispatcher: not the leader; the leader is " + where;
      break;
    case Role::kLoading:
    case Role::kLeading:  // leading but not yet ready: only between the two in Start()
      body["role"] = "loading";
      body["error"] = "elected, loading the jobs from the store; retry";
      break;
    case Role::kSteppedDown:
      body["error"] = "stepped down: this dispatcher no longer holds the store's term" +
                      (where.empty() ? std::string() : "; the leader is " + where);
      break;
  }
  if (!leader.raw.empty() && body["role"] != "loading") body["leader"] = leader.who;
  return {503, body};
}

void Dispatcher::Reconcile(int32_t member) {
  // Every copy moved away from this member is cancelled there: it must not
  // run twice.
  struct Dup {
    int64_t id;
    Copy copy;
    std::string body;
  };
  std::vector<Dup> todo;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, j] : jobs_) {
      for (const Copy& c : j.stale) {
        if (c.member != member) continue;
        if (c.part >= 0) {  // a part of a split gang
          todo.push_back({id, c, PartBody(j, c)});
          continue;
        }
        Job probe = j;
        probe.attempt = c.attempt;
        todo.push_back({id, c, ForwardBody(probe)});
      }
    }
  }
  if (todo.empty()) return;
  // A deposed dispatcher that has not heard yet (stopped, then resumed) may
  // have moved these copies in memory only: a write under its term first
  // proves it still leads (etcd refuses it otherwise), and records the withdrawal.
  std::vector<store::Record> recs;
  const std::string name = fed_.members[member].name;
  for (const Dup& d : todo)
    recs.push_back({store::RecordKind::kJobRequeued, d.id, clock_.Now(), name,
                    json({{"withdraw", {{"member", name}, {"attempt", d.copy.attempt}}}}).dump()});
  if (!WriteUnderTerm(std::move(recs), "job_requeued")) return;
  for (const Dup& d : todo) {
    MemberLink& link = *members_[member].link;
    int64_t mj = d.copy.member_job;
    if (mj < 0) {
      // The forward's answer was never seen: the same submission again
      // names the job if the member has it (idempotent), then it goes.
      MemberReply r = link.Call("POST", "/v1/jobs", d.body);
      if ((r.status == 200 || r.status == 201) && r.body.is_object() && r.body.contains("id") &&
          r.body["id"].is_number_integer())
        mj = r.body["id"].get<int64_t>();
      else if (!r.reached()) {
        std::lock_guard<std::mutex> lock(mu_);
        stale_dirty_ = true;  // gone again: next time it answers
        return;
      }
    }
    bool done = mj < 0;
    if (mj >= 0) {
      MemberReply r = link.Call("DELETE", "/v1/jobs/" + std::to_string(mj));
      if (!r.reached()) {
        std::lock_guard<std::mutex> lock(mu_);
        stale_dirty_ = true;
        return;
      }
      done = true;
      if (r.status == 200) {
        std::lock_guard<std::mutex> lock(mu_);
        ++counters_.duplicates_cancelled;
        log_.Info("duplicate_cancelled", {{"job", d.id}, {"member", fed_.members[member].name}, {"member_job", mj}});
      }
    }
    if (done) {
      std::lock_guard<std::mutex> lock(mu_);
      auto& stale = jobs_.at(d.id).stale;
      stale.erase(std::remove_if(stale.begin(), stale.end(),
                                 [&](const Copy& c) { return c.member == member && c.attempt == d.copy.attempt; }),
                  stale.end());
    }
  }
}

void Dispatcher::DoCancels() {
  struct Cancel {
    int64_t id;
    int32_t member, attempt;
    int64_t member_job;
  };
  std::vector<Cancel> todo;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, j] : jobs_)
      if (j.cancel_requested && j.phase != Phase::kEnded) {
        if (!j.parts.empty()) {
          CancelSpanLocked(j);
        } else if (j.phase == Phase::kWaiting || j.phase == Phase::kSending) {
          // Not yet at a member (or its answer unseen: kept to cancel there).
          if (j.phase == Phase::kSending) {
            j.stale.push_back({j.member, j.attempt, -1});
            stale_dirty_ = true;
          }
          EndLocked(j, JobState::kCancelled, "cancelled");
        } else if (ResponsiveLocked(j.member, SteadyNow())) {
          todo.push_back({id, j.member, j.attempt, j.member_job});
        }
      }
  }
  for (const Cancel& c : todo) {
    MemberReply r = members_[c.member].link->Call("DELETE", "/v1/jobs/" + std::to_string(c.member_job));
    std::lock_guard<std::mutex> lock(mu_);
    Job& j = jobs_.at(c.id);
    if (j.phase == Phase::kEnded || j.attempt != c.attempt) continue;
    if (r.status == 200 || r.status == 404 || r.status == 409)
      EndLocked(j, JobState::kCancelled, "cancelled");
  }
}

}  // namespace berth::fedserve
