// The service's scheduling thread: queue plumbing, submissions, the
// scheduling pass, completions, node health.
#include "berth/common/clock.h"
#include "berth/server/service.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "berth/hetero/ledger_speeds.h"
#include "berth/hetero/speed_score.h"
#include "berth/plugins/builtin.h"
#include "berth/json/json_parse.h"
#include "berth/server/job_json.h"
#include "berth/server/records.h"
#include "berth/store/leader.h"
#include "berth/server/thread_usage.h"
#include "berth/server/workflow_json.h"
#include "berth/workload/profile.h"

namespace berth::server {

using job::JobState;
using nlohmann::json;

namespace {
double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Status ServiceOptions::Validate() const {
  BERTH_RETURN_IF_ERROR(launch.Validate());
  if (!(speedup > 0) || speedup > 1e6) return InvalidArgument("--speedup must be in (0, 1e6]");
  if (heartbeat_interval <= 0 || heartbeat_timeout <= heartbeat_interval)
    return InvalidArgument("heartbeat timeout must exceed the heartbeat interval");
  if (quarantine_failures < 1) return InvalidArgument("quarantine needs at least one failure");
  if (tick <= 0 || request_timeout <= 0) return InvalidArgument("tick and request timeout must be positive");
  if (pass_budget <= 0) return InvalidArgument("--pass-budget must be positive");
  if (read_slots < 0) return InvalidArgument("read slots must not be negative");
  if (scheduler_nice < -20 || scheduler_nice > 19) return InvalidArgument("--scheduler-nice must be in [-20, 19]");
  if (scheduler_rt_priority < 0 || scheduler_rt_priority > 99)
    return InvalidArgument("--scheduler-rt-priority must be in [0, 99]");
  if (preemption_grace < 0) return InvalidArgument("--preemption-grace must not be negative");
  if (min_runtime < -1) return InvalidArgument("--min-runtime must not be negative");
  if (restore_cost < 0) return InvalidArgument("--restore-cost must not be negative");
  if (yield_best_effort < -1 || yield_training_grace < -1)
    return InvalidArgument("--yield-best-effort and --yield-training-grace must not be negative");
  if (idempotency_ttl < 0) return InvalidArgument("--idempotency-ttl must not be negative");
  if (agent_nodes && virtual_nodes) return InvalidArgument("node agents and virtual nodes do not go together");
  if (agent_nodes && !colocation.empty())
    return InvalidArgument("--reserved-nodes does not go with node agents (the cluster is the nodes that register)");
  if (kill_grace < 0) return InvalidArgument("--kill-grace must not be negative");
  if (repair_cost < 0) return InvalidArgument("--repair-cost must not be negative");
  if (!agent_nodes && !virtual_nodes &&
      (repair == faults::RepairMode::kInPlace || spares.mode != faults::SpareMode::kNone))
    return InvalidArgument(
        "--repair in-place and --spares need node agents (serve with --node-token-file and no --cluster) or "
        "virtual nodes (--virtual-nodes)");
  if (max_log_bytes < 0) return InvalidArgument("the log size limit must not be negative");
  if (extender_limits.max_groups < 1 || extender_limits.max_pods < 1)
    return InvalidArgument("--extender-max-groups and --extender-max-pods must be at least 1");
  BERTH_RETURN_IF_ERROR(limits.Validate());
  return Status::Ok();
}

Service::Service(const cluster::Cluster& cluster, store::Store& store, ServiceOptions options, Logger& log,
                 Metrics& metrics)
    : cluster_(std::shared_ptr<void>(), &cluster), store_(store), options_(std::move(options)), log_(log), metrics_(metrics) {
  nodes_.resize(cluster_->num_nodes());
  beat_at_ = std::make_unique<std::atomic<int64_t>[]>(cluster_->num_nodes());
  const TimeUs now = SteadyNowUs();
  for (int32_t n = 0; n < cluster_->num_nodes(); ++n) beat_at_[n].store(now, std::memory_order_relaxed);
  if (options_.require_federation_lease) fed_leased_ = true;  // fenced until a dispatcher grants a lease
  int slots = options_.read_slots;
  if (slots == 0) slots = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / 2);
  read_gate_ = std::make_unique<ReadGate>(slots);
}

Service::~Service() { Stop(); }

Status Service::Start() {
  BERTH_RETURN_IF_ERROR(options_.Validate());
  BERTH_RETURN_IF_ERROR(plugins::RegisterBuiltinPlugins(plugins_));
  BERTH_RETURN_IF_ERROR(plugins::RegisterBuiltinPolicies(policies_));
  BERTH_RETURN_IF_ERROR(hetero::RegisterHeteroPolicies(policies_));
  BERTH_ASSIGN_OR_RETURN(framework::Profile profile, policies_.Find(options_.policy));
  profile.name = options_.policy;
  if (options_.min_runtime >= 0) BERTH_RETURN_IF_ERROR(plugins::SetMinRuntime(profile, options_.min_runtime));
  if (Status a = framework::ApplyPluginArgs({&profile}, options_.plugin_args); !a.ok())
    return InvalidArgument("--plugin-arg: " + a.message());
  if (hetero::UsesHeteroPlugins(profile)) {
    BERTH_ASSIGN_OR_RETURN(auto model, hetero::LoadThroughputModel(options_.catalog, options_.throughputs));
    BERTH_RETURN_IF_ERROR(hetero::RegisterHeteroPlugins(plugins_, std::move(model)));
  }
  topology_planned_ = std::any_of(profile.plan.begin(), profile.plan.end(),
                                  [](const framework::PluginRef& r) { return r.name == "topology"; });
  if (options_.queues) {  // quotas are enforced, not only accounted
    for (auto* point : {&profile.admit, &profile.reserve})
      if (std::none_of(point->begin(), point->end(), [](const auto& r) { return r.name == "quota"; }))
        point->push_back(framework::PluginRef{"quota"});
  }
  profile = workload::WithServicePlugins(std::move(profile));  // replicas spread (a no-op for batch jobs)
  if (!options_.colocation.empty()) {  // the services' reservation (docs/service.md, "Reserved nodes for services")
    const framework::PluginRef ref{"colocation", options_.colocation};
    profile.filter.push_back(ref);
    profile.admit.push_back(ref);
  }
  profile_ = std::move(profile);
  if (options_.agent_nodes && cluster_->num_nodes() > 0)
    return InvalidArgument("with node agents the cluster is the registered nodes: start with an empty one");
  if (!options_.agent_nodes) {
    BERTH_ASSIGN_OR_RETURN(sched_, NewScheduler(*cluster_));
  }
  workload::ControllerOptions co;
  co.new_id = [this] { return JobId(next_id_++); };
  BERTH_RETURN_IF_ERROR(co.Validate());
  services_ = std::make_unique<workload::ServiceController>(std::move(co));
  phase_ = Phase::kAcquiring;
  BERTH_ASSIGN_OR_RETURN(fence_, store_.Acquire());
  phase_ = Phase::kLoading;
  if (options_.agent_nodes) BERTH_RETURN_IF_ERROR(LoadAgents());
  BERTH_RETURN_IF_ERROR(Recover());
  recovered_ = true;  // spares may be set aside now that running work is adopted
  for (auto& [id, e] : jobs_) MarkView(e);
  PublishViews();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = false;
    running_loop_ = true;
  }
  loop_ = std::thread([this] { Loop(); });
  // Workflows continue from their stage jobs (submitting needs the loop).
  Sync([this] { RecoverWorkflows(); });
  if (options_.virtual_nodes) {
    vnodes_ = std::make_unique<VirtualNodes>(cluster_->num_nodes(), options_.heartbeat_interval,
                                             static_cast<VirtualNodes::Sink&>(*this));
    Sync([this] {
      for (int64_t id : running_) LaunchOnAgents(jobs_.at(id));
    });
    vnodes_->Start();
  }
  Phase loading = Phase::kLoading;
  if (!phase_.compare_exchange_strong(loading, Phase::kLeading))
    return FailedPrecondition("the store's term was lost while loading");  // StepDown() came first
  ready_ = true;
  log_.Info("ready", {{"store", store_.Describe()}, {"term", fence_.term}, {"policy", options_.policy},
                      {"nodes", cluster_->num_nodes()}, {"gpus", cluster_->total_gpus()},
                      {"virtual_nodes", options_.virtual_nodes}});
  return Status::Ok();
}

