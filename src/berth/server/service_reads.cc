// The read side of the API: job documents, "why", queues, nodes and metrics
// (the admin API is service_admin.cc). Reads never run on the scheduling thread: they answer from
// the snapshot it last published (service_views.cc), so a flood of them cannot
// delay scheduling or heartbeats; large ones take a ReadGate slot.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <unordered_set>

#include "berth/common/clock.h"
#include "berth/server/job_json.h"
#include "berth/server/launch_json.h"
#include "berth/server/queue_metrics.h"
#include "berth/server/queue_views.h"
#include "berth/server/records.h"
#include "berth/server/service.h"
#include "berth/workload/launch.h"

namespace berth::server {

using job::JobState;
using nlohmann::json;

namespace {

// Node-local GPU positions in a mask, as a list.
json GpuList(uint64_t mask) {
  json out = json::array();
  for (int g = 0; g < 64; ++g)
    if (mask >> g & 1) out.push_back(g);
  return out;
}

json Seconds(TimeUs t) { return t < 0 ? json(nullptr) : json(UsToSeconds(t)); }

std::string FormatGpus(int64_t milli) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", static_cast<double>(milli) / kMilliPerGpu);
  return milli % kMilliPerGpu == 0 ? std::to_string(milli / kMilliPerGpu) : std::string(buf);
}

json VerdictJson(const JobView& v) {
  if (!v.tried) return nullptr;  // not tried yet
  json rejects = json::array();
  for (const auto& r : v.verdict.rejects) rejects.push_back({{"reason", r.reason}, {"nodes", r.nodes}});
  return {{"code", framework::VerdictCodeName(v.verdict.code)}, {"plugin", v.verdict.plugin},
          {"reason", v.verdict.reason}, {"rejects", rejects}, {"attempts", v.attempts}};
}

json JobJson(const cluster::Cluster& cluster, const JobView& e, bool detail) {
  const job::JobSpec& spec = *e.spec;
  json j = {{"id", e.id},
            {"name", spec.name},
            {"state", job::JobStateName(e.state)},
            {"queue", e.queue},
            {"tenant", spec.tenant},
            {"gpus", spec.total_gpus()},
            {"submitted_at", Seconds(e.accepted_at)},
            {"started_at", Seconds(e.state == JobState::kPending ? -1 : e.started_at)},
            {"finished_at", Seconds(e.finished_at)}};
  // The nodes in the order of their first task (linear in the placements).
  json nodes = json::array();
  std::unordered_set<int32_t> seen;
  for (const auto& p : *e.placements)
    if (seen.insert(p.alloc.node.value()).second) nodes.push_back(cluster.node(p.alloc.node).name);
  j["nodes"] = std::move(nodes);
  j["why"] = e.why;
  // The capacity class of the current run: guaranteed, or best-effort (beyond its queue's guarantee, or over budget).
  if (e.state == JobState::kRunning && e.has_record) {
    j["class"] = framework::RunClassName(e.run_class);
    if (e.run_class != framework::RunClass::kGuaranteed) j["class_reason"] = framework::RunClassReason(e.run_class);
  }
  if (!detail) return j;
  j["idempotency_key"] = e.key;
  j["spec"] = JobToJson(spec);
  j["requeues"] = e.requeues;
  j["starts"] = e.generation;
  j["repairs"] = e.repairs;
  if (e.has_record) {
    j["preemptions"] = e.preemptions;
    // The current run's work begins this long after it started (the grace of
    // the jobs it evicted, --preemption-grace).
    if (e.state == JobState::kRunning) j["startup_delay_s"] = UsToSeconds(e.startup_delay);
  }
  if (!e.end_reason.empty()) j["reason"] = e.end_reason;
  if (!e.unfit.empty()) j["unfit"] = e.unfit;  // pending: the cluster changed and the job no longer fits
  json placements = json::array();
  for (const auto& p : *e.placements) {
    json gpus = json::array();
    for (int g = 0; g < 64; ++g)
      if (p.alloc.gpu_mask >> g & 1) gpus.push_back(g);
    placements.push_back({{"task", p.task.index},
                          {"node", cluster.node(p.alloc.node).name},
                          {"gpus", gpus},
                          {"milli_per_gpu", p.alloc.milli_per_gpu}});
    if (auto a = e.task_attempts.find(p.task.index); a != e.task_attempts.end())
      placements.back()["attempt"] = a->second;  // restarted in place this run
    // Isolation limits for the runtime (docs/launch.md), when the task has any.
    const workload::IsolationLimits lim = workload::IsolationOf(p.alloc);
    if (lim.gpu_memory_mib > 0) placements.back()["gpu_memory_limit_mib"] = lim.gpu_memory_mib;
    if (lim.active_thread_percent > 0) placements.back()["compute_percent"] = lim.active_thread_percent;
  }
  j["placements"] = std::move(placements);
  if (e.state == JobState::kPending) j["verdict"] = VerdictJson(e);
  // A Kubernetes extender job: its pod group and the pods Berth knows of it.
  if (!e.extender.is_null()) j["extender"] = e.extender;
  return j;
}

// Calls fn(view) for every job view in id order, until fn returns false.
template <typename Fn>
void ForEachJob(const ReadSnapshot& s, int64_t after, Fn&& fn) {
  const int64_t first = after < 0 ? 0 : after + 1;
  for (size_t c = static_cast<size_t>(first / kJobsPerChunk); c < s.chunks.size(); ++c) {
    if (!s.chunks[c]) continue;
    const size_t from = c == static_cast<size_t>(first / kJobsPerChunk) ? static_cast<size_t>(first % kJobsPerChunk) : 0;
    for (size_t i = from; i < static_cast<size_t>(kJobsPerChunk); ++i) {
      const JobView* v = s.chunks[c]->jobs[i].get();
      if (v && !fn(*v)) return;
    }
  }
}

}  // namespace

