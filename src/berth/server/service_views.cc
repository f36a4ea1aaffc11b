// The read side of the API: job documents, "why", queues, nodes, metrics.
// Every read runs on the scheduling thread (so it sees one consistent state).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include "berth/server/job_json.h"
#include "berth/server/service.h"

namespace berth::server {

using job::JobState;
using nlohmann::json;

namespace {
json Seconds(TimeUs t) { return t < 0 ? json(nullptr) : json(UsToSeconds(t)); }
std::string FormatGpus(int64_t milli) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", static_cast<double>(milli) / kMilliPerGpu);
  return milli % kMilliPerGpu == 0 ? std::to_string(milli / kMilliPerGpu) : std::string(buf);
}
}  // namespace

// The leaf queue the job is charged to: the scheduler's record of it, else
// where the queue tree would put it; a job the tree places nowhere (only
// while an auto-leaf tree has not made its leaf yet) is shown under the leaf
// it will get: its queue, else its tenant, else "default".
std::string Service::QueueOf(const JobEntry& e) const {
  const tenancy::QueueTree& tree = sched_->ledger().tree();
  const scheduler::JobRecord* rec = sched_->Find(JobId(e.id));
  const int32_t q = rec ? rec->queue : tree.LeafFor(e.spec);
  if (q >= 0 && q < tree.size()) return tree.node(q).name;
  if (!e.spec.queue.empty()) return e.spec.queue;
  if (!e.spec.tenant.empty()) return e.spec.tenant;
  return "default";
}

// One line on why the job is where it is: the last verdict's reason while
// pending, the end reason once finished, "" while running.
std::string Service::WhyLine(const JobEntry& e) const {
  if (e.state == JobState::kRunning) return "";
  if (e.state != JobState::kPending) return e.end_reason;
  if (!e.unfit.empty()) return e.unfit;
  const scheduler::JobRecord* rec = sched_->Find(JobId(e.id));
  if (!rec || (rec->last_verdict.ok() && rec->last_verdict.plugin.empty()))
    return e.durable ? "queued; not yet tried by the scheduler" : "being stored";
  return rec->last_verdict.reason;
}

json Service::VerdictJson(const JobEntry& e) const {
  const scheduler::JobRecord* rec = sched_->Find(JobId(e.id));
  if (!rec || (rec->last_verdict.ok() && rec->last_verdict.plugin.empty())) return nullptr;  // not tried yet
  const framework::Verdict& v = rec->last_verdict;
  json rejects = json::array();
  for (const auto& r : v.rejects) rejects.push_back({{"reason", r.reason}, {"nodes", r.nodes}});
  return {{"code", framework::VerdictCodeName(v.code)}, {"plugin", v.plugin}, {"reason", v.reason},
          {"rejects", rejects}, {"attempts", rec->attempts}};
}

