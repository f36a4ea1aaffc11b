// The service's node-agent side (docs/agent.md): registrations and the
// cluster model rebuilt from them, heartbeats and the task lists they answer,
// task exits (job success, failure, requeue), and task logs.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "berth/common/clock.h"
#include "berth/hetero/ledger_speeds.h"
#include "berth/server/agent_api.h"
#include "berth/server/records.h"
#include "berth/server/service.h"
#include "berth/workload/launch.h"

namespace berth::server {

using job::JobState;
using nlohmann::json;

namespace {

std::string Cut(const std::string& s) { return s.size() > 120 ? s.substr(0, 120) + "..." : s; }

ApiResult NotRegistered(const std::string& name) {
  return {404, {{"error", "node '" + Cut(name) + "' is not registered; register first"}, {"register", true}}};
}

std::string LogPath(const std::string& dir, int64_t job, int32_t task, int32_t generation, int32_t attempt = 0) {
  return dir + "/job-" + std::to_string(job) + "/task-" + std::to_string(task) + ".run-" +
         std::to_string(generation) + (attempt > 0 ? ".attempt-" + std::to_string(attempt) : "") + ".log";
}

// The device index of each GPU position, as the node registered them.
std::vector<int32_t> GpuIndexes(const AgentRegistration& r) {
  std::vector<int32_t> out;
  for (const auto& g : r.gpus) out.push_back(g.index);
  return out;
}

}  // namespace

StatusOr<std::unique_ptr<scheduler::Scheduler>> Service::NewScheduler(const cluster::Cluster& c) {
  framework::PluginContext context;
  context.cluster = &c;  // no workload known in advance in the service
  BERTH_ASSIGN_OR_RETURN(std::unique_ptr<framework::Framework> fw, framework::Framework::Create(*profile_, plugins_, context));
  scheduler::SchedulerOptions so;
  so.seed = options_.seed;
  so.queues = options_.queues;
  if (options_.queue_file) {  // node agents: the queue file against the nodes registered now
    std::vector<std::string> absent;
    const tenancy::QueueFile file = tenancy::QuotasForCluster(*options_.queue_file, c, &absent);
    BERTH_ASSIGN_OR_RETURN(tenancy::QueueTree tree, tenancy::BuildQueueTree(file, options_.queue_file_name, c));
    so.queues = std::make_shared<const tenancy::QueueTree>(std::move(tree));
    if (!absent.empty())
      log_.Info("queue_quotas_waiting", {{"gpu_types", absent},
                                         {"hint", "no registered node has these GPU types yet; their quotas apply once one joins"}});
  }
  so.usage_half_life = options_.usage_half_life;
  if (so.queues) {  // normalized units: the throughput model of --catalog and --throughputs
    BERTH_ASSIGN_OR_RETURN(so.speeds, hetero::SpeedsForTree(*so.queues, options_.catalog, options_.throughputs, c));
  }
  so.preemption_grace = options_.preemption_grace;
  so.restore_cost = options_.restore_cost;
  so.yield_best_effort = options_.yield_best_effort;
  so.yield_training_grace = options_.yield_training_grace;
  return std::make_unique<scheduler::Scheduler>(c, std::move(fw), std::move(so), clock_);
}

Status Service::Feasible(const job::JobSpec& spec) const {
  if (!sched_ || cluster_->num_nodes() == 0) return FailedPrecondition("no node agent has registered yet");
  return CheckFeasible(*cluster_, spec);
}

// Before Recover: the registrations in the store make the cluster, so that
// running jobs are adopted on the nodes they ran on.
Status Service::LoadAgents() {
  BERTH_ASSIGN_OR_RETURN(store::Loaded loaded, store_.Load());
  const TimeUs now = SteadyNowUs();
  for (const store::Record& r : loaded.records) {
    if (r.kind != store::RecordKind::kNodeRegistered) continue;
    auto reg = ParseAgentRegistration(r.body);
    if (!reg.ok()) return Internal("store record " + std::to_string(r.revision) + ": " + reg.status().message());
    agents_[reg->name] = AgentEntry{reg->agent_id, reg->ToNodeSpec(), r.body, GpuIndexes(*reg)};
    SetNodeAddress(reg->name, reg->address);
    std::lock_guard<std::mutex> lock(beat_mu_);
    agent_beats_[reg->name] = {reg->agent_id, now};  // a fresh timeout to come back in
  }
  if (agents_.empty()) return Status::Ok();
  return RebuildAgentCluster("registrations recovered from the store");
}

// The cluster from agents_, node order by (region, cluster, spine, leaf,
// nvlink, name) so every domain is a range of ids (ADR 0001); every
// unfinished job carried over in id order, running ones adopted on their
// nodes by name. Fails before changing anything.
Status Service::RebuildAgentCluster(const std::string& why) {
  std::vector<const cluster::NodeSpec*> specs;
  for (const auto& [name, a] : agents_) specs.push_back(&a.spec);
  std::sort(specs.begin(), specs.end(), [](const cluster::NodeSpec* a, const cluster::NodeSpec* b) {
    return std::tie(a->region, a->cluster, a->spine, a->leaf, a->nvlink, a->name) <
           std::tie(b->region, b->cluster, b->spine, b->leaf, b->nvlink, b->name);
  });
  cluster::ClusterBuilder builder;
  for (const auto* s : specs) builder.AddNode(*s);
  BERTH_ASSIGN_OR_RETURN(cluster::Cluster built, std::move(builder).Build());
  auto next = std::make_shared<const cluster::Cluster>(std::move(built));
  BERTH_ASSIGN_OR_RETURN(std::unique_ptr<scheduler::Scheduler> s, NewScheduler(*next));
  ReplayFailureHistory(*s, *next);

  const TimeUs steady_now = SteadyNowUs();
  std::vector<NodeEntry> next_nodes(next->num_nodes());
  auto next_beats = std::make_unique<std::atomic<int64_t>[]>(next->num_nodes());
  for (int32_t n = 0; n < next->num_nodes(); ++n) {
    next_beats[n].store(steady_now, std::memory_order_relaxed);
    if (auto old = cluster_->FindNode(next->node(NodeId(n)).name)) {
      next_nodes[n] = nodes_[old->value()];
      next_beats[n].store(beat_at_[old->value()].load(std::memory_order_relaxed), std::memory_order_relaxed);
    }
  }
  int64_t adopted = 0, queued = 0, waiting = 0, requeued = 0;
  for (auto& [id, e] : jobs_) {
    if (job::IsTerminal(e.state) || e.extender || !e.durable) continue;
    MarkView(e);
    if (e.state != JobState::kRunning) {
      if (Status fits = CheckFeasible(*next, e.spec); !fits.ok()) {
        e.unfit = "waiting for node agents that can hold it: " + fits.message();
        ++waiting;
        continue;
      }
      e.unfit.clear();
      if (Status sub = s->Submit(e.spec); !sub.ok()) {
        e.unfit = "not valid on the registered nodes: " + sub.message();
        ++waiting;
        continue;
      }
      ++queued;
      continue;
    }
    std::vector<framework::TaskPlacement> placements;
    bool lost = false;
    for (const auto& p : e.placements) {
      auto n = next->FindNode(cluster_->node(p.alloc.node).name);
      if (!n) {
        lost = true;
        break;
      }
      framework::TaskPlacement q = p;
      q.alloc.node = *n;
      placements.push_back(q);
    }
    Status sub = s->Submit(e.spec);
    if (sub.ok() && !lost) sub = s->Adopt(JobId(id), placements, e.started_at);
    if (sub.ok() && !lost) {
      e.placements = std::move(placements);
      ++adopted;
      continue;
    }
    // Its node changed under it (re-registered with other GPUs): back to the queue.
    const std::string reason = "its node changed (" + why + "): " + (lost ? "a node left" : sub.message());
    log_.Warn("job_requeued", {{"job", id}, {"reason", reason}});
    running_.erase(id);
    pending_.insert(id);
    e.state = JobState::kPending;
    e.placements.clear();
    e.launched = false;
    e.task_exits.clear();
    e.task_attempts.clear();
    e.attempts_unlaunched.clear();
    ++e.requeues;
    ++requeued;
    ++metrics_.jobs_requeued;
    AppendRecord({store::RecordKind::kJobRequeued, id, 0, "", EncodeEnd(JobState::kPending, reason)});
  }
  for (int32_t n = 0; n < next->num_nodes(); ++n) {
    if (!next_nodes[n].schedulable()) (void)s->SetNodeUp(NodeId(n), false);
    const int32_t count = next->node(NodeId(n)).gpu_count;
    if (count < 64) next_nodes[n].failed_gpus &= (uint64_t{1} << count) - 1;  // re-registered with fewer GPUs
    ReapplyFailedGpus(*s, NodeId(n), next_nodes[n].failed_gpus);
  }
  sched_ = std::move(s);  // the old scheduler goes while its cluster still lives
  cluster_ = std::move(next);
  nodes_ = std::move(next_nodes);
  beat_at_ = std::move(next_beats);
  node_views_dirty_ = true;
  queue_views_.reset();
  views_state_version_ = ~uint64_t{0};
  dirty_ = true;
  RefreshSpares();
  log_.Info("agent_cluster", {{"why", why}, {"summary", cluster_->Summary()}, {"adopted", adopted},
                              {"queued", queued}, {"waiting", waiting}, {"requeued", requeued}});
  return Status::Ok();
}

void Service::CopyAgentBeats() {
  std::lock_guard<std::mutex> lock(beat_mu_);
  for (const auto& [name, beat] : agent_beats_) {
    auto n = cluster_->FindNode(name);
    if (!n) continue;
    auto& slot = beat_at_[n->value()];
    if (beat.second > slot.load(std::memory_order_relaxed)) slot.store(beat.second, std::memory_order_relaxed);
  }
}

json Service::AgentRunList(NodeId node) const {
  json run = json::array();
  if (!sched_) return run;
  // The launch spec of each job with a task here (ranks, MASTER_ADDR, ...):
  // its per-task env goes to the agent as launch_env.
  workload::LaunchOptions lo = options_.launch;
  {
    std::lock_guard<std::mutex> lock(addresses_mu_);
    if (!node_addresses_.empty()) {
      auto book = std::make_shared<const std::map<std::string, std::string>>(node_addresses_);
      auto fallback = lo.node_address;
      lo.node_address = [book, fallback](const std::string& n) -> std::optional<std::string> {
        if (auto it = book->find(n); it != book->end()) return it->second;
        return fallback ? fallback(n) : std::nullopt;
      };
    }
  }
  std::map<int64_t, std::optional<workload::LaunchSpec>> launches;
  for (const TaskKey& t : sched_->state().tasks_on(node)) {
    auto it = jobs_.find(t.job.value());
    if (it == jobs_.end()) continue;
    const JobEntry& e = it->second;
    if (e.state != JobState::kRunning || !e.launched || e.extender) continue;
    if (e.attempts_unlaunched.count(t.index)) continue;  // its repair is not durable yet
    const framework::TaskPlacement* p = nullptr;
    for (const auto& q : e.placements)
      if (q.task.index == t.index) p = &q;
    if (!p || p->alloc.node != node) continue;
    json gpus = json::array();
    for (int g = 0; g < 64; ++g)
      if (p->alloc.gpu_mask & (uint64_t{1} << g)) gpus.push_back(g);
    json item = {{"job", e.id},
                 {"generation", e.generation},
                 {"task", t.index},
                 {"attempt", e.attempt(t.index)},
                 {"tasks", e.spec.num_tasks()},
                 {"gpus", gpus},
                 {"cpu_milli", p->alloc.cpu_milli},
                 {"memory_mib", p->alloc.memory_mib},
                 {"command", e.spec.command},
                 {"env", e.spec.env.empty() ? json::object() : json(e.spec.env)}};
    auto [l, fresh] = launches.try_emplace(e.id);
    if (fresh) {
      job::JobSpec spec = e.spec;
      spec.id = JobId(e.id);
      workload::LaunchOptions job_lo = lo;
      job_lo.rank_order = e.rank_order;  // ranks kept through in-place repairs
      auto computed = workload::ComputeLaunchSpec(*cluster_, spec, e.placements, job_lo);
      if (computed.ok()) l->second = std::move(computed).value();
    }
    if (l->second) {
      json peers = json::array();
      for (const auto& tl : l->second->tasks) {
        if (tl.task == t.index) {
          item["launch_env"] = tl.env;
          item["rank"] = tl.rank;
        }
        peers.push_back({{"task", tl.task}, {"rank", tl.rank}, {"node", tl.node}, {"address", tl.address},
                         {"attempt", e.attempt(tl.task)}});
      }
      item["peers"] = std::move(peers);
      if (!l->second->mpi_hostfile.empty()) item["mpi_hostfile"] = l->second->mpi_hostfile;
    }
    if (auto x = e.task_exits.find(t.index); x != e.task_exits.end()) item["exit_recorded"] = true;
    run.push_back(std::move(item));
  }
  return run;
}

void Service::EndJob(JobEntry& e, JobState state, const std::string& reason) {
  Status s = sched_->Finish(JobId(e.id), state);
  if (!s.ok()) {
    log_.Error("finish_failed", {{"job", e.id}, {"error", s.message()}});
    return;
  }
  running_.erase(e.id);
  e.state = state;
  e.finished_at = clock_.Now();
  e.end_reason = reason;
  e.placements.clear();
  e.launched = false;
  ReleaseKey(e);
  MarkView(e);
  ++(state == JobState::kSucceeded ? metrics_.jobs_finished : metrics_.jobs_failed);
  dirty_ = true;
  if (state == JobState::kSucceeded) {
    log_.Info("job_succeeded", {{"job", e.id}});
  } else {
    log_.Warn("job_failed", {{"job", e.id}, {"reason", reason}});
  }
  AppendRecord({store::RecordKind::kJobFinished, e.id, e.finished_at, "", EncodeEnd(state, reason)});
}

ApiResult Service::ApplyTaskExit(NodeId node, int64_t job, int32_t generation, int32_t task, bool lost,
                                 int32_t code, int32_t attempt) {
  const std::string& name = cluster_->node(node).name;
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return ApiResult::Error(404, "no job " + std::to_string(job));
  JobEntry& e = it->second;
  const std::string run = "job " + std::to_string(job) + " run " + std::to_string(generation);
  if (e.state != JobState::kRunning || e.generation != generation)
    return ApiResult::Error(409, run + " is not running (the job is " + job::JobStateName(e.state) + ", run " +
                                     std::to_string(e.generation) + ")");
  const framework::TaskPlacement* p = nullptr;
  for (const auto& q : e.placements)
    if (q.task.index == task) p = &q;
  if (!p || p->alloc.node != node)
    return ApiResult::Error(409, "task " + std::to_string(task) + " of " + run + " does not run on node " + Cut(name));
  if (attempt != e.attempt(task))
    return ApiResult::Error(409, "attempt " + std::to_string(attempt) + " of task " + std::to_string(task) + " of " +
                                     run + " is not its current attempt (" + std::to_string(e.attempt(task)) + ")");
  if (e.task_exits.count(task)) return ApiResult{200, {{"job", job}, {"task", task}, {"recorded", false}}};
  e.task_exits[task] = lost ? -1 : code;
  log_.Info("task_exited", {{"job", job}, {"generation", generation}, {"task", task}, {"attempt", attempt},
                            {"node", name}, {"exit_code", lost ? json(nullptr) : json(code)}, {"lost", lost}});
  if (lost) {
    // The process vanished with its supervisor (the machine restarted): a
    // failure of the node, not of the program. The gang restarts, or this
    // task alone as a new attempt (--repair in-place).
    e.task_exits.erase(task);
    FailJob(e, {task}, node, 0, "task " + std::to_string(task) + " lost on node " + name);
    dirty_ = true;
  } else if (code != 0) {
    EndJob(e, JobState::kFailed,
           "task " + std::to_string(task) + " exited with status " + std::to_string(code) + " on node " + name);
  } else if (e.task_exits.size() == e.placements.size()) {
    EndJob(e, JobState::kSucceeded, "");
  }
  return ApiResult{200, {{"job", job}, {"task", task}, {"recorded", true}}};
}

// ------------------------------------------------------------------ the node API

ApiResult Service::AgentRegister(const std::string& body) {
  if (!options_.agent_nodes)
    return ApiResult::Error(404, "this server runs no node agents (serve with --node-token-file and no --cluster)");
  auto reg = ParseAgentRegistration(body);
  if (!reg.ok()) return ApiResult::Error(400, reg.status().message());
  if (!ready_) return NotReady();
  struct Out {
    ApiResult result;
    std::shared_future<Status> durable;
  };
  auto r = std::make_shared<AgentRegistration>(std::move(reg).value());
  auto out = Call<Out>([this, r]() -> Out {
    auto it = agents_.find(r->name);
    if (it != agents_.end() && it->second.agent_id != r->agent_id) {
      auto n = cluster_->FindNode(r->name);
      if (n && nodes_[n->value()].up)
        return {ApiResult::Error(409, "node name '" + Cut(r->name) + "' is registered by another agent (agent_id " +
                                          Cut(it->second.agent_id) +
                                          ") that is alive; give this one another --name, or stop the other"),
                {}};
    }
    const std::string stored = EncodeAgentRegistration(*r);
    const bool same = it != agents_.end() && it->second.body == stored;
    ApiResult ok{200,
                 {{"node", r->name},
                  {"changed", !same},
                  {"heartbeat_interval_s", UsToSeconds(options_.heartbeat_interval)},
                  {"heartbeat_timeout_s", UsToSeconds(options_.heartbeat_timeout)},
                  {"kill_grace_s", UsToSeconds(options_.kill_grace)}}};
    auto beat = [&] {
      std::lock_guard<std::mutex> lock(beat_mu_);
      agent_beats_[r->name] = {r->agent_id, SteadyNowUs()};
    };
    if (same) {
      beat();
      return {ok, {}};
    }
    std::optional<AgentEntry> before;
    if (it != agents_.end()) before = it->second;
    agents_[r->name] = AgentEntry{r->agent_id, r->ToNodeSpec(), stored, GpuIndexes(*r)};
    if (Status s = RebuildAgentCluster("node " + r->name + " registered"); !s.ok()) {
      if (before) {
        agents_[r->name] = *before;
      } else {
        agents_.erase(r->name);
      }
      return {ApiResult::Error(422, "node '" + Cut(r->name) + "' cannot join the cluster: " + s.message()), {}};
    }
    beat();
    SetNodeAddress(r->name, r->address);
    log_.Info("node_registered", {{"node", r->name}, {"agent_id", r->agent_id}, {"gpus", r->gpus.size()},
                                  {"gpu_type", r->gpus.empty() ? "" : r->gpus[0].type}});
    auto promise = std::make_shared<std::promise<Status>>();
    Out o{ok, promise->get_future().share()};
    AppendRecord({store::RecordKind::kNodeRegistered, -1, clock_.Now(), r->name, stored},
                 [promise](const Status& st) { promise->set_value(st); });
    return o;
  });
  if (!out) return ApiResult::Error(503, "the scheduling loop did not answer in time");
  if (out->durable.valid()) {
    if (out->durable.wait_for(std::chrono::microseconds(options_.request_timeout)) != std::future_status::ready)
      return ApiResult::Error(503, "the store did not record the registration in time; retry");
    Status s = out->durable.get();
    if (!s.ok()) return ApiResult::Error(503, "registration not stored: " + s.message() + "; retry");
  }
  return out->result;
}

ApiResult Service::AgentHeartbeat(const std::string& body) {
  if (!options_.agent_nodes) return ApiResult::Error(404, "this server runs no node agents");
  auto hb = ParseAgentHeartbeat(body);
  if (!hb.ok()) return ApiResult::Error(400, hb.status().message());
  if (!ready_) return NotReady();
  {  // the arrival counts now, however busy the loop is
    std::lock_guard<std::mutex> lock(beat_mu_);
    auto it = agent_beats_.find(hb->name);
    if (it == agent_beats_.end()) return NotRegistered(hb->name);
    if (it->second.first != hb->agent_id)
      return ApiResult::Error(409, "node '" + Cut(hb->name) + "' is registered by another agent");
    it->second.second = SteadyNowUs();
  }
  auto h = std::make_shared<server::AgentHeartbeat>(std::move(hb).value());
  auto out = Call<ApiResult>([this, h]() -> ApiResult {
    auto n = cluster_->FindNode(h->name);
    if (!n) return NotRegistered(h->name);
    json refused = json::array();
    ApplyGpuHealth(*n, h->failed_gpus);
    for (const auto& t : h->tasks) {
      if (t.state == AgentTaskReport::State::kRunning) continue;
      ApiResult r = ApplyTaskExit(*n, t.job, t.generation, t.task, t.state == AgentTaskReport::State::kLost,
                                  t.exit_code, t.attempt);
      if (r.code != 200)
        refused.push_back(json{{"job", t.job}, {"generation", t.generation}, {"task", t.task}, {"attempt", t.attempt},
                               {"error", r.body.value("error", std::string())}});
    }
    json reply = {{"run", AgentRunList(*n)}, {"kill_grace_s", UsToSeconds(options_.kill_grace)}};
    if (!refused.empty()) reply["refused"] = std::move(refused);
    return ApiResult{200, std::move(reply)};
  });
  if (!out) return ApiResult::Error(503, "the scheduling loop did not answer in time");
  return *out;
}

ApiResult Service::AgentTaskStatus(const std::string& body) {
  if (!options_.agent_nodes) return ApiResult::Error(404, "this server runs no node agents");
  auto st = ParseAgentStatus(body);
  if (!st.ok()) return ApiResult::Error(400, st.status().message());
  if (!ready_) return NotReady();
  {
    std::lock_guard<std::mutex> lock(beat_mu_);
    auto it = agent_beats_.find(st->name);
    if (it == agent_beats_.end()) return NotRegistered(st->name);
    if (it->second.first != st->agent_id)
      return ApiResult::Error(409, "node '" + Cut(st->name) + "' is registered by another agent");
  }
  auto s = std::make_shared<AgentStatus>(std::move(st).value());
  auto out = Call<ApiResult>([this, s]() -> ApiResult {
    auto n = cluster_->FindNode(s->name);
    if (!n) return NotRegistered(s->name);
    const auto& r = s->report;
    return ApplyTaskExit(*n, r.job, r.generation, r.task, r.state == AgentTaskReport::State::kLost, r.exit_code,
                         r.attempt);
  });
  if (!out) return ApiResult::Error(503, "the scheduling loop did not answer in time");
  return *out;
}

ApiResult Service::AgentLogUpload(const std::string& name, const std::string& agent_id, int64_t job,
                                  int32_t generation, int32_t task, int64_t offset, const std::string& data,
                                  int32_t attempt) {
  if (!options_.agent_nodes) return ApiResult::Error(404, "this server runs no node agents");
  if (options_.agent_log_dir.empty()) return ApiResult::Error(404, "this server keeps no task logs");
  {
    std::lock_guard<std::mutex> lock(beat_mu_);
    auto it = agent_beats_.find(name);
    if (it == agent_beats_.end()) return NotRegistered(name);
    if (it->second.first != agent_id) return ApiResult::Error(409, "node '" + Cut(name) + "' is registered by another agent");
  }
  auto snap = views_.Current();
  const JobView* v = snap->Job(job);
  if (!v || !v->durable) return ApiResult::Error(404, "no job " + std::to_string(job));
  if (generation < 1 || generation > v->generation)
    return ApiResult::Error(409, "job " + std::to_string(job) + " has no run " + std::to_string(generation));
  if (task < 0 || task >= v->spec->num_tasks())
    return ApiResult::Error(404, "job " + std::to_string(job) + " has no task " + std::to_string(task));
  if (v->state == JobState::kRunning && v->generation == generation && snap->cluster) {
    bool here = false;
    for (const auto& p : *v->placements)
      if (p.task.index == task && snap->cluster->node(p.alloc.node).name == name) here = true;
    if (!here)
      return ApiResult::Error(409, "task " + std::to_string(task) + " of job " + std::to_string(job) +
                                       " does not run on node " + Cut(name));
  }
  const std::string path = LogPath(options_.agent_log_dir, job, task, generation, attempt);
  std::lock_guard<std::mutex> lock(log_mu_);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec) return ApiResult::Error(500, "cannot create the log directory: " + ec.message());
  const int64_t size = std::filesystem::exists(path, ec) ? static_cast<int64_t>(std::filesystem::file_size(path, ec)) : 0;
  if (offset < size && offset + static_cast<int64_t>(data.size()) <= size)
    return ApiResult{200, {{"size", size}}};  // a retry of what is already here
  if (offset != size && size < options_.max_log_bytes)
    return ApiResult{409, {{"error", "the log has " + std::to_string(size) + " bytes; send from there"}, {"size", size}}};
  const int64_t room = std::max<int64_t>(0, options_.max_log_bytes - size);
  const int64_t skip = offset < size ? size - offset : 0;
  const int64_t take = std::min<int64_t>(room, static_cast<int64_t>(data.size()) - skip);
  if (take > 0) {
    std::ofstream f(path, std::ios::binary | std::ios::app);
    f.write(data.data() + skip, take);
    if (!f) return ApiResult::Error(500, "cannot write the log");
  }
  return ApiResult{200, {{"size", size + std::max<int64_t>(0, take)}, {"truncated", take < static_cast<int64_t>(data.size()) - skip}}};
}

