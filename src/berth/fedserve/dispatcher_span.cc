// Gangs across regions in the live dispatcher (dispatcher.h, "Gangs across
// regions"; ADR 0039 for the plan, ADR 0040 for how the live service starts
// the parts): the decision (the simulator's planner, federation::PlanSpan),
// the leases and their records, submitting the parts, following them, and
// releasing or breaking the gang.
//
// A split attempt's life: kSending (leases held in the ledger, durable; the
// parts are submitted once every part's member is responsive and holds the
// dispatcher's fence lease; each acknowledgement is written) -> kAtMember
// (every part acknowledged) -> running (every part runs: the gang's start)
// -> ended (every part succeeded). A refusal, or parts not all running by
// the lease's deadline, release the gang (ReleaseSpanLocked); a failed part
// or a part's member marked down break it (BreakSpanLocked: from its
// checkpoint when it ran). Either way every part that may be at a member is
// a copy to cancel there (Reconcile) and the job is dispatched again once.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "berth/federation/ledger.h"
#include "berth/federation/span.h"
#include "berth/fedserve/dispatcher.h"
#include "berth/server/records.h"

namespace berth::fedserve {

using job::JobState;
using nlohmann::json;

namespace {
// Gangs stopped by a failed part before the job fails for good.
constexpr int32_t kMaxPartFailures = 3;

int32_t MemberByName(const federation::Federation& fed, const std::string& name) {
  for (size_t k = 0; k < fed.members.size(); ++k)
    if (fed.members[k].name == name) return static_cast<int32_t>(k);
  return -1;
}
}  // namespace

bool Dispatcher::TrySpanLocked(Job& j, const federation::Request& r, const federation::Choice& c, TimeUs wall,
                               TimeUs now) {
  // As the simulator (FedSim::TrySpan): only `global` weighs a split against a member holding it whole.
  if (!federation::Splittable(j.spec) || policy_ == federation::Policy::kMultiKueue) return false;
  if (c.member >= 0 && policy_ != federation::Policy::kGlobal) return false;
  const federation::EstimateContext ctx = ContextLocked(wall);
  const federation::SpanPlan p = federation::PlanSpan(ctx, r);
  if (p.parts.empty()) {
    if (c.member >= 0 || !p.could_ever) return false;
    j.why = "no member holds its " + std::to_string(j.spec.groups.front().count) +
            " tasks whole and no split across regions fits now; waiting";
    return true;
  }
  if (c.member >= 0 && p.finish >= c.estimate.finish) return false;
  // The split: one ledger hold (a promise under a lease) per part.
  j.parts.clear();
  const SpanInfo before = j.span;
  j.span = SpanInfo{};
  j.span.ran = before.ran;            // counted once per job
  j.span.failures = before.failures;  // over every split run
  j.span.at = wall;
  j.span.run = p.run;
  j.span.finish = p.finish;
  j.span.cost_usd = p.cost_usd;
  j.span.whole_member = c.member;
  j.span.whole_finish = c.member >= 0 ? c.estimate.finish : -1;
  j.span.deadline = wall + fed_.lease_ttl;
  j.candidates.clear();
  for (int32_t m : dispatcher_->Allowed(ctx, r))
    j.candidates.push_back(
        {m, federation::EstimateOn(ctx, j.spec, j.dataset, m, federation::CardChoice::kFastest, j.ckpt), wall});
  int32_t offset = 0;
  const int32_t want = j.spec.groups.front().count;
  j.send_after = 0;
  for (const federation::SpanPart& sp : p.parts) {
    Part part;
    part.member = sp.member;
    part.tasks = sp.tasks;
    part.rank_offset = offset;
    part.type = sp.estimate.type;
    part.estimate = sp.estimate;
    offset += sp.tasks;
    // Each part takes its tasks' share of a checkpoint over the links (as FedSim::Send).
    federation::Checkpoint share = j.ckpt;
    share.mib = j.ckpt.mib * sp.tasks / want;
    const federation::DataMove move = federation::PlanCheckpoint(ctx, share, sp.member);
    if (move.from_region >= 0) {
      link_busy_[move.from_region][fed_.members[sp.member].region] = move.ready;
      j.send_after = std::max(j.send_after, move.ready);
      ++counters_.checkpoint_moves;
      counters_.checkpoint_bytes += static_cast<double>(move.mib) * 1024.0 * 1024.0;
      counters_.checkpoint_egress_usd += move.egress_usd;
    }
    part.ledger_attempt = next_ledger_attempt_++;
    in_flight_[sp.member].push_back(federation::SentEntry(federation::PartSpec(j.spec, sp.tasks), part.ledger_attempt,
                                                          true, sp.estimate.type, federation::kNoExpiry / 2,
                                                          fed_.lease_ttl));
    ++counters_.promises;
    j.parts.push_back(std::move(part));
  }
  if (j.send_after > wall) j.span.deadline = j.send_after + fed_.lease_ttl;
  j.member = -1;
  j.member_job = -1;
  ++j.attempt;
  j.promise = true;
  j.phase = Phase::kSending;
  j.state = JobState::kPending;
  j.sent_at = now;
  j.ledger_attempt = -1;
  ++counters_.dispatches;
  std::string where;
  for (const Part& part : j.parts) where += (where.empty() ? "" : " + ") + fed_.members[part.member].name;
  j.why = "split across regions (" + where + "): leases taken, submitting every part";
  return true;
}

json Dispatcher::SpanAssignedBody(const Job& j, const std::string& outcome) const {
  json body = {{"member", fed_.members[j.parts.front().member].name},  // the largest part's
               {"attempt", j.attempt},
               {"member_job", -1},
               {"outcome", outcome}};
  json parts = json::array();
  for (const Part& p : j.parts)
    parts.push_back({{"member", fed_.members[p.member].name},
                     {"tasks", p.tasks},
                     {"rank_offset", p.rank_offset},
                     {"type", p.type},
                     {"sent", p.sent || p.member_job >= 0},
                     {"member_job", p.member_job}});
  body["parts"] = parts;
  body["span"] = {{"planned_unix_s", UsToSeconds(j.span.at)},
                  {"run_s", UsToSeconds(j.span.run)},
                  {"finish_unix_s", UsToSeconds(j.span.finish)},
                  {"cost_usd", j.span.cost_usd},
                  {"whole_member", j.span.whole_member >= 0 ? json(fed_.members[j.span.whole_member].name) : json()},
                  {"whole_finish_unix_s", j.span.whole_finish >= 0 ? json(UsToSeconds(j.span.whole_finish)) : json()},
                  {"deadline_unix_s", UsToSeconds(j.span.deadline)},
                  {"failures", j.span.failures},
                  {"ran", j.span.ran}};
  if (j.remaining >= 0) body["remaining_s"] = UsToSeconds(j.remaining);
  if (j.ckpt.region >= 0)
    body["checkpoint"] = {{"region", fed_.regions[j.ckpt.region]},
                          {"mib", j.ckpt.mib},
                          {"ready_unix_s", UsToSeconds(j.send_after)}};
  return body;
}

store::Record Dispatcher::SpanRecord(const Job& j, const std::string& outcome) const {
  return {store::RecordKind::kJobAssigned, j.id, clock_.Now(), fed_.members[j.parts.front().member].name,
          SpanAssignedBody(j, outcome).dump()};
}

void Dispatcher::SupersedeLocked(Job& j, int32_t attempt) {
  if (attempt == j.attempt || j.phase == Phase::kWaiting) return;
  if (j.parts.empty()) {
    if (j.member >= 0) j.stale.push_back({j.member, j.attempt, j.member_job});
    return;
  }
  const int32_t n = static_cast<int32_t>(j.parts.size());
  for (int32_t k = 0; k < n; ++k) {
    const Part& p = j.parts[k];
    if (p.sent || p.member_job >= 0) j.stale.push_back({p.member, j.attempt, p.member_job, k, n, p.tasks, p.rank_offset});
  }
  j.parts.clear();
}

Status Dispatcher::RecoverSpan(Job& j, const json& b, const std::string& where) {
  const int32_t attempt = b.value("attempt", 0);
  SupersedeLocked(j, attempt);
  const json& parts = b["parts"];
  if (!parts.is_array() || parts.size() < 2) return Internal(where + ": a split assignment without its parts");
  std::vector<Part> got;
  for (const json& pj : parts) {
    if (!pj.is_object() || !pj.contains("member") || !pj["member"].is_string())
      return Internal(where + ": a part without a member");
    Part p;
    p.member = MemberByName(fed_, pj["member"].get<std::string>());
    if (p.member < 0)
      return FailedPrecondition(where + ": job " + std::to_string(j.id) + " has a part at member '" +
                                pj["member"].get<std::string>() + "', which the federation file no longer has");
    p.tasks = pj.value("tasks", 0);
    p.rank_offset = pj.value("rank_offset", 0);
    p.type = pj.value("type", -1);
    p.member_job = pj.value("member_job", int64_t{-1});
    p.sent = pj.value("sent", true) || p.member_job >= 0;
    got.push_back(std::move(p));
  }
  BERTH_RETURN_IF_ERROR(RecoverProgress(j, b, where));
  const json s = b.value("span", json::object());
  j.span = SpanInfo{};
  j.span.at = SecondsToUs(s.value("planned_unix_s", 0.0));
  j.span.run = SecondsToUs(s.value("run_s", 0.0));
  j.span.finish = SecondsToUs(s.value("finish_unix_s", 0.0));
  j.span.cost_usd = s.value("cost_usd", 0.0);
  if (s.contains("whole_member") && s["whole_member"].is_string())
    j.span.whole_member = MemberByName(fed_, s["whole_member"].get<std::string>());
  if (s.contains("whole_finish_unix_s") && s["whole_finish_unix_s"].is_number())
    j.span.whole_finish = SecondsToUs(s["whole_finish_unix_s"].get<double>());
  j.span.deadline = SecondsToUs(s.value("deadline_unix_s", 0.0));
  j.span.failures = s.value("failures", 0);
  j.span.ran = s.value("ran", false);
  j.member = -1;
  j.member_job = -1;
  j.attempt = attempt;
  const std::string outcome = b.value("outcome", "sent");
  if (outcome == "released") {
    // Released before the restart: every part is a copy to cancel, the job waits.
    const int32_t n = static_cast<int32_t>(got.size());
    for (int32_t k = 0; k < n; ++k)
      if (got[k].sent) j.stale.push_back({got[k].member, attempt, got[k].member_job, k, n, got[k].tasks, got[k].rank_offset});
    j.parts.clear();
    if (b.contains("refused_by") && b["refused_by"].is_string()) {
      const int32_t m = MemberByName(fed_, b["refused_by"].get<std::string>());
      if (m >= 0) j.excluded.push_back(m);
    }
    j.phase = Phase::kWaiting;
    return Status::Ok();
  }
  j.parts = std::move(got);
  for (Part& p : j.parts) p.sent = true;  // a submission may have gone out before the restart
  const bool all = std::all_of(j.parts.begin(), j.parts.end(), [](const Part& p) { return p.member_job >= 0; });
  j.phase = all ? Phase::kAtMember : Phase::kSending;
  // A gang whose parts had not all started keeps its deadline; one that ran
  // is followed at its members (a part that ended meanwhile breaks it then).
  if (j.span.ran) j.span.deadline = clock_.Now() + fed_.lease_ttl;
  return Status::Ok();
}

std::string Dispatcher::PartBody(const Job& j, const Copy& c) const {
  job::JobSpec spec = federation::PartSpec(j.spec, c.tasks);
  spec.name = j.spec.name + ".part-" + std::to_string(c.part);
  spec.span_part = job::JobSpec::SpanPart{c.part, c.parts, j.spec.groups.front().count, c.rank_offset};
  json b = server::JobToJson(spec);
  if (j.remaining >= 0) b["duration_s"] = UsToSeconds(j.remaining);
  b["idempotency_key"] = "fed-" + std::to_string(j.id) + "-" + std::to_string(c.attempt) + "-part-" +
                         std::to_string(c.part);
  return b.dump();
}

void Dispatcher::ReleasePartLeasesLocked(Job& j) {
  for (Part& p : j.parts) {
    if (p.ledger_attempt >= 0) federation::ReleaseAttempt(in_flight_[p.member], p.ledger_attempt);
    p.ledger_attempt = -1;
  }
}

void Dispatcher::ReleaseSpanLocked(Job& j, const std::string& why) {
  ReleasePartLeasesLocked(j);
  // Every part that may be at its member is a copy to cancel there.
  const int32_t n = static_cast<int32_t>(j.parts.size());
  for (int32_t k = 0; k < n; ++k) {
    const Part& p = j.parts[k];
    if (p.sent || p.member_job >= 0) j.stale.push_back({p.member, j.attempt, p.member_job, k, n, p.tasks, p.rank_offset});
  }
  stale_dirty_ = true;
  ++counters_.span_releases;
  j.phase = Phase::kWaiting;
  j.state = JobState::kPending;
  j.nodes.clear();
  j.started_at = -1;
  j.span.running_since = -1;
  j.why = why;
  ++counters_.redispatches;
  waiting_.insert(j.id);
}

void Dispatcher::BreakSpanLocked(Job& j, const std::string& why, bool part_failed) {
  ++counters_.span_breaks;
  if (j.span.running_since >= 0) {
    // From its last checkpoint (as a whole job requeued off a dead member),
    // written in the largest part's region.
    const TimeUs total = j.remaining >= 0 ? j.remaining : j.spec.duration;
    const TimeUs ran = SecondsToUs(UsToSeconds(clock_.Now() - j.span.running_since) * options_.member_speedup);
    TimeUs kept = 0;
    if (j.spec.checkpoint_interval > 0) kept = ran / j.spec.checkpoint_interval * j.spec.checkpoint_interval;
    if (total >= 0) j.remaining = std::max<TimeUs>(0, total - kept);
    if (kept > 0)
      j.ckpt = {fed_.members[j.parts.front().member].region,
                static_cast<MiB>(std::llround(fed_.checkpoint_gib_per_gpu * 1024.0 *
                                              static_cast<double>(federation::JobGpus(j.spec))))};
    ++counters_.requeued_running;
    ++j.requeues;
    log_.Warn("span_broken", {{"job", j.id}, {"why", why}, {"ran_s", UsToSeconds(ran)}, {"kept_s", UsToSeconds(kept)}});
  }
  if (part_failed) ++j.span.failures;
  const bool give_up = j.span.failures >= kMaxPartFailures;
  ReleaseSpanLocked(j, why + (j.span.running_since >= 0 || j.requeues > 0 ? "; re-dispatched from its checkpoint"
                                                                          : "; re-dispatched"));
  Append(SpanRecord(j, "released"), false);
  j.parts.clear();
  if (give_up) EndLocked(j, JobState::kFailed, why + " (" + std::to_string(kMaxPartFailures) + " split runs failed)");
}

void Dispatcher::SendSpans(TimeUs now) {
  struct Send {
    int64_t id;
    int32_t attempt;
    size_t part;
    int32_t member;
    std::string body;
  };
  std::vector<Send> todo;
  std::vector<store::Record> lapsed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const TimeUs wall = clock_.Now();
    for (auto& [id, j] : jobs_) {
      if (j.parts.empty() || j.phase == Phase::kEnded || j.phase == Phase::kWaiting || j.cancel_requested) continue;
      // Not every part running by the deadline: every lease lapses.
      if (j.span.running_since < 0 && wall > j.span.deadline) {
        ++counters_.leases_expired;
        log_.Warn("span_lapsed", {{"job", id}, {"attempt", j.attempt}});
        char buf[96];
        std::snprintf(buf, sizeof buf, "not every part ran within the lease (%g s); released and re-dispatched",
                      UsToSeconds(fed_.lease_ttl));
        ReleaseSpanLocked(j, buf);
        lapsed.push_back(SpanRecord(j, "released"));
        j.parts.clear();
        continue;
      }
      if (j.phase != Phase::kSending || wall < j.send_after) continue;
      // Every lease granted: each part's member answers and holds this dispatcher's fence lease.
      bool granted = true;
      for (const Part& p : j.parts)
        granted = granted && ResponsiveLocked(p.member, now) && members_[p.member].lease_until > wall;
      if (!granted) {
        j.why = "split across regions: waiting for every part's member to hold a lease";
        continue;
      }
      const int32_t n = static_cast<int32_t>(j.parts.size());
      for (int32_t k = 0; k < n; ++k) {
        Part& p = j.parts[k];
        if (p.member_job >= 0) continue;
        p.sent = true;
        todo.push_back({id, j.attempt, static_cast<size_t>(k), p.member,
                        PartBody(j, {p.member, j.attempt, -1, k, n, p.tasks, p.rank_offset})});
      }
    }
  }
  if (!lapsed.empty() && !WriteUnderTerm(std::move(lapsed), "job_assigned")) return;
  if (todo.empty()) return;
  // Every part at once, over each member's forward connections.
  std::vector<std::pair<int32_t, const std::string*>> posts;
  for (const Send& t : todo) posts.emplace_back(t.member, &t.body);
  std::vector<MemberReply> replies;
  std::vector<TimeUs> answered;
  PostJobs(posts, replies, answered);
  std::vector<store::Record> recs;
  std::set<int64_t> changed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < todo.size(); ++i) {
      const Send& s = todo[i];
      const MemberReply& r = replies[i];
      Job& j = jobs_.at(s.id);
      if (j.attempt != s.attempt || j.parts.empty() || j.phase != Phase::kSending) continue;
      Part& p = j.parts[s.part];
      MemberState& ms = members_[s.member];
      const std::string name = fed_.members[s.member].name;
      if ((r.status == 200 || r.status == 201) && r.body.is_object() && r.body.contains("id") &&
          r.body["id"].is_number_integer()) {
        ms.last_ok = answered[i];
        p.member_job = r.body["id"].get<int64_t>();
        changed.insert(s.id);
        log_.Info("span_part_dispatched", {{"job", s.id}, {"part", s.part}, {"member", name},
                                           {"member_job", p.member_job}, {"tasks", p.tasks}});
        continue;
      }
      if (r.status == 422 || r.status == 409) {
        // The member refuses its part: every part goes, the job elsewhere.
        ms.last_ok = answered[i];
        ++counters_.refusals;
        j.excluded.push_back(s.member);
        log_.Warn("span_part_refused", {{"job", s.id}, {"part", s.part}, {"member", name}, {"error", r.error}});
        ReleaseSpanLocked(j, name + " refused part " + std::to_string(s.part) + ": " + r.error +
                                 "; every part released, re-dispatched");
        json body = SpanAssignedBody(j, "released");
        body["refused_by"] = name;
        recs.push_back({store::RecordKind::kJobAssigned, j.id, clock_.Now(), name, body.dump()});
        j.parts.clear();
        changed.erase(s.id);
        continue;
      }
      ++counters_.forward_retries;
      ms.last_error = r.reached() ? "HTTP " + std::to_string(r.status) + ": " + r.error : r.error;
      j.why = "split across regions: sending part " + std::to_string(s.part) + " to " + name + ": " + ms.last_error;
    }
    for (int64_t id : changed) {
      Job& j = jobs_.at(id);
      if (j.parts.empty() || j.phase != Phase::kSending) continue;
      const bool all = std::all_of(j.parts.begin(), j.parts.end(), [](const Part& p) { return p.member_job >= 0; });
      if (all) {
        j.phase = Phase::kAtMember;
        j.dispatched_at = clock_.Now();
        j.why = "split across regions: every part queued at its member, waiting for all to run";
        // The ledger entries count from now: a digest taken after this shows the parts.
        for (Part& p : j.parts)
          for (auto& f : in_flight_[p.member])
            if (f.attempt == p.ledger_attempt) {
              f.arrives = clock_.Now();
              if (f.expires != federation::kNoExpiry) f.expires = f.arrives + fed_.lease_ttl;
            }
      }
      recs.push_back(SpanRecord(j, all ? "accepted" : "sent"));
    }
  }
  if (!recs.empty()) WriteUnderTerm(std::move(recs), "job_assigned");
}