json Service::JobJson(const JobEntry& e, bool detail) const {
  json j = {{"id", e.id},
            {"name", e.spec.name},
            {"state", job::JobStateName(e.state)},
            {"queue", QueueOf(e)},
            {"tenant", e.spec.tenant},
            {"gpus", e.spec.total_gpus()},
            {"submitted_at", Seconds(e.accepted_at)},
            {"started_at", Seconds(e.state == JobState::kPending ? -1 : e.started_at)},
            {"finished_at", Seconds(e.finished_at)}};
  json nodes = json::array();
  for (const auto& p : e.placements) {
    const std::string& n = cluster_.node(p.alloc.node).name;
    if (std::find(nodes.begin(), nodes.end(), n) == nodes.end()) nodes.push_back(n);
  }
  j["nodes"] = nodes;
  j["why"] = WhyLine(e);
  if (!detail) return j;
  j["idempotency_key"] = e.key;
  j["spec"] = JobToJson(e.spec);
  j["requeues"] = e.requeues;
  j["starts"] = e.generation;
  if (const scheduler::JobRecord* rec = sched_->Find(JobId(e.id))) {
    j["preemptions"] = rec->preemptions;
    // The current run's work begins this long after it started (the grace of
    // the jobs it evicted, --preemption-grace).
    if (e.state == JobState::kRunning) j["startup_delay_s"] = UsToSeconds(rec->startup_delay);
  }
  if (!e.end_reason.empty()) j["reason"] = e.end_reason;
  if (!e.unfit.empty()) j["unfit"] = e.unfit;  // pending: the cluster changed and the job no longer fits
  json placements = json::array();
  for (const auto& p : e.placements) {
    json gpus = json::array();
    for (int g = 0; g < 64; ++g)
      if (p.alloc.gpu_mask >> g & 1) gpus.push_back(g);
    placements.push_back({{"task", p.task.index},
                          {"node", cluster_.node(p.alloc.node).name},
                          {"gpus", gpus},
                          {"milli_per_gpu", p.alloc.milli_per_gpu}});
  }
  j["placements"] = placements;
  if (e.state == JobState::kPending) j["verdict"] = VerdictJson(e);
  // A Kubernetes extender job: its pod group and the pods Berth knows of it.
  if (auto k = ext_group_of_job_.find(e.id); k != ext_group_of_job_.end()) {
    const ExtGroup& g = ext_groups_.at(k->second);
    json pods = json::array();
    for (const auto& [uid, p] : g.pods)
      pods.push_back({{"name", p.name}, {"uid", uid}, {"task", p.task}, {"bound", p.bound}, {"node", p.node}});
    j["extender"] = {{"group", k->second}, {"bound", g.bound}, {"pods", pods}};
  }
  return j;
}

ApiResult Service::GetJob(int64_t id) {
  auto r = Call<ApiResult>([this, id] {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return ApiResult::Error(404, "no job " + std::to_string(id));
    return ApiResult{200, JobJson(it->second, true)};
  });
  return r ? *r : ApiResult::Error(503, "the scheduling loop did not answer in time");
}

ApiResult Service::WhyJob(int64_t id) {
  auto r = Call<ApiResult>([this, id] {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return ApiResult::Error(404, "no job " + std::to_string(id));
    const JobEntry& e = it->second;
    json j = {{"id", id}, {"state", job::JobStateName(e.state)}};
    switch (e.state) {
      case JobState::kPending: {
        json v = VerdictJson(e);
        j["verdict"] = v;
        if (v.is_null()) {
          j["why"] = e.durable ? "queued; not yet tried by the scheduler" : "being stored";
        } else {
          j["why"] = v["reason"];
          size_t ahead = 0;
          for (int64_t other : pending_)
            if (other < id) ++ahead;
          j["pending_ahead"] = ahead;  // submitted earlier and still waiting
        }
        break;
      }
      case JobState::kRunning: j["why"] = "running"; break;
      default: j["why"] = e.end_reason.empty() ? std::string(job::JobStateName(e.state)) : e.end_reason;
    }
    return ApiResult{200, j};
  });
  return r ? *r : ApiResult::Error(503, "the scheduling loop did not answer in time");
}

ApiResult Service::ListJobs(const std::string& state, int64_t after, int64_t limit) {
  std::optional<JobState> want;
  if (!state.empty()) {
    for (auto s : {JobState::kPending, JobState::kRunning, JobState::kSucceeded, JobState::kFailed,
                   JobState::kCancelled})
      if (state == job::JobStateName(s)) want = s;
    if (!want) return ApiResult::Error(400, "state: '" + state + "' is not one of pending, running, succeeded, failed, cancelled");
  }
  if (limit <= 0 || limit > 10000) return ApiResult::Error(400, "limit: must be in 1..10000");
  auto r = Call<ApiResult>([this, want, after, limit] {
    json items = json::array();
    int64_t last = after;
    bool more = false;
    for (auto it = jobs_.upper_bound(after); it != jobs_.end(); ++it) {
      if (!it->second.durable) continue;
      if (want && it->second.state != *want) continue;
      if (static_cast<int64_t>(items.size()) == limit) {
        more = true;
        break;
      }
      items.push_back(JobJson(it->second, false));
      last = it->first;
    }
    json j = {{"jobs", items}};
    if (more) j["next_after"] = last;
    return ApiResult{200, j};
  });
  return r ? *r : ApiResult::Error(503, "the scheduling loop did not answer in time");
}

