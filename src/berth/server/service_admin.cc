// The admin API (docs/service.md, "Admin API"): the list of nodes out of
// service, and an operator's quarantine, drain and return of a node. Every
// call writes an audit log line saying who asked. The node actions run on the
// scheduling thread and answer once the node's record is durable, so a
// quarantine or drain holds across a restart of the service.
#include <chrono>
#include <future>

#include "berth/common/clock.h"
#include "berth/json/json_parse.h"
#include "berth/server/records.h"
#include "berth/server/service.h"

namespace berth::server {

using nlohmann::json;

namespace {

std::string Shown(const std::string& name) { return name.size() > 200 ? name.substr(0, 200) + "..." : name; }

json DeadlineJson(TimeUs deadline, TimeUs now) {
  if (deadline < 0) return nullptr;
  return UsToSeconds(std::max<TimeUs>(0, deadline - now));
}

// The body of a drain: empty, or {"deadline_s": S} with S an integer >= 0.
StatusOr<TimeUs> ParseDrainDeadline(const std::string& body) {
  if (body.find_first_not_of(" \t\r\n") == std::string::npos) return TimeUs{-1};
  auto parsed = berth::json::ParseUntrusted(body, {.max_bytes = 4 << 10});
  if (!parsed.ok()) return InvalidArgument("drain: the body: " + parsed.status().message());
  const json v = std::move(parsed).value();
  if (!v.is_object()) return InvalidArgument("drain: the body must be an object such as {\"deadline_s\": 600}");
  for (const auto& [key, value] : v.items())
    if (key != "deadline_s") return InvalidArgument("drain: unknown field '" + Shown(key) + "' (expected deadline_s)");
  if (!v.contains("deadline_s") || v["deadline_s"].is_null()) return TimeUs{-1};
  const json& d = v["deadline_s"];
  constexpr int64_t kMaxSeconds = int64_t{10} * 365 * 86400;  // ten years
  if (!d.is_number_integer() || (d.is_number_unsigned() ? d.get<uint64_t>() > static_cast<uint64_t>(kMaxSeconds)
                                                         : d.get<int64_t>() < 0 || d.get<int64_t>() > kMaxSeconds))
    return InvalidArgument("drain: deadline_s must be an integer number of seconds from 0 to " +
                           std::to_string(kMaxSeconds) + ", got " + berth::json::Excerpt(d));
  return d.get<int64_t>() * kUsPerSecond;
}

}  // namespace

void Service::AuditLog(const std::string& action, const std::string& who, json fields) {
  fields["action"] = action;
  fields["who"] = who;
  log_.Warn("admin_action", std::move(fields));  // warn: kept when info lines are dropped
}

ApiResult Service::AdminNodes(const std::string& who) {
  auto snap = views_.Current();
  if (!snap->nodes) return ApiResult::Error(503, "the state is not loaded yet");
  json items = json::array();
  const TimeUs steady_now = SteadyNowUs();
  const TimeUs now = clock_.Now();
  int64_t down = 0, quarantined = 0, draining = 0;
  const cluster::Cluster& cl = *snap->cluster;
  for (int32_t i = 0; i < cl.num_nodes() && i < static_cast<int32_t>(snap->nodes->size()); ++i) {
    const NodeView& nv = (*snap->nodes)[i];
    if (nv.up && !nv.quarantined && !nv.draining && nv.failed_gpus == 0) continue;
    down += !nv.up;
    quarantined += nv.quarantined;
    draining += nv.draining;
    json j = {{"name", cl.node(NodeId(i)).name}, {"up", nv.up}, {"quarantined", nv.quarantined},
              {"draining", nv.draining}, {"failures", nv.failures}, {"tasks", nv.tasks}};
    json failed = json::array();
    for (int g = 0; g < 64; ++g)
      if (nv.failed_gpus >> g & 1) failed.push_back(g);
    j["failed_gpus"] = std::move(failed);
    if (nv.draining) j["drain_deadline_s"] = DeadlineJson(nv.drain_deadline, now);
    if (options_.virtual_nodes)
      j["heartbeat_age_s"] = UsToSeconds(steady_now - beat_at_[i].load(std::memory_order_relaxed));
    items.push_back(std::move(j));
  }
  AuditLog("list_nodes", who, {{"down", down}, {"quarantined", quarantined}, {"draining", draining}});
  return ApiResult{200, {{"nodes", std::move(items)}, {"down", down}, {"quarantined", quarantined},
                         {"draining", draining}}};
}

ApiResult Service::AdminNodeAction(const std::string& action, const std::string& name, const std::string& who,
                                   std::function<AdminOutcome(int32_t node)> fn) {
  if (!ready_) return NotReady();
  const std::string shown = Shown(name);
  struct Out {
    AdminOutcome outcome;
    std::shared_future<Status> durable;
  };
  auto out = Call<Out>([this, name, fn = std::move(fn)]() -> Out {
    auto node = cluster_->FindNode(name);  // on the loop: agents may change the cluster
    if (!node || !sched_) return Out{};
    Out o{fn(node->value()), {}};
    o.outcome.found = true;
    node_views_dirty_ = true;
    if (o.outcome.write) {
      auto promise = std::make_shared<std::promise<Status>>();
      o.durable = promise->get_future().share();
      AppendNodeRecord(node->value(), [promise](const Status& s) { promise->set_value(s); });
    }
    return o;
  });
  if (!out) return ApiResult::Error(503, "the scheduling loop did not answer in time");
  if (!out->outcome.found) {
    AuditLog(action, who, {{"node", shown}, {"result", "no such node"}});
    return ApiResult::Error(404, "no node '" + shown + "'");
  }
  if (out->durable.valid()) {
    if (out->durable.wait_for(std::chrono::microseconds(options_.request_timeout)) != std::future_status::ready)
      return ApiResult::Error(503, "the store did not record the change in time");
    Status s = out->durable.get();
    if (!s.ok()) return ApiResult::Error(503, "not stored: " + s.message());
  }
  json audit = std::move(out->outcome.audit);
  audit["node"] = shown;
  AuditLog(action, who, std::move(audit));
  json body = std::move(out->outcome.body);
  body["node"] = shown;
  return ApiResult{200, std::move(body)};
}

ApiResult Service::Unquarantine(const std::string& name, const std::string& who) {
  return AdminNodeAction("unquarantine", name, who, [this](int32_t n) {
    NodeEntry& ne = nodes_[n];
    AdminOutcome o;
    const bool was_q = ne.quarantined, was_d = ne.draining;
    o.body = {{"was_quarantined", was_q}, {"was_draining", was_d}, {"quarantined", false}, {"draining", false}};
    o.audit = {{"result", was_q || was_d ? "lifted" : "not quarantined or draining"},
               {"failures", ne.total_failures}};
    if (!was_q && !was_d) return o;
    if (was_q) ne.failures.clear();  // a fresh window: the next failure alone does not quarantine it again
    ne.quarantined = false;
    ne.draining = false;
    ne.drain_deadline = -1;
    // A healthy node takes work at once; one that is down comes back at its
    // next heartbeat (CheckHeartbeats).
    if (ne.up) {
      (void)sched_->SetNodeUp(NodeId(n), true);
      dirty_ = true;
    }
    o.write = true;
    return o;
  });
}

ApiResult Service::Quarantine(const std::string& name, const std::string& who) {
  return AdminNodeAction("quarantine", name, who, [this](int32_t n) {
    NodeEntry& ne = nodes_[n];
    AdminOutcome o;
    const bool was = ne.quarantined;
    const int64_t tasks = static_cast<int64_t>(sched_->state().tasks_on(NodeId(n)).size());
    o.body = {{"was_quarantined", was}, {"quarantined", true}, {"tasks_stopped", was ? 0 : tasks}};
    o.audit = {{"result", was ? "already quarantined" : "quarantined"}, {"tasks_stopped", was ? 0 : tasks}};
    if (was) return o;
    ne.quarantined = true;
    (void)sched_->SetNodeUp(NodeId(n), false);
    log_.Warn("node_quarantined", {{"node", cluster_->node(NodeId(n)).name}, {"by", "operator"}});
    StopJobsOn(NodeId(n), "node " + cluster_->node(NodeId(n)).name + " quarantined by an operator", false);
    o.write = true;
    return o;
  });
}

ApiResult Service::Drain(const std::string& name, const std::string& body, const std::string& who) {
  auto deadline = ParseDrainDeadline(body);
  if (!deadline.ok()) return ApiResult::Error(400, deadline.status().message());
  const TimeUs after = *deadline;
  return AdminNodeAction("drain", name, who, [this, after](int32_t n) {
    NodeEntry& ne = nodes_[n];
    AdminOutcome o;
    const TimeUs now = clock_.Now();
    const bool was = ne.draining;
    ne.draining = true;
    ne.drain_deadline = after >= 0 ? now + after : -1;
    (void)sched_->SetNodeUp(NodeId(n), false);
    std::set<int64_t> jobs;
    for (const TaskKey& t : sched_->state().tasks_on(NodeId(n))) jobs.insert(t.job.value());
    o.body = {{"was_draining", was},
              {"draining", true},
              {"running_jobs", jobs.size()},
              {"deadline_s", DeadlineJson(ne.drain_deadline, now)}};
    o.audit = {{"result", was ? "deadline changed" : "draining"}, {"running_jobs", jobs.size()},
               {"deadline_s", DeadlineJson(ne.drain_deadline, now)}};
    log_.Warn("node_draining", {{"node", cluster_->node(NodeId(n)).name}, {"running_jobs", jobs.size()},
                                {"deadline_s", DeadlineJson(ne.drain_deadline, now)}});
    o.write = true;
    CheckDrains();  // a deadline of 0 stops the work now
    return o;
  });
}

void Service::CheckDrains() {
  const TimeUs now = clock_.Now();
  for (int32_t n = 0; n < static_cast<int32_t>(nodes_.size()); ++n) {
    NodeEntry& ne = nodes_[n];
    if (!ne.draining || ne.drain_deadline < 0 || now < ne.drain_deadline) continue;
    ne.drain_deadline = -1;  // passed: the node stays drained until returned to service
    node_views_dirty_ = true;
    const std::string& name = cluster_->node(NodeId(n)).name;
    log_.Warn("node_drain_deadline", {{"node", name}, {"tasks", sched_->state().tasks_on(NodeId(n)).size()}});
    StopJobsOn(NodeId(n), "node " + name + " drained: its deadline passed (checkpointed)", true);
  }
}

}  // namespace berth::server