ApiResult Service::JobLogs(int64_t id, int32_t task, int32_t generation) {
  if (options_.agent_log_dir.empty()) return ApiResult::Error(404, "this server keeps no task logs (no node agents)");
  auto snap = views_.Current();
  const JobView* v = snap->Job(id);
  if (!v || !v->durable) return ApiResult::Error(404, "no job " + std::to_string(id));
  if (task < 0 || task >= v->spec->num_tasks())
    return ApiResult::Error(404, "job " + std::to_string(id) + " has no task " + std::to_string(task) + " (it has " +
                                     std::to_string(v->spec->num_tasks()) + ")");
  int32_t from = generation >= 1 ? generation : v->generation;
  int32_t to = generation >= 1 ? generation : 1;
  std::lock_guard<std::mutex> lock(log_mu_);
  for (int32_t g = from; g >= to; --g) {
    // The run's latest attempt of the task (in-place repairs restart a task
    // as attempt 1, 2, ...; each keeps its own log).
    int32_t attempt = 0;
    std::error_code ec;
    while (attempt < 1'000'000 &&
           std::filesystem::exists(LogPath(options_.agent_log_dir, id, task, g, attempt + 1), ec))
      ++attempt;
    const std::string path = LogPath(options_.agent_log_dir, id, task, g, attempt);
    std::ifstream f(path, std::ios::binary);
    if (!f) continue;
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    return ApiResult{200,
                     {{"job", id}, {"task", task}, {"generation", g}, {"attempt", attempt}, {"text", std::move(text)}}};
  }
  return ApiResult::Error(404, "no log yet for task " + std::to_string(task) + " of job " + std::to_string(id));
}

}  // namespace berth::server