// Every queue of the scheduler's tree (sorted by name), with its jobs and the
// ledger's figures: per dimension ("*" = all GPU types, then each GPU type
// where the queue has a quota or uses GPUs) the quota (null = not set or
// unlimited), usage and borrowing, in GPUs. Jobs and figures of an inner
// queue cover its subtree. (Every job in pending_/running_ is known to the
// scheduler; one that were not would be counted under its queue's name.)
ApiResult Service::Queues() {
  auto r = Call<ApiResult>([this] {
    struct Q {
      int64_t pending = 0, running = 0, pending_gpus = 0, running_gpus = 0;
    };
    const tenancy::Ledger& ledger = sched_->ledger();
    const tenancy::QueueTree& tree = ledger.tree();
    std::vector<Q> in_tree(tree.size());
    std::map<std::string, Q> outside;  // jobs not yet in the scheduler, by queue name
    auto count = [&](int64_t id, bool running) {
      const JobEntry& e = jobs_.at(id);
      const scheduler::JobRecord* rec = sched_->Find(JobId(id));
      int32_t q = rec ? rec->queue : tree.LeafFor(e.spec);
      auto add = [&](Q& x) {
        (running ? x.running : x.pending) += 1;
        (running ? x.running_gpus : x.pending_gpus) += e.spec.total_gpus();
      };
      if (q < 0) {
        add(outside[QueueOf(e)]);
        return;
      }
      for (; q >= 0; q = tree.node(q).parent) add(in_tree[q]);
    };
    for (int64_t id : pending_) count(id, false);
    for (int64_t id : running_) count(id, true);
    auto gpus_or_null = [](int64_t milli) {
      return milli == tenancy::kUnlimited ? json(nullptr) : json(static_cast<double>(milli) / kMilliPerGpu);
    };
    auto gpus = [](int64_t milli) { return static_cast<double>(milli) / kMilliPerGpu; };
    std::map<std::string, json> items;
    for (int32_t q = 0; q < tree.size(); ++q) {
      const tenancy::QueueNode& n = tree.node(q);
      const Q& c = in_tree[q];
      json dims = json::object();
      for (int32_t d = ledger.num_dims() - 1; d >= 0; --d) {  // "*" first
        const bool all = d == ledger.all_types_dim();
        if (!all && !n.has_quota[d] && ledger.usage(q, d) == 0) continue;
        const tenancy::Quota& quota = n.quota[d];
        dims[all ? "*" : cluster_.gpu_type(GpuTypeId(static_cast<int16_t>(d))).name] = {
            {"guarantee", n.has_quota[d] ? json(gpus(quota.guarantee)) : json(nullptr)},
            {"limit", n.has_quota[d] ? gpus_or_null(quota.limit) : json(nullptr)},
            {"borrow_limit", n.has_quota[d] ? gpus_or_null(quota.borrow_limit) : json(nullptr)},
            {"lend_limit", n.has_quota[d] ? gpus_or_null(quota.lend_limit) : json(nullptr)},
            {"usage", gpus(ledger.usage(q, d))},
            {"borrowed", gpus(ledger.borrowed(q, d))}};
      }
      const int32_t all = ledger.all_types_dim();
      items[n.name] = {{"name", n.name},
                       {"pending", c.pending},
                       {"running", c.running},
                       {"pending_gpus", c.pending_gpus},
                       {"running_gpus", c.running_gpus},
                       {"parent", n.parent >= 0 ? json(tree.node(n.parent).name) : json(nullptr)},
                       {"leaf", n.is_leaf()},
                       {"weight", n.weight},
                       {"guarantee_gpus", gpus(ledger.guarantee(q, all))},
                       {"usage_gpus", gpus(ledger.usage(q, all))},
                       {"borrowed_gpus", gpus(ledger.borrowed(q, all))},
                       {"dominant_share", ledger.DominantShare(q)},
                       {"dimensions", dims}};
    }
    for (const auto& [name, c] : outside) {
      json& item = items[name];
      item["name"] = name;
      item["pending"] = item.value("pending", int64_t{0}) + c.pending;
      item["running"] = item.value("running", int64_t{0}) + c.running;
      item["pending_gpus"] = item.value("pending_gpus", int64_t{0}) + c.pending_gpus;
      item["running_gpus"] = item.value("running_gpus", int64_t{0}) + c.running_gpus;
    }
    json list = json::array();
    for (auto& [name, item] : items) list.push_back(std::move(item));
    return ApiResult{200, {{"queues", list}}};
  });
  return r ? *r : ApiResult::Error(503, "the scheduling loop did not answer in time");
}