void Service::Stop() {
  ready_ = false;
  if (vnodes_) vnodes_->Stop();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_loop_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (loop_.joinable()) loop_.join();
  store_.Flush();
}

void Service::PublishAndAnswer() {
  ProcessWorkflowEvents();
  PublishViews();
  std::vector<std::function<void()>> answers;
  answers.swap(after_publish_);
  for (auto& fn : answers) fn();
}

bool Service::Post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_loop_ || stopping_) return false;
    queue_.push_back(std::move(fn));
  }
  cv_.notify_one();
  return true;
}

bool Service::Sync(std::function<void()> fn) {
  return Call<bool>([fn = std::move(fn)] {
           fn();
           return true;
         })
      .value_or(false);
}

void Service::Loop() {
  bool realtime = false;
  if (options_.scheduler_rt_priority > 0) {
    sched_param p{};
    p.sched_priority = options_.scheduler_rt_priority;
    const int err = ::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &p);
    if (err == 0) {
      realtime = true;
      metrics_.scheduler_rt_priority = options_.scheduler_rt_priority;
    } else {
      log_.Warn("scheduler_rt_priority_refused",
                {{"priority", options_.scheduler_rt_priority}, {"error", std::strerror(err)},
                 {"hint", "grant CAP_SYS_NICE or raise RLIMIT_RTPRIO (systemd: LimitRTPRIO=); using --scheduler-nice"}});
    }
  }
  if (!realtime && options_.scheduler_nice != 0) {
    if (::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), options_.scheduler_nice) == 0) {
      metrics_.scheduler_nice = options_.scheduler_nice;
    } else {
      const int err = errno;
      log_.Warn("scheduler_nice_refused", {{"nice", options_.scheduler_nice},
                                           {"error", std::strerror(err)},
                                           {"hint", "grant CAP_SYS_NICE or raise RLIMIT_NICE (systemd: LimitNICE=)"}});
    }
  }
  std::deque<std::function<void()>> work;
  bool hurry = false;  // the last pass was split: continue it without sleeping
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      // The tick, or less when a spent budget renews or a replica's guard
      // expires sooner: the loop wakes then for the pass.
      TimeUs sleep = hurry ? 0 : options_.tick;
      const TimeUs now = clock_.Now();
      for (const TimeUs at : {budget_renew_at_, guard_expires_at_})
        if (at > now) sleep = std::min(sleep, at - now);
      cv_.wait_for(lock, std::chrono::microseconds(sleep), [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) {
        running_loop_ = false;
        work.swap(queue_);
        break;
      }
      work.swap(queue_);
    }
    // Where the turn's time goes (steady clock): the work handed in, the
    // checks, publishing, services, the pass and its publish.
    TurnClock turn;
    const size_t items = work.size();
    for (auto& fn : work) fn();
    work.clear();
    turn.Mark(TurnClock::kWork);
    if (options_.virtual_nodes || options_.agent_nodes) CheckHeartbeats();
    if (ready_ && sched_) CheckDrains();
    ExpireExtenderReservations();
    ExpireIdempotencyKeys();
    turn.Mark(TurnClock::kChecks);
    // The turn's answers go out before the pass (which may take its budget,
    // or longer for one very large job), and the pass's decisions after it.
    PublishAndAnswer();
    turn.Mark(TurnClock::kPublish);
    hurry = false;
    if (ready_ && sched_) ServicesTick();
    turn.Mark(TurnClock::kServices);
    if (budget_renew_at_ >= 0 && clock_.Now() >= budget_renew_at_) dirty_ = true;
    if (guard_expires_at_ >= 0 && clock_.Now() >= guard_expires_at_) dirty_ = true;
    const bool fenced = ready_ && sched_ && FederationFenced();
    if (dirty_ && ready_ && sched_ && !fenced) {
      SchedulePass();
      hurry = sched_->last_pass_split();
      turn.Mark(TurnClock::kPass);
      PublishAndAnswer();
      turn.Mark(TurnClock::kPassPublish);
    }
    NoteTurn(turn, items);
  }
  // Work queued but never run is dropped: its callers see a broken promise.
  work.clear();
  after_publish_.clear();
}