ApiResult Service::GetJob(int64_t id) {
  auto snap = views_.Current();
  const JobView* v = snap->Job(id);
  if (!v) {
    if (auto w = WorkflowView(id)) return ApiResult{200, std::move(*w)};
    return ApiResult::Error(404, "no job " + std::to_string(id));
  }
  if (v->placements->size() <= 1000) return ApiResult{200, JobJson(*snap->cluster, *v, true)};
  ReadGate::Slot slot(*read_gate_);  // a large gang: a large answer
  return ApiResult{200, JobJson(*snap->cluster, *v, true)};
}

ApiResult Service::GetLaunch(int64_t id) {
  auto snap = views_.Current();
  const JobView* v = snap->Job(id);
  if (!v) {
    if (WorkflowView(id))
      return ApiResult::Error(409, "job " + std::to_string(id) +
                                       " is a workflow: ask for the launch spec of a stage's job (its \"stages\" list them)");
    return ApiResult::Error(404, "no job " + std::to_string(id));
  }
  if (v->state != JobState::kRunning || v->placements->empty())
    return ApiResult::Error(409, "job " + std::to_string(id) + " is " + job::JobStateName(v->state) +
                                     ": it has a launch spec only while placed (running)");
  workload::LaunchOptions o = options_.launch;
  {
    std::lock_guard<std::mutex> lock(addresses_mu_);
    if (!node_addresses_.empty()) {
      auto book = std::make_shared<const std::map<std::string, std::string>>(node_addresses_);
      auto fallback = o.node_address;
      o.node_address = [book, fallback](const std::string& node) -> std::optional<std::string> {
        if (auto it = book->find(node); it != book->end()) return it->second;
        return fallback ? fallback(node) : std::nullopt;
      };
    }
  }
  job::JobSpec spec = *v->spec;
  spec.id = JobId(id);
  o.rank_order = v->rank_order;  // ranks kept through in-place repairs
  auto launch = workload::ComputeLaunchSpec(*snap->cluster, spec, *v->placements, o);
  if (!launch.ok()) return ApiResult::Error(500, "launch spec of job " + std::to_string(id) + ": " + launch.status().message());
  return ApiResult{200, LaunchSpecJson(*launch)};
}

void Service::SetNodeAddress(const std::string& node, const std::string& address) {
  std::lock_guard<std::mutex> lock(addresses_mu_);
  if (address.empty())
    node_addresses_.erase(node);
  else
    node_addresses_[node] = address;
}