ApiResult Service::Nodes() {
  auto r = Call<ApiResult>([this] {
    json items = json::array();
    const TimeUs steady_now = std::chrono::duration_cast<std::chrono::microseconds>(
                                  std::chrono::steady_clock::now().time_since_epoch())
                                  .count();
    const auto& st = sched_->state();
    for (int32_t i = 0; i < cluster_.num_nodes(); ++i) {
      const NodeId n(i);
      const auto& node = cluster_.node(n);
      const NodeEntry& ne = nodes_[i];
      MilliGpu used = 0;
      for (const TaskKey& t : st.tasks_on(n))
        if (const auto* a = st.Find(t)) used += a->total_milli();
      json j = {{"name", node.name},
                {"gpu_type", node.gpu_type.valid() ? cluster_.gpu_type(node.gpu_type).name : ""},
                {"gpus", node.gpu_count},
                {"gpus_used_milli", used},
                {"tasks", st.tasks_on(n).size()},
                {"up", ne.up},
                {"quarantined", ne.quarantined},
                {"failures", ne.total_failures},
                {"leaf", cluster_.domain(node.domain[static_cast<int>(cluster::Level::kLeaf)]).name}};
      if (options_.virtual_nodes) j["heartbeat_age_s"] = UsToSeconds(steady_now - ne.last_heartbeat);
      items.push_back(std::move(j));
    }
    return ApiResult{200, {{"nodes", items}}};
  });
  return r ? *r : ApiResult::Error(503, "the scheduling loop did not answer in time");
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
  counter("berth_decisions_total", "Jobs placed by the scheduler (rate() gives decisions/s).", metrics_.decisions);
  counter("berth_jobs_finished_total", "Jobs that ran to completion.", metrics_.jobs_finished);
  counter("berth_jobs_requeued_total", "Running jobs sent back to the queue (node failures, preemption).", metrics_.jobs_requeued);
  counter("berth_preemptions_total", "Running jobs evicted by preemption for another job.", metrics_.preemptions);
  counter("berth_scheduling_passes_total", "Scheduling passes over the pending queue.", metrics_.scheduling_passes);
  counter("berth_node_failures_total", "Nodes declared down.", metrics_.node_failures);
  counter("berth_store_commits_total", "Store transactions committed.", metrics_.store_commits);
  counter("berth_store_records_total", "Records made durable.", metrics_.store_records);
  counter("berth_store_errors_total", "Store appends that failed.", metrics_.store_errors);
  counter("berth_http_requests_total", "HTTP requests served.", metrics_.http_requests);
  counter("berth_http_errors_total", "HTTP requests answered 4xx or 5xx.", metrics_.http_errors);
  metrics_.decision_latency.Render("berth_decision_latency_seconds",
                                   "Wall time of a scheduling pass that placed at least one job.", out);
  metrics_.pass_latency.Render("berth_scheduling_pass_seconds", "Wall time of every scheduling pass.", out);
  metrics_.commit_latency.Render("berth_store_commit_seconds", "Store batch arrival to durable (group commit).", out);
  metrics_.commit_batch.Render("berth_store_commit_records", "Records per store commit.", out);
  metrics_.submit_latency.Render("berth_submit_seconds", "POST /v1/jobs received to answered.", out);
  auto gauges = Call<std::string>([this] {
    std::string g;
    std::map<std::string, int64_t> pending_by_queue, running_by_queue;
    for (int64_t id : pending_) ++pending_by_queue[QueueOf(jobs_.at(id))];
    for (int64_t id : running_) ++running_by_queue[QueueOf(jobs_.at(id))];
    g += "# HELP berth_queue_pending_jobs Jobs waiting, per queue.\n# TYPE berth_queue_pending_jobs gauge\n";
    for (const auto& [q, n] : pending_by_queue)
      g += "berth_queue_pending_jobs{queue=\"" + PromLabel(q) + "\"} " + std::to_string(n) + "\n";
    g += "# HELP berth_queue_running_jobs Jobs running, per queue.\n# TYPE berth_queue_running_jobs gauge\n";
    for (const auto& [q, n] : running_by_queue)
      g += "berth_queue_running_jobs{queue=\"" + PromLabel(q) + "\"} " + std::to_string(n) + "\n";
    std::vector<int64_t> milli(cluster_.gpu_types().size(), 0), total(cluster_.gpu_types().size(), 0);
    int64_t nodes_up = 0, quarantined = 0;
    const auto& st = sched_->state();
    for (int32_t i = 0; i < cluster_.num_nodes(); ++i) {
      const auto& node = cluster_.node(NodeId(i));
      nodes_up += nodes_[i].up;
      quarantined += nodes_[i].quarantined;
      if (!node.gpu_type.valid()) continue;
      total[node.gpu_type.value()] += node.gpu_count;
      for (const TaskKey& t : st.tasks_on(NodeId(i)))
        if (const auto* a = st.Find(t)) milli[node.gpu_type.value()] += a->total_milli();
    }
    g += "# HELP berth_gpus_allocated GPUs allocated to running tasks, per GPU type.\n"
         "# TYPE berth_gpus_allocated gauge\n";
    for (size_t t = 0; t < milli.size(); ++t)
      g += "berth_gpus_allocated{type=\"" + PromLabel(cluster_.gpu_types()[t].name) + "\"} " +
           FormatGpus(milli[t]) + "\n";
    g += "# HELP berth_gpus_total GPUs in the cluster, per GPU type.\n# TYPE berth_gpus_total gauge\n";
    for (size_t t = 0; t < total.size(); ++t)
      g += "berth_gpus_total{type=\"" + PromLabel(cluster_.gpu_types()[t].name) + "\"} " + std::to_string(total[t]) +
           "\n";
    g += "# HELP berth_nodes_up Nodes the scheduler may use.\n# TYPE berth_nodes_up gauge\nberth_nodes_up " +
         std::to_string(nodes_up) + "\n";
    g += "# HELP berth_nodes_quarantined Nodes kept out after repeated failures.\n"
         "# TYPE berth_nodes_quarantined gauge\nberth_nodes_quarantined " +
         std::to_string(quarantined) + "\n";
    return g;
  });
  if (gauges) out += *gauges;
  out += "# HELP berth_ready 1 when this process leads and has loaded its state.\n# TYPE berth_ready gauge\n";
  out += std::string("berth_ready ") + (ready_ ? "1" : "0") + "\n";
  return out;
}

}  // namespace berth::server