void Service::NoteTurn(const TurnClock& turn, size_t items) {
  const TimeUs total = turn.total();
  metrics_.loop_turn.Observe(UsToSeconds(total));
  if (total > metrics_.loop_turn_max_us.load(std::memory_order_relaxed))
    metrics_.loop_turn_max_us.store(total, std::memory_order_relaxed);
  // A turn that took a quarter of the heartbeat timeout is worth a line: the
  // loop answers nothing meanwhile.
  if (total < std::max<TimeUs>(options_.heartbeat_timeout / 4, 100'000)) return;
  ++metrics_.loop_turns_slow;
  json phases = json::object();
  for (int p = 0; p < TurnClock::kPhases; ++p)
    if (turn.spent(p) > 0) phases[TurnClock::Name(p)] = UsToSeconds(turn.spent(p));
  log_.Warn("slow_turn", {{"seconds", UsToSeconds(total)}, {"work_items", items}, {"phases", phases},
                          {"pending", pending_.size()}, {"running", running_.size()}});
}

void Service::AppendRecord(store::Record rec, std::function<void(const Status&)> then) {
  if (rec.time == 0) rec.time = clock_.Now();
  std::vector<store::Record> batch;
  batch.push_back(std::move(rec));
  store_.Append(fence_, std::move(batch), [this, then = std::move(then)](const Status& s, int64_t) {
    if (!s.ok()) {
      ++metrics_.store_errors;
      Post([this, s] { OnStoreError(s); });
    }
    if (then) then(s);
  });
}

void Service::OnStoreError(const Status& s) {
  if (s.code() == StatusCode::kFailedPrecondition && ready_) {
    ready_ = false;
    phase_ = Phase::kSteppedDown;
    log_.Error("fenced_out", {{"error", s.message()}});
  } else {
    log_.Error("store_error", {{"error", s.message()}});
  }
}

void Service::StepDown(const std::string& reason) {
  const Phase was = phase_.exchange(Phase::kSteppedDown);
  ready_ = false;
  if (was != Phase::kSteppedDown) log_.Error("stepped_down", {{"reason", reason}, {"term", fence_.term}});
}

ApiResult Service::NotReady() const {
  json body = {{"status", "not ready"}};
  const store::LeaderAnnouncement leader = store::ReadLeader(store_);
  const std::string& where = leader.address;
  switch (phase_.load()) {
    case Phase::kIdle:
      body["role"] = "starting";
      body["error"] = "not started";
      break;
    case Phase::kAcquiring:
      body["role"] = "standby";
      body["error"] = where.empty() ? "standby: not the leader, and no leader is known yet; retry"
                                    : "standby: not the leader; the leader is " + where;
      break;
    case Phase::kLoading:
      body["role"] = "loading";
      body["error"] = "elected, loading the state from the store; retry";
      break;
    case Phase::kLeading:
    case Phase::kSteppedDown:
      body["role"] = "stepped_down";
      body["error"] = "stepped down: this process no longer holds the store's term" +
                      (where.empty() ? std::string() : "; the leader is " + where);
      break;
  }
  if (!leader.raw.empty() && phase_.load() != Phase::kLoading) body["leader"] = leader.who;
  return {503, body};
}

// ---------------------------------------------------------------- submissions

int64_t Service::AcceptOnLoop(const std::string& key, const std::string& fingerprint, const job::JobSpec& spec) {
    JobEntry e;
    e.id = next_id_++;
    e.key = key;
    e.fingerprint = fingerprint;
    e.spec = spec;
    e.spec.id = JobId(e.id);
    e.accepted_at = clock_.Now();
    auto promise = std::make_shared<std::promise<Status>>();
    e.accepted = promise->get_future().share();
    store::Record rec;
    rec.kind = store::RecordKind::kJobAccepted;
    rec.job = e.id;
    rec.time = e.accepted_at;
    rec.key = key;
    rec.body = EncodeAccepted(e.spec, fingerprint);
    const int64_t id = e.id;
    by_key_.emplace(key, id);
    MarkView(jobs_.emplace(id, std::move(e)).first->second);
    // The answer waits for OnAccepted on this thread, so a client that got
    // its id can read the job at once.
    AppendRecord(std::move(rec), [this, promise, id](const Status& s) {
      if (!Post([this, promise, id, s] {
            OnAccepted(id, s);
            AfterPublish([promise, s] { promise->set_value(s); });
          }))
        promise->set_value(Unavailable("the service is stopping"));
    });
    return id;
}

ApiResult Service::SubmitJob(const std::string& body) {
  const auto t0 = std::chrono::steady_clock::now();
  auto finish = [&](ApiResult r) {
    metrics_.submit_latency.Observe(SecondsSince(t0));
    if (r.code >= 400 && r.code < 500) ++metrics_.jobs_rejected;
    return r;
  };
  StatusOr<nlohmann::json> doc = berth::json::ParseUntrusted(body);
  if (!doc.ok()) return finish(ApiResult::Error(400, doc.status().message()));
  if (IsWorkflowDocument(*doc)) return finish(SubmitWorkflow(*doc));
  StatusOr<JobSubmission> sub = ParseJobJson(*doc);
  if (!sub.ok()) return finish(ApiResult::Error(400, sub.status().message()));
  Status within = CheckAdmissionLimits(sub->spec, sub->idempotency_key, options_.limits);
  if (!within.ok()) return finish(ApiResult::Error(422, within.message()));
  if (!options_.agent_nodes) {  // with agents, a job no node can hold yet waits for one (OnAccepted)
    if (Status mem = job::CheckGpuMemory(sub->spec, *cluster_); !mem.ok())
      return finish(ApiResult::Error(400, mem.message()));
    Status feasible = CheckFeasible(*cluster_, sub->spec);
    if (!feasible.ok()) return finish(ApiResult::Error(422, "the job can never run here: " + feasible.message()));
  }
  if (!topology_planned_) {
    const job::JobSpec& j = sub->spec;
    const char* field = j.required_level ? "required_level" : j.preferred_level ? "preferred_level" : nullptr;
    for (size_t g = 0; g < j.groups.size() && !field; ++g) {
      const job::TaskGroup& tg = j.groups[g];
      field = tg.block_tasks > 0 ? "block_tasks" : tg.required_level ? "required_level"
                                               : tg.preferred_level ? "preferred_level" : nullptr;
    }
    if (field)
      return finish(ApiResult::Error(422, std::string(field) + ": policy '" + options_.policy +
                                              "' does not place by topology; serve with --policy topology, "
                                              "fairshare or priority-preempt"));
  }
  if (options_.queues && !options_.queues->auto_leaves() && options_.queues->LeafFor(sub->spec) < 0)
    return finish(ApiResult::Error(422, "tenant '" + sub->spec.tenant + "'" +
                                            (sub->spec.queue.empty() ? "" : " (queue '" + sub->spec.queue + "')") +
                                            " maps to no leaf queue, and the queue tree has no 'default' leaf"));
  if (!ready_) return finish(NotReady());
  const std::string key = sub->idempotency_key.empty() ? "name:" + sub->spec.name : sub->idempotency_key;
  const std::string fingerprint = SpecFingerprint(sub->spec);

  struct Admission {
    int code = 0;  // 0: wait on `accepted`
    std::string error;
    int64_t id = -1;
    bool duplicate = false;
    std::shared_future<Status> accepted;
  };
  auto spec = std::make_shared<job::JobSpec>(std::move(sub->spec));
  std::optional<Admission> adm = Call<Admission>([this, key, fingerprint, spec]() -> Admission {
    Admission a;
    if (!ready_) return {503, "not ready", -1, false, {}};
    if (auto it = by_key_.find(key); it != by_key_.end()) {
      const JobEntry& e = jobs_.at(it->second);
      a.id = e.id;
      if (e.fingerprint != fingerprint) {
        a.code = 409;
        a.error = "idempotency key '" + key + "' is already used by job " + std::to_string(e.id) +
                  " with a different spec";
        return a;
      }
      a.duplicate = true;
      a.accepted = e.accepted;
      return a;
    }
    a.id = AcceptOnLoop(key, fingerprint, *spec);
    a.accepted = jobs_.at(a.id).accepted;
    return a;
  });
  if (!adm) return finish(ApiResult::Error(503, "the scheduling loop did not answer in time"));
  if (adm->code == 503) return finish(NotReady());
  if (adm->code) return finish(ApiResult{adm->code, {{"error", adm->error}, {"id", adm->id}}});
  if (adm->accepted.wait_for(std::chrono::microseconds(options_.request_timeout)) != std::future_status::ready)
    return finish(ApiResult::Error(503, "the store did not make the job durable in time; retry with the same key"));
  const Status s = adm->accepted.get();
  if (!s.ok()) return finish(ApiResult::Error(503, "not stored: " + s.message() + "; retry with the same key"));
  if (adm->duplicate) ++metrics_.jobs_duplicate;
  return finish(ApiResult{adm->duplicate ? 200 : 201, {{"id", adm->id}, {"duplicate", adm->duplicate}}});
}

void Service::OnAccepted(int64_t id, const Status& s) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  JobEntry& e = it->second;
  MarkView(id);
  if (!s.ok()) {
    by_key_.erase(e.key);
    jobs_.erase(it);
    return;
  }
  e.durable = true;
  MarkView(e);
  ++metrics_.jobs_submitted;
  if (e.spec.service) {
    // A service stage stored after its workflow was cancelled never starts.
    if (auto st = stage_of_job_.find(id); st != stage_of_job_.end())
      if (auto w = workflows_.find(st->second.first);
          w != workflows_.end() && w->second.run.state(st->second.second) == workload::StageState::kCancelled) {
        deploying_stages_.erase(id);
        (void)CancelEntryOnLoop(e, "its workflow was cancelled");
        return;
      }
    return ServiceAccepted(e);
  }
  if (options_.agent_nodes) {
    if (Status fits = Feasible(e.spec); !fits.ok()) {
      e.unfit = "waiting for node agents that can hold it: " + fits.message();
      pending_.insert(id);
      log_.Info("job_accepted", {{"job", id}, {"name", e.spec.name}, {"unfit", e.unfit}});
      return;
    }
  }
  Status sub = sched_->Submit(e.spec);
  if (!sub.ok()) {
    e.state = JobState::kFailed;
    e.finished_at = clock_.Now();
    e.end_reason = sub.message();
    ReleaseKey(e);
    AppendRecord({store::RecordKind::kJobFinished, id, 0, "", EncodeEnd(e.state, e.end_reason)});
    return;
  }
  pending_.insert(id);
  dirty_ = true;
  // A stage job stored after its workflow was cancelled is cancelled now.
  if (auto st = stage_of_job_.find(id); st != stage_of_job_.end())
    if (auto w = workflows_.find(st->second.first);
        w != workflows_.end() && w->second.run.state(st->second.second) == workload::StageState::kCancelled) {
      (void)CancelEntryOnLoop(e, "its workflow was cancelled");
      return;
    }
  log_.Info("job_accepted", {{"job", id}, {"name", e.spec.name}, {"queue", QueueOf(e)}, {"tenant", e.spec.tenant}});
}

// ------------------------------------------------------------------- cancels

std::shared_future<Status> Service::CancelEntryOnLoop(JobEntry& e, const std::string& reason) {
  const int64_t id = e.id;
  if (e.unfit.empty() && !e.spec.service) {  // an unfit job (or a service) was never given to the scheduler
    Status s = sched_->Finish(JobId(id), JobState::kCancelled);
    if (!s.ok()) {
      log_.Error("cancel_failed", {{"job", id}, {"error", s.message()}});
      return {};
    }
  }
  if (vnodes_) vnodes_->Kill(id);
  pending_.erase(id);
  running_.erase(id);
  e.state = JobState::kCancelled;
  e.finished_at = clock_.Now();
  e.end_reason = reason;
  e.placements.clear();
  e.unfit.clear();
  ReleaseKey(e);
  MarkView(e);
  dirty_ = true;
  ++metrics_.jobs_cancelled;
  log_.Info("job_cancelled", {{"job", id}});
  auto promise = std::make_shared<std::promise<Status>>();
  std::shared_future<Status> durable = promise->get_future().share();
  if (e.extender || e.replica) {  // replicas are not persisted
    promise->set_value(Status::Ok());
  } else {
    AppendRecord({store::RecordKind::kJobFinished, id, 0, "", EncodeEnd(e.state, e.end_reason)},
                 [promise](const Status& st) { promise->set_value(st); });
  }
  return durable;
}

ApiResult Service::CancelJob(int64_t id) {
  if (!ready_) return NotReady();
  struct Out {
    ApiResult result;
    std::shared_future<Status> durable;
  };
  std::optional<Out> out = Call<Out>([this, id]() -> Out {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) {
      if (auto w = CancelWorkflowOnLoop(id)) return {std::move(w->first), std::move(w->second)};
      return {ApiResult::Error(404, "no job " + std::to_string(id)), {}};
    }
    JobEntry& e = it->second;
    if (e.state == JobState::kCancelled) return {ApiResult{200, {{"id", id}, {"state", "cancelled"}}}, {}};
    if (job::IsTerminal(e.state))
      return {ApiResult::Error(409, "job " + std::to_string(id) + " already " + job::JobStateName(e.state)), {}};
    if (!e.durable) return {ApiResult::Error(409, "job " + std::to_string(id) + " is not accepted yet; retry"), {}};
    if (e.spec.service) {  // the controller stops its replicas at its next turn
      Status s = services_->Remove(JobId(id));
      if (!s.ok()) return {ApiResult::Error(500, s.message()), {}};
    }
    Out o{ApiResult{200, {{"id", id}, {"state", "cancelled"}}}, CancelEntryOnLoop(e, "cancelled by request")};
    if (!o.durable.valid())
      return {ApiResult::Error(500, "job " + std::to_string(id) + ": the scheduler refused the cancel (see the log)"), {}};
    return o;
  });
  if (!out) return ApiResult::Error(503, "the scheduling loop did not answer in time");
  if (out->durable.valid()) {
    if (out->durable.wait_for(std::chrono::microseconds(options_.request_timeout)) != std::future_status::ready)
      return ApiResult::Error(503, "the store did not record the cancellation in time");
    Status s = out->durable.get();
    if (!s.ok()) return ApiResult::Error(503, "cancellation not stored: " + s.message());
  }
  return out->result;
}