ApiResult Service::WhyJob(int64_t id) {
  auto snap = views_.Current();
  const JobView* v = snap->Job(id);
  if (!v) return ApiResult::Error(404, "no job " + std::to_string(id));
  json j = {{"id", id}, {"state", job::JobStateName(v->state)}};
  switch (v->state) {
    case JobState::kPending: {
      json verdict = VerdictJson(*v);
      j["verdict"] = verdict;
      if (!v->unfit.empty()) {
        j["why"] = v->unfit;  // outside the scheduler until the cluster holds it again
      } else if (verdict.is_null()) {
        j["why"] = v->durable ? "queued; not yet tried by the scheduler" : "being stored";
      } else {
        j["why"] = verdict["reason"];
        // Submitted earlier and still waiting: whole chunks by their counts.
        int64_t ahead = 0;
        const size_t mine = static_cast<size_t>(id / kJobsPerChunk);
        for (size_t c = 0; c < mine && c < snap->chunks.size(); ++c)
          if (snap->chunks[c]) ahead += snap->chunks[c]->pending;
        for (int64_t i = mine * kJobsPerChunk; i < id; ++i)
          if (const JobView* o = snap->Job(i); o && o->durable && o->state == JobState::kPending) ++ahead;
        j["pending_ahead"] = ahead;
      }
      break;
    }
    case JobState::kRunning: j["why"] = "running"; break;
    default: j["why"] = v->end_reason.empty() ? std::string(job::JobStateName(v->state)) : v->end_reason;
  }
  return ApiResult{200, j};
}

ApiResult Service::ListJobs(const std::string& state, int64_t after, int64_t limit, bool as_text) {
  std::optional<JobState> want;
  if (!state.empty()) {
    for (auto s : {JobState::kPending, JobState::kRunning, JobState::kSucceeded, JobState::kFailed,
                   JobState::kCancelled})
      if (state == job::JobStateName(s)) want = s;
    if (!want) return ApiResult::Error(400, "state: '" + state + "' is not one of pending, running, succeeded, failed, cancelled");
  }
  if (limit <= 0 || limit > 10000) return ApiResult::Error(400, "limit: must be in 1..10000");
  auto snap = views_.Current();
  ReadGate::Slot slot(*read_gate_);
  json items = json::array();
  std::string text = "{\"jobs\":[";
  int64_t count = 0;
  int64_t last = after;
  bool more = false;
  ForEachJob(*snap, after, [&](const JobView& v) {
    if (!v.durable) return true;
    if (want && v.state != *want) return true;
    if (count == limit) {
      more = true;
      return false;
    }
    if (as_text) {
      // Each item is serialized once per view and then copied: a page of
      // 1,000 running jobs read again and again costs a copy of its text.
      std::lock_guard<std::mutex> lock(v.list_text.mu);
      if (v.list_text.cluster != snap->cluster.get() || v.list_text.text.empty()) {
        v.list_text.text = JobJson(*snap->cluster, v, false).dump(-1, ' ', false, json::error_handler_t::replace);
        v.list_text.cluster = snap->cluster.get();
      }
      if (count > 0) text += ',';
      text += v.list_text.text;
    } else {
      items.push_back(JobJson(*snap->cluster, v, false));
    }
    ++count;
    last = v.id;
    return true;
  });
  if (as_text) {  // the same text as dumping the document below (keys in order)
    text += ']';
    if (more) text += ",\"next_after\":" + std::to_string(last);
    text += '}';
    ApiResult r{200, nullptr};
    r.text = std::move(text);
    return r;
  }
  json j = {{"jobs", std::move(items)}};
  if (more) j["next_after"] = last;
  return ApiResult{200, j};
}