void Dispatcher::ApplyPartDocLocked(Job& j, size_t k, const json& doc) {
  Part& p = j.parts[k];
  const std::string name = fed_.members[p.member].name;
  auto st = server::ParseJobState(doc.value("state", ""));
  if (!st) return;
  p.nodes.clear();
  if (doc.contains("nodes") && doc["nodes"].is_array())
    for (const auto& n : doc["nodes"])
      if (n.is_string()) p.nodes.push_back(name + "/" + n.get<std::string>());
  if (job::IsTerminal(*st) && *st != JobState::kSucceeded) {
    const std::string why = doc.contains("why") && doc["why"].is_string() ? doc["why"].get<std::string>() : "";
    BreakSpanLocked(j, "part " + std::to_string(k) + " at " + name + " (job " + std::to_string(p.member_job) + ") " +
                           job::JobStateName(*st) + (why.empty() ? "" : ": " + why),
                    *st == JobState::kFailed);
    return;
  }
  p.state = *st == JobState::kAdmitted ? JobState::kPending : *st;
}

void Dispatcher::SpanRangeLocked(int32_t m, int64_t& lo, int64_t& hi) const {
  for (const auto& [id, j] : jobs_) {
    if (j.phase != Phase::kAtMember && j.phase != Phase::kSending) continue;
    for (const Part& p : j.parts)
      if (p.member == m && p.member_job >= 0) {
        lo = lo < 0 ? p.member_job : std::min(lo, p.member_job);
        hi = std::max(hi, p.member_job);
      }
  }
}