// ------------------------------------------------------------ the scheduling pass

void Service::SchedulePass() {
  dirty_ = false;
  const ThreadUsage usage0 = ThreadUsage::Now();
  const auto t0 = std::chrono::steady_clock::now();
  const auto deadline = t0 + std::chrono::microseconds(options_.pass_budget);
  std::vector<JobId> started =
      sched_->Schedule([deadline] { return std::chrono::steady_clock::now() >= deadline; });
  const double dt = SecondsSince(t0);
  const ThreadUsage used = ThreadUsage::Now() - usage0;
  metrics_.pass_cpu.Observe(static_cast<double>(used.cpu_ns) * 1e-9);
  if (used.preempted > 0) ++metrics_.passes_preempted;
  if (used.slept > 0) ++metrics_.passes_blocked;
  if (used.faults > 0) ++metrics_.passes_faulted;
  if (sched_->last_pass_split()) {
    dirty_ = true;  // the next turn continues the pass
    ++metrics_.pass_splits;
  }
  ++metrics_.scheduling_passes;
  budget_renew_at_ = sched_->NextBudgetRenewal(clock_.Now());
  guard_expires_at_ = sched_->NextGuardExpiry(clock_.Now());
  metrics_.pass_latency.Observe(dt);
  if (!started.empty()) {
    metrics_.decision_latency.Observe(dt);
    metrics_.decisions += started.size();
  }
  for (JobId jid : started) {
    JobEntry& e = jobs_.at(jid.value());
    const scheduler::JobRecord* rec = sched_->Find(jid);
    e.state = JobState::kRunning;
    e.placements = rec->placements;
    e.started_at = rec->start_time;
    ++e.generation;
    e.task_attempts.clear();
    e.attempts_unlaunched.clear();
    e.rank_order = workload::RankOrder(e.placements);
    if (e.generation == 1 && e.started_at >= e.accepted_at)
      metrics_.admission_wait.Observe(UsToSeconds(e.started_at - e.accepted_at));
    pending_.erase(e.id);
    running_.insert(e.id);
    MarkView(e);
    json nodes = json::array();
    for (const auto& p : e.placements) nodes.push_back(cluster_->node(p.alloc.node).name);
    log_.Info("job_started", {{"job", e.id}, {"nodes", nodes}, {"gpus", e.spec.total_gpus()}});
    if (e.extender) continue;  // Kubernetes runs it; nothing to persist or launch
    if (e.replica) {  // a replica runs on the agents until its service stops it; not persisted
      LaunchOnAgents(e);
      continue;
    }
    const int64_t id = e.id;
    const int32_t gen = e.generation;
    AppendRecord({store::RecordKind::kJobStarted, id, e.started_at, "", EncodePlacements(*cluster_, e.placements)},
                 [this, id, gen](const Status& s) { Post([this, id, gen, s] { OnStartDurable(id, gen, s); }); });
  }
  // Jobs evicted by preemption during the pass (the scheduler requeued them).
  for (JobId jid : sched_->preempted_in_last_pass()) {
    auto it = jobs_.find(jid.value());
    if (it == jobs_.end() || it->second.state != JobState::kRunning) continue;
    const scheduler::JobRecord* rec = sched_->Find(jid);
    ++metrics_.preemptions;
    Requeued(it->second, "preempted by job " + std::to_string(rec->preempted_by.value()));
  }
  // Jobs the scheduler gave up on (can never fit), among those the pass
  // reached; the others' verdicts may have changed.
  std::vector<int64_t> failed;
  for (JobId jid : sched_->visited_in_last_pass()) {
    auto it = jobs_.find(jid.value());
    if (it == jobs_.end() || it->second.state != JobState::kPending) continue;
    const scheduler::JobRecord* rec = sched_->Find(jid);
    if (rec && rec->state == JobState::kFailed) {
      failed.push_back(jid.value());
    } else if (!it->second.verdict_stale) {
      it->second.verdict_stale = true;
      verdict_queue_.push_back(jid.value());
    }
  }
  for (int64_t id : failed) {
    JobEntry& e = jobs_.at(id);
    pending_.erase(id);
    e.state = JobState::kFailed;
    e.finished_at = clock_.Now();
    e.end_reason = sched_->Find(JobId(id))->last_verdict.reason;
    ReleaseKey(e);
    MarkView(e);
    ++metrics_.jobs_failed;
    log_.Info("job_failed", {{"job", id}, {"reason", e.end_reason}});
    if (!e.extender && !e.replica)
      AppendRecord({store::RecordKind::kJobFinished, id, 0, "", EncodeEnd(e.state, e.end_reason)});
  }
}