// Every queue of the scheduler's tree (sorted by name), with its jobs and the
// ledger's figures: per dimension ("*" = all GPU types, then each GPU type
// where the queue has a quota or uses GPUs) the quota (null = not set or
// unlimited), usage and borrowing, in the tree's unit ("unit": GPUs, or
// "normalized": reference GPUs of "reference"). Jobs and figures of an inner
// queue cover its subtree. Jobs not yet in the scheduler's tree are counted
// under their queue's name.
ApiResult Service::Queues() {
  auto snap = views_.Current();
  if (!snap->queues) return ApiResult::Error(503, "the state is not loaded yet");
  ReadGate::Slot slot(*read_gate_);
  struct Q {
    int64_t pending = 0, running = 0, pending_gpus = 0, running_gpus = 0;
  };
  const QueueViews& qv = *snap->queues;
  const int32_t size = static_cast<int32_t>(qv.names.size());
  std::vector<Q> in_tree(size);
  std::map<std::string, Q> outside;
  std::vector<int64_t> best_effort(size, 0);
  static const QueueTallies kNone;
  for (const auto& [where, t] : snap->tallies ? *snap->tallies : kNone) {
    auto add = [&t](Q& x) {
      x.pending += t.pending;
      x.running += t.running;
      x.pending_gpus += t.pending_gpus;
      x.running_gpus += t.running_gpus;
    };
    int32_t q = where.second;
    if (q < 0 || q >= size) {
      add(outside[where.first]);
      continue;
    }
    for (; q >= 0; q = qv.parents[q]) {
      add(in_tree[q]);
      best_effort[q] += t.running_best_effort;
    }
  }
  std::map<std::string, json> items;
  for (int32_t q = 0; q < size; ++q) {
    json item = qv.items[q];
    item["pending"] = in_tree[q].pending;
    item["running"] = in_tree[q].running;
    item["pending_gpus"] = in_tree[q].pending_gpus;
    item["running_gpus"] = in_tree[q].running_gpus;
    items[qv.names[q]] = std::move(item);
  }
  for (const auto& [name, c] : outside) {
    json& item = items[name];
    item["name"] = name;
    item["pending"] = item.value("pending", int64_t{0}) + c.pending;
    item["running"] = item.value("running", int64_t{0}) + c.running;
    item["pending_gpus"] = item.value("pending_gpus", int64_t{0}) + c.pending_gpus;
    item["running_gpus"] = item.value("running_gpus", int64_t{0}) + c.running_gpus;
  }
  // Running jobs by capacity class (best effort: beyond guarantee or over budget).
  for (int32_t q = 0; q < size; ++q) items[qv.names[q]]["running_best_effort"] = best_effort[q];
  return ApiResult{200, QueuesBody(std::move(items), qv)};
}

Status Service::CheckReadTallies() {
  auto snap = views_.Current();
  QueueTallies recount;
  ForEachJob(*snap, -1, [&](const JobView& v) {
    TallyJob(recount, v, +1);
    return true;
  });
  static const QueueTallies kNone;
  const QueueTallies& kept = snap->tallies ? *snap->tallies : kNone;
  if (kept == recount) return Status::Ok();
  auto line = [](const QueueTallies& t, const std::pair<std::string, int32_t>& k) {
    auto it = t.find(k);
    if (it == t.end()) return std::string("none");
    const QueueTally& x = it->second;
    return std::to_string(x.pending) + " pending, " + std::to_string(x.running) + " running, " +
           std::to_string(x.pending_gpus) + "/" + std::to_string(x.running_gpus) + " GPUs, " +
           std::to_string(x.running_best_effort) + " best effort";
  };
  for (const QueueTallies* side : {&kept, static_cast<const QueueTallies*>(&recount)})
    for (const auto& [k, t] : *side)
      if (kept.count(k) == 0 || recount.count(k) == 0 || kept.at(k) != recount.at(k))
        return Internal("read tallies: queue '" + k.first + "' (index " + std::to_string(k.second) + "): kept " +
                        line(kept, k) + ", recounted " + line(recount, k));
  return Internal("read tallies differ");
}

ApiResult Service::Nodes() {
  auto snap = views_.Current();
  if (!snap->nodes) return ApiResult::Error(503, "the state is not loaded yet");
  ReadGate::Slot slot(*read_gate_);
  json items = json::array();
  const TimeUs steady_now = SteadyNowUs();
  const cluster::Cluster& cl = *snap->cluster;
  std::unordered_map<std::string, std::pair<std::string, TimeUs>> beats;
  if (options_.agent_nodes) {
    std::lock_guard<std::mutex> lock(beat_mu_);
    beats = agent_beats_;
  }
  for (int32_t i = 0; i < cl.num_nodes() && i < static_cast<int32_t>(snap->nodes->size()); ++i) {
    const auto& node = cl.node(NodeId(i));
    const NodeView& nv = (*snap->nodes)[i];
    json j = {{"name", node.name},
              {"gpu_type", node.gpu_type.valid() ? cl.gpu_type(node.gpu_type).name : ""},
              {"gpus", node.gpu_count},
              {"gpus_used_milli", nv.gpus_used_milli},
              {"tasks", nv.tasks},
              {"up", nv.up},
              {"quarantined", nv.quarantined},
              {"spare", nv.spare},
              {"draining", nv.draining},
              {"failed_gpus", GpuList(nv.failed_gpus)},
              {"failures", nv.failures},
              {"leaf", cl.domain(node.domain[static_cast<int>(cluster::Level::kLeaf)]).name},
              {"spine", cl.domain(node.domain[static_cast<int>(cluster::Level::kSpine)]).name}};
    if (options_.virtual_nodes)
      j["heartbeat_age_s"] = UsToSeconds(steady_now - beat_at_[i].load(std::memory_order_relaxed));
    if (auto b = beats.find(node.name); b != beats.end()) j["heartbeat_age_s"] = UsToSeconds(steady_now - b->second.second);
    items.push_back(std::move(j));
  }
  return ApiResult{200, {{"nodes", std::move(items)}}};
}