void Dispatcher::ApplySpanDocsLocked(int32_t m, const std::unordered_map<int64_t, json>& docs, bool complete) {
  const std::string name = fed_.members[m].name;
  for (auto& entry : jobs_) {
    Job& j = entry.second;
    if (j.parts.empty() || (j.phase != Phase::kAtMember && j.phase != Phase::kSending)) continue;
    for (size_t k = 0; k < j.parts.size() && !j.parts.empty(); ++k) {
      const Part& p = j.parts[k];
      if (p.member != m || p.member_job < 0) continue;
      auto it = docs.find(p.member_job);
      if (it == docs.end()) {
        if (complete)
          BreakSpanLocked(j, name + " no longer knows part " + std::to_string(k) + " (job " +
                                 std::to_string(p.member_job) + ")", false);
        continue;
      }
      ApplyPartDocLocked(j, k, it->second);
    }
    if (j.parts.empty() || j.phase == Phase::kEnded) continue;
    const auto every = [&](JobState s) {
      return std::all_of(j.parts.begin(), j.parts.end(), [&](const Part& p) { return p.state == s; });
    };
    if (every(JobState::kSucceeded)) {
      ReleasePartLeasesLocked(j);
      EndLocked(j, JobState::kSucceeded, "every part succeeded");
      continue;
    }
    const bool running = j.phase == Phase::kAtMember && std::all_of(j.parts.begin(), j.parts.end(), [](const Part& p) {
                           return p.state == JobState::kRunning || p.state == JobState::kSucceeded;
                         });
    if (running && j.span.running_since < 0) {
      // The gang's start: every part runs. The leases have done their work.
      j.span.running_since = clock_.Now();
      j.started_at = j.span.running_since;
      if (!j.span.ran) ++counters_.spanning_jobs;
      j.span.ran = true;
      counters_.spanning_parts += static_cast<int64_t>(j.parts.size());
      for (Part& p : j.parts)
        for (auto& f : in_flight_[p.member])
          if (f.attempt == p.ledger_attempt && f.expires != federation::kNoExpiry) {
            f.expires = federation::kNoExpiry;
            ++counters_.leases_released;
          }
      log_.Info("span_running", {{"job", j.id}, {"parts", j.parts.size()}, {"attempt", j.attempt}});
      Append(SpanRecord(j, "accepted"), false);  // `ran`: a restart keeps following it
    }
    if (j.span.running_since >= 0) {
      j.state = JobState::kRunning;
      j.why = "running split across regions in " + std::to_string(j.parts.size()) + " parts";
    }
    j.nodes.clear();
    for (const Part& p : j.parts) j.nodes.insert(j.nodes.end(), p.nodes.begin(), p.nodes.end());
  }
}