void Service::OnStartDurable(int64_t id, int32_t generation, const Status& s) {
  if (!s.ok()) return;  // fenced or failing: this process stops deciding (readyz false)
  auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second.state != JobState::kRunning || it->second.generation != generation) return;
  it->second.launched = true;  // agents learn it at their next heartbeat
  LaunchOnAgents(it->second);
}

std::vector<int32_t> Service::RunNodes(const std::vector<framework::TaskPlacement>& placements) {
  std::vector<int32_t> nodes;
  for (const auto& p : placements) nodes.push_back(p.alloc.node.value());
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

void Service::LaunchOnAgents(const JobEntry& e) {
  if (!vnodes_) return;
  std::vector<int32_t> nodes = RunNodes(e.placements);
  TimeUs job_time = e.spec.duration >= 0 ? e.spec.duration : e.spec.runtime_limit;
  // A run's work begins after its startup delay (the grace of the jobs it
  // evicted, the restore of its checkpoint): the agents run it that much
  // longer.
  const scheduler::JobRecord* rec = sched_->Find(JobId(e.id));
  if (job_time >= 0 && rec) job_time += rec->startup_delay;
  TimeUs wall = -1;
  if (job_time >= 0) {
    wall = static_cast<TimeUs>(static_cast<double>(job_time) / options_.speedup);
    wall = std::max<TimeUs>(0, wall - (clock_.Now() - e.started_at));  // after a restart: what is left
  }
  vnodes_->Launch(e.id, e.generation, std::move(nodes), wall);
}

void Service::JobDone(int64_t job, int32_t generation) {
  Post([this, job, generation] { OnJobDone(job, generation); });
}

void Service::OnJobDone(int64_t id, int32_t generation) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  JobEntry& e = it->second;
  if (e.state != JobState::kRunning || e.generation != generation) return;
  // A workflow stage whose attempt is set to fail (fail_attempts) ends failed.
  bool fails = false;
  if (auto st = stage_of_job_.find(id); st != stage_of_job_.end())
    if (auto w = workflows_.find(st->second.first); w != workflows_.end())
      fails = w->second.run.AttemptFails(st->second.second);
  const JobState final_state = fails ? JobState::kFailed : JobState::kSucceeded;
  Status s = sched_->Finish(JobId(id), final_state);
  if (!s.ok()) {
    log_.Error("finish_failed", {{"job", id}, {"error", s.message()}});
    return;
  }
  running_.erase(id);
  e.state = final_state;
  e.finished_at = clock_.Now();
  if (fails) e.end_reason = "the stage's attempt " + std::string("is set to fail (fail_attempts)");
  e.placements.clear();
  ReleaseKey(e);
  MarkView(e);
  ++(fails ? metrics_.jobs_failed : metrics_.jobs_finished);
  dirty_ = true;
  log_.Info(fails ? "job_failed" : "job_succeeded", {{"job", id}});
  AppendRecord({store::RecordKind::kJobFinished, id, e.finished_at, "", EncodeEnd(e.state, e.end_reason)});
}