std::string Service::MetricsText() {
  std::string out;
  auto counter = [&](const char* name, const char* help, uint64_t v) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" + name + " " +
           std::to_string(v) + "\n";
  };
  counter("berth_jobs_submitted_total", "Jobs accepted and made durable.", metrics_.jobs_submitted);
  counter("berth_jobs_duplicate_total", "Retried submissions answered with the first id.", metrics_.jobs_duplicate);
  counter("berth_jobs_rejected_total", "Submissions refused as invalid (4xx).", metrics_.jobs_rejected);
  out += "# HELP berth_build_info The version, git commit and build type of this berth (value 1).\n"
         "# TYPE berth_build_info gauge\nberth_build_info{version=\"" + PromLabel(metrics_.build_version) +
         "\",commit=\"" + PromLabel(metrics_.build_commit) + "\",build_type=\"" + PromLabel(metrics_.build_type) +
         "\"} 1\n";
  counter("berth_decisions_total", "Jobs placed by the scheduler (rate() gives decisions/s; the same as berth_jobs_placed_total).",
          metrics_.decisions);
  counter("berth_jobs_placed_total", "Job placements made by the scheduler (a requeued job counts again).", metrics_.decisions);
  out += "# HELP berth_jobs_finished_total Jobs that ended, by outcome (succeeded, failed, cancelled).\n"
         "# TYPE berth_jobs_finished_total counter\n";
  for (auto [outcome, n] : {std::pair{"succeeded", metrics_.jobs_finished.load()},
                            {"failed", metrics_.jobs_failed.load()}, {"cancelled", metrics_.jobs_cancelled.load()}})
    out += std::string("berth_jobs_finished_total{outcome=\"") + outcome + "\"} " + std::to_string(n) + "\n";
  counter("berth_jobs_requeued_total", "Running jobs sent back to the queue (node failures, preemption).", metrics_.jobs_requeued);
  counter("berth_preemptions_total", "Running jobs evicted by preemption for another job.", metrics_.preemptions);
  counter("berth_scheduling_passes_total", "Scheduling passes over the pending queue.", metrics_.scheduling_passes);
  counter("berth_scheduling_pass_splits_total", "Passes stopped by their time budget (--pass-budget) and continued.",
          metrics_.pass_splits);
  counter("berth_node_failures_total", "Nodes declared down.", metrics_.node_failures);
  counter("berth_gpu_failures_total", "GPUs node agents reported failed.", metrics_.gpu_failures);
  counter("berth_gang_repairs_total", "Gangs repaired in place after a failure (--repair in-place).",
          metrics_.gang_repairs);
  counter("berth_tasks_repaired_total", "Tasks restarted alone as a new attempt by in-place repairs.",
          metrics_.tasks_repaired);
  counter("berth_repair_fallbacks_total", "In-place repairs that found no replacement; the gang was requeued.",
          metrics_.repair_fallbacks);
  counter("berth_spares_used_total", "Hot spare nodes taken by in-place repairs.", metrics_.spares_used);
  counter("berth_failures_learned_total",
          "Node and GPU failures fed to the policy's failure history (topology-reliable).", metrics_.failures_learned);
  out += "# HELP berth_failure_history_entries Node and GPU failures in the failure history (kept in the store "
         "across restarts; at most 100000).\n"
         "# TYPE berth_failure_history_entries gauge\nberth_failure_history_entries " +
         std::to_string(metrics_.failure_history.load()) + "\n";
  counter("berth_heartbeats_late_total", "Heartbeats that arrived longer than the timeout after the node's last.",
          metrics_.heartbeats_late);
  counter("berth_heartbeat_graces_total", "Times the heartbeat checker had not run for a timeout and gave every node a fresh one.",
          metrics_.heartbeat_graces);
  counter("berth_store_commits_total", "Store transactions committed.", metrics_.store_commits);
  counter("berth_store_records_total", "Records made durable.", metrics_.store_records);
  counter("berth_store_errors_total", "Store appends that failed.", metrics_.store_errors);
  metrics_.http_by_route.Render("berth_http_requests_total",
                                "HTTP requests answered, by method, handler (the route's pattern) and status code.", out);
  counter("berth_http_errors_total", "HTTP requests answered 4xx or 5xx.", metrics_.http_errors);
  metrics_.decision_latency.Render("berth_decision_latency_seconds",
                                   "Wall time of a scheduling pass that placed at least one job.", out);
  metrics_.pass_latency.Render("berth_scheduling_pass_seconds", "Wall time of every scheduling pass.", out);
  metrics_.pass_cpu.Render("berth_scheduling_pass_cpu_seconds",
                           "CPU time the scheduling thread spent in every scheduling pass.", out);
  counter("berth_scheduling_passes_preempted_total",
          "Scheduling passes during which another thread was given the scheduling thread's core.",
          metrics_.passes_preempted);
  counter("berth_scheduling_passes_blocked_total",
          "Scheduling passes during which the scheduling thread slept (waiting for a lock or the kernel).",
          metrics_.passes_blocked);
  counter("berth_scheduling_passes_faulted_total", "Scheduling passes that took a page fault.",
          metrics_.passes_faulted);
  out += "# HELP berth_scheduling_thread_nice The scheduling thread's nice value (--scheduler-nice, when allowed).\n"
         "# TYPE berth_scheduling_thread_nice gauge\nberth_scheduling_thread_nice " +
         std::to_string(metrics_.scheduler_nice.load()) + "\n";
  out += "# HELP berth_scheduling_thread_rt_priority The scheduling thread's SCHED_FIFO priority (--scheduler-rt-priority; 0: not real-time).\n"
         "# TYPE berth_scheduling_thread_rt_priority gauge\nberth_scheduling_thread_rt_priority " +
         std::to_string(metrics_.scheduler_rt_priority.load()) + "\n";
  metrics_.loop_turn.Render("berth_loop_turn_seconds",
                            "Wall time of every turn of the scheduling loop (work handed in, checks, publishing, "
                            "the pass).", out);
  out += "# HELP berth_loop_turn_max_seconds Longest turn of the scheduling loop so far.\n"
         "# TYPE berth_loop_turn_max_seconds gauge\nberth_loop_turn_max_seconds " +
         std::to_string(UsToSeconds(metrics_.loop_turn_max_us.load(std::memory_order_relaxed))) + "\n";
  counter("berth_loop_turns_slow_total",
          "Turns of the scheduling loop longer than a quarter of the heartbeat timeout (each logged as slow_turn).",
          metrics_.loop_turns_slow);
  metrics_.commit_latency.Render("berth_store_commit_seconds", "Store batch arrival to durable (group commit).", out);
  metrics_.commit_batch.Render("berth_store_commit_records", "Records per store commit.", out);
  metrics_.submit_latency.Render("berth_submit_seconds", "POST /v1/jobs received to answered.", out);
  metrics_.admission_wait.Render("berth_admission_wait_seconds",
                                 "From a job's acceptance to its first start (queueing delay).", out);
  RenderProcessMetrics(out);
  out += "# HELP berth_heartbeat_gap_max_seconds Longest gap between two heartbeats of one node so far.\n"
         "# TYPE berth_heartbeat_gap_max_seconds gauge\nberth_heartbeat_gap_max_seconds " +
         std::to_string(UsToSeconds(beat_gap_max_.load(std::memory_order_relaxed))) + "\n";
  auto snap = views_.Current();
  if (snap->nodes) {
    ReadGate::Slot slot(*read_gate_);
    std::string g;
    std::map<std::string, int64_t> pending_by_queue, running_by_queue, best_effort_by_queue;
    if (snap->tallies) {
      for (const auto& [where, t] : *snap->tallies) {
        if (t.pending > 0) pending_by_queue[where.first] += t.pending;
        if (t.running > 0) running_by_queue[where.first] += t.running;
        if (t.running_best_effort > 0) best_effort_by_queue[where.first] += t.running_best_effort;
      }
    }
    const QueueViews no_queues;
    RenderQueueMetrics(snap->queues ? *snap->queues : no_queues, pending_by_queue, running_by_queue, g);
    g += "# HELP berth_queue_running_best_effort_jobs Jobs running as best effort (beyond guarantee or over budget), "
         "per queue.\n# TYPE berth_queue_running_best_effort_jobs gauge\n";
    for (const auto& [q, n] : best_effort_by_queue)
      g += "berth_queue_running_best_effort_jobs{queue=\"" + PromLabel(q) + "\"} " + std::to_string(n) + "\n";
    if (snap->queues && !snap->queues->budgets.empty()) {
      const auto& bs = snap->queues->budgets;
      g += "# HELP berth_queue_budget Budget per period, per queue (unit: GPU-hours, reference-GPU-hours or money).\n"
           "# TYPE berth_queue_budget gauge\n";
      for (const auto& b : bs)
        g += "berth_queue_budget{queue=\"" + PromLabel(b.queue) + "\",unit=\"" + PromLabel(b.unit) + "\"} " +
             std::to_string(b.amount) + "\n";
      g += "# HELP berth_queue_budget_spent Spent in the current budget period, per queue.\n"
           "# TYPE berth_queue_budget_spent gauge\n";
      for (const auto& b : bs)
        g += "berth_queue_budget_spent{queue=\"" + PromLabel(b.queue) + "\",unit=\"" + PromLabel(b.unit) + "\"} " +
             std::to_string(b.spent) + "\n";
      g += "# HELP berth_queue_budget_exhausted 1 when the queue's budget is spent.\n"
           "# TYPE berth_queue_budget_exhausted gauge\n";
      for (const auto& b : bs)
        g += "berth_queue_budget_exhausted{queue=\"" + PromLabel(b.queue) + "\"} " + (b.exhausted ? "1" : "0") + "\n";
    }
    const cluster::Cluster& cl = *snap->cluster;
    std::vector<int64_t> milli(cl.gpu_types().size(), 0), total(cl.gpu_types().size(), 0);
    int64_t nodes_up = 0, quarantined = 0;
    for (int32_t i = 0; i < cl.num_nodes() && i < static_cast<int32_t>(snap->nodes->size()); ++i) {
      const auto& node = cl.node(NodeId(i));
      const NodeView& nv = (*snap->nodes)[i];
      nodes_up += nv.up;
      quarantined += nv.quarantined;
      if (!node.gpu_type.valid()) continue;
      total[node.gpu_type.value()] += node.gpu_count;
      milli[node.gpu_type.value()] += nv.gpus_used_milli;
    }
    g += "# HELP berth_gpus_allocated GPUs allocated to running tasks, per GPU type.\n"
         "# TYPE berth_gpus_allocated gauge\n";
    for (size_t t = 0; t < milli.size(); ++t)
      g += "berth_gpus_allocated{gpu_type=\"" + PromLabel(cl.gpu_types()[t].name) + "\"} " +
           FormatGpus(milli[t]) + "\n";
    g += "# HELP berth_gpus_capacity GPUs in the cluster, per GPU type.\n# TYPE berth_gpus_capacity gauge\n";
    for (size_t t = 0; t < total.size(); ++t)
      g += "berth_gpus_capacity{gpu_type=\"" + PromLabel(cl.gpu_types()[t].name) + "\"} " +
           std::to_string(total[t]) + "\n";
    g += "# HELP berth_nodes_up Nodes the scheduler may use.\n# TYPE berth_nodes_up gauge\nberth_nodes_up " +
         std::to_string(nodes_up) + "\n";
    g += "# HELP berth_nodes_quarantined Nodes kept out after repeated failures.\n"
         "# TYPE berth_nodes_quarantined gauge\nberth_nodes_quarantined " +
         std::to_string(quarantined) + "\n";
    out += g;
  }
  out += "# HELP berth_ready 1 when this process leads and has loaded its state.\n# TYPE berth_ready gauge\n";
  out += std::string("berth_ready ") + (ready_ ? "1" : "0") + "\n";
  return out;
}

}  // namespace berth::server