void Dispatcher::CancelSpanLocked(Job& j) {
  // Every part that may be at a member is cancelled there (Reconcile).
  const int32_t n = static_cast<int32_t>(j.parts.size());
  for (int32_t k = 0; k < n; ++k) {
    const Part& p = j.parts[k];
    if (p.sent || p.member_job >= 0) j.stale.push_back({p.member, j.attempt, p.member_job, k, n, p.tasks, p.rank_offset});
  }
  stale_dirty_ = true;
  EndLocked(j, JobState::kCancelled, "cancelled");
}

void Dispatcher::SpanMemberDownLocked(int32_t m) {
  for (auto& [id, j] : jobs_) {
    if (j.parts.empty() || j.phase == Phase::kEnded || j.phase == Phase::kWaiting) continue;
    for (const Part& p : j.parts)
      if (p.member == m) {
        // The whole gang stops at once: its other parts cannot run without this one.
        BreakSpanLocked(j, "member " + fed_.members[m].name + " of a part is down", false);
        break;
      }
  }
}

json Dispatcher::SpanJson(const Job& j) const {
  json parts = json::array();
  for (size_t k = 0; k < j.parts.size(); ++k) {
    const Part& p = j.parts[k];
    const cluster::Cluster& cl = *fed_.members[p.member].cluster;
    parts.push_back({{"part", k},
                     {"name", j.spec.name + ".part-" + std::to_string(k)},
                     {"member", fed_.members[p.member].name},
                     {"region", fed_.regions[fed_.members[p.member].region]},
                     {"tasks", p.tasks},
                     {"ranks", {p.rank_offset, p.rank_offset + p.tasks - 1}},
                     {"gpu_type", p.type >= 0 && p.type < static_cast<int32_t>(cl.gpu_types().size())
                                      ? json(cl.gpu_types()[p.type].name)
                                      : json(nullptr)},
                     {"member_job", p.member_job >= 0 ? json(p.member_job) : json(nullptr)},
                     {"state", job::JobStateName(p.state)},
                     {"nodes", p.nodes}});
  }
  std::string reason;
  if (j.span.whole_member < 0) {
    reason = "no member holds its " + std::to_string(j.spec.groups.front().count) + " tasks whole now";
  } else {
    char buf[160];
    std::snprintf(buf, sizeof buf, "the split finishes %.0f s sooner than whole on %s", 
                  UsToSeconds(j.span.whole_finish - j.span.finish), fed_.members[j.span.whole_member].name.c_str());
    reason = buf;
  }
  json span = {{"reason", reason},
               {"world_size", j.spec.groups.front().count},
               {"run_s", UsToSeconds(j.span.run)},
               {"finish_in_s", UsToSeconds(j.span.finish - j.span.at)},
               {"cost_usd", j.span.cost_usd},
               {"whole_member", j.span.whole_member >= 0 ? json(fed_.members[j.span.whole_member].name) : json()},
               {"whole_finish_in_s",
                j.span.whole_finish >= 0 ? json(UsToSeconds(j.span.whole_finish - j.span.at)) : json()},
               {"failures", j.span.failures}};
  return {{"parts", parts}, {"span", span}};
}

}  // namespace berth::fedserve