// ---------------------------------------------------------------- node health

// The agents' thread: each arrival is recorded at once; the loop may be busy.
void Service::Heartbeats(const std::vector<int32_t>& nodes) {
  const TimeUs now = SteadyNowUs();
  TimeUs gap_max = 0;
  uint64_t late = 0;
  for (int32_t n : nodes) {
    if (n < 0 || n >= cluster_->num_nodes()) continue;
    const TimeUs gap = now - beat_at_[n].exchange(now, std::memory_order_relaxed);
    gap_max = std::max(gap_max, gap);
    late += gap > options_.heartbeat_timeout;
  }
  if (late) metrics_.heartbeats_late += late;
  if (gap_max > beat_gap_max_.load(std::memory_order_relaxed)) beat_gap_max_.store(gap_max, std::memory_order_relaxed);
}

// On the loop. A node is late when its last heartbeat arrived longer than the
// timeout ago (or, after a grace, the grace began that long ago). The grace:
// when this checker itself did not run for longer than the timeout (the
// process was stopped or starved), silence in that gap proves nothing about
// the nodes, so every node gets a fresh timeout.
void Service::CheckHeartbeats() {
  const TimeUs now = SteadyNowUs();
  if (last_check_ > 0 && now - last_check_ > options_.heartbeat_timeout) {
    grace_from_ = now;
    ++metrics_.heartbeat_graces;
    log_.Warn("heartbeat_grace", {{"checker_gap_s", UsToSeconds(now - last_check_)},
                                  {"reason", "the heartbeat checker did not run for longer than the timeout"}});
  }
  last_check_ = now;
  if (options_.agent_nodes) CopyAgentBeats();
  for (int32_t n = 0; n < static_cast<int32_t>(nodes_.size()); ++n) {
    NodeEntry& ne = nodes_[n];
    const TimeUs beat = beat_at_[n].load(std::memory_order_relaxed);
    if (ne.up) {
      if (now - std::max(beat, grace_from_) > options_.heartbeat_timeout) NodeDown(NodeId(n), "heartbeat timeout");
    } else if (!ne.quarantined && beat > ne.down_at) {
      // Healthy again; a draining node still takes no new work.
      ne.spare = false;
      if (sched_->SetNodeUp(NodeId(n), !ne.draining && !ne.quarantined).ok()) {
        ne.up = true;
        node_views_dirty_ = true;
        dirty_ = true;
        log_.Info("node_up", {{"node", cluster_->node(NodeId(n)).name}});
      }
    }
  }
  RefreshSpares();
}

void Service::NodeDown(NodeId node, const std::string& reason) {
  NodeEntry& ne = nodes_[node.value()];
  const TimeUs now = SteadyNowUs();
  const std::string& name = cluster_->node(node).name;
  ne.up = false;
  ne.spare = false;
  ne.down_at = now;
  node_views_dirty_ = true;
  (void)sched_->SetNodeUp(node, false);
  RecordFailure(node, 1.0);
  ++metrics_.node_failures;
  ++ne.total_failures;
  ne.failures.push_back(now);
  while (!ne.failures.empty() && now - ne.failures.front() > options_.quarantine_window) ne.failures.pop_front();
  log_.Warn("node_down", {{"node", name}, {"reason", reason}, {"recent_failures", ne.failures.size()}});
  if (!ne.quarantined && static_cast<int32_t>(ne.failures.size()) >= options_.quarantine_failures) {
    ne.quarantined = true;
    log_.Warn("node_quarantined", {{"node", name}, {"failures", ne.failures.size()}});
    AppendNodeRecord(node.value());
  }
  StopJobsOn(node, "node " + name + " down: " + reason, false);
}

void Service::StopJobsOn(NodeId node, const std::string& reason, bool checkpoint_now) {
  // Every job with a task on the node goes back to the queue (or, with
  // agents and --repair in-place, has those tasks restarted elsewhere).
  std::map<int64_t, std::vector<int32_t>> hit;
  for (const TaskKey& t : sched_->state().tasks_on(node)) hit[t.job.value()].push_back(t.index);
  for (const auto& [id, tasks] : hit) {
    auto it = jobs_.find(id);
    if (it == jobs_.end() || it->second.state != JobState::kRunning) continue;
    // A failure (not a drain): with agents, or virtual nodes repaired in
    // place, the gang's failed tasks alone restart when they can.
    const bool repairs = options_.agent_nodes || options_.repair == faults::RepairMode::kInPlace;
    if (repairs && !checkpoint_now) {
      FailJob(it->second, tasks, node, ~uint64_t{0}, reason);
    } else if (checkpoint_now) {
      // A failure or a drain, not a preemption: the gang restarts from its
      // checkpoint (a drain takes one first).
      JobEntry& e = it->second;
      const TimeUs cost = e.spec.restart_cost >= 0 ? e.spec.restart_cost : options_.restore_cost;
      if (Status s = sched_->Interrupt(JobId(id), cost, checkpoint_now); !s.ok()) {
        log_.Error("requeue_failed", {{"job", id}, {"error", s.message()}});
        continue;
      }
      Requeued(e, reason);
    } else {
      Requeue(it->second, reason);
    }
  }
  dirty_ = true;
}

void Service::AppendNodeRecord(int32_t n, std::function<void(const Status&)> then) {
  const NodeEntry& ne = nodes_[n];
  AppendRecord({store::RecordKind::kNodeState, -1, clock_.Now(), cluster_->node(NodeId(n)).name,
                EncodeNode({ne.quarantined, ne.total_failures, ne.draining, ne.drain_deadline})},
               std::move(then));
}

void Service::Requeue(JobEntry& e, const std::string& reason) {
  Status s = sched_->Preempt(JobId(e.id));
  if (!s.ok()) {
    log_.Error("requeue_failed", {{"job", e.id}, {"error", s.message()}});
    return;
  }
  Requeued(e, reason);
}

void Service::Requeued(JobEntry& e, const std::string& reason) {
  if (vnodes_) vnodes_->Kill(e.id);
  running_.erase(e.id);
  pending_.insert(e.id);
  e.state = JobState::kPending;
  e.placements.clear();
  e.launched = false;
  e.task_exits.clear();
  e.task_attempts.clear();
  e.attempts_unlaunched.clear();
  ++e.requeues;
  MarkView(e);
  ++metrics_.jobs_requeued;
  log_.Warn("job_requeued", {{"job", e.id}, {"reason", reason}});
  if (!e.extender && !e.replica) AppendRecord({store::RecordKind::kJobRequeued, e.id, 0, "", EncodeEnd(JobState::kPending, reason)});
}

}  // namespace berth::server
