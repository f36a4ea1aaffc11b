// The colocation filter plugin.
#include "berth/plugins/colocation/colocation.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "berth/common/csv.h"
#include "berth/plugins/builtin.h"
#include "berth/plugins/filter/fit.h"

namespace berth::plugins {
namespace {

StatusOr<int32_t> ParseRatio(const std::string& key, const std::string& value) {
  char* end = nullptr;
  const double r = std::strtod(value.c_str(), &end);
  if (value.empty() || end == nullptr || *end != '\0' || !(r >= 0 && r <= 1))
    return InvalidArgument("plugin 'colocation': " + key + " must be a ratio in 0..1, not '" + value + "'");
  return static_cast<int32_t>(std::llround(r * 1000));
}

Status ParseRanges(const std::string& text, int32_t nodes, std::vector<uint8_t>& out) {
  out.assign(static_cast<size_t>(nodes), 0);
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(pos, comma - pos);
    pos = comma + 1;
    if (item.empty()) continue;
    const size_t dash = item.find('-');
    int64_t lo = 0, hi = 0;
    const bool ok = dash == std::string::npos
                        ? ParseInt64(item, lo).ok() && (hi = lo, true)
                        : ParseInt64(item.substr(0, dash), lo).ok() && ParseInt64(item.substr(dash + 1), hi).ok();
    if (!ok || lo < 0 || hi < lo || hi >= nodes)
      return InvalidArgument("plugin 'colocation': reserved: '" + item + "' is not a node id or range within 0.." +
                             std::to_string(nodes - 1));
    for (int64_t n = lo; n <= hi; ++n) out[static_cast<size_t>(n)] = 1;
  }
  return Status::Ok();
}

}  // namespace

StatusOr<ColocationConfig> ParseColocationArgs(const framework::PluginArgs& args, const cluster::Cluster* cluster) {
  ColocationConfig c;
  for (const auto& [key, value] : args) {
    if (key == "reserved") {
      if (value.empty()) continue;
      if (cluster == nullptr) return InvalidArgument("plugin 'colocation': reserved nodes need the cluster");
      BERTH_RETURN_IF_ERROR(ParseRanges(value, static_cast<int32_t>(cluster->nodes().size()), c.reserved));
    } else if (key == "mode") {
      if (value != "colocate" && value != "static")
        return InvalidArgument("plugin 'colocation': mode must be colocate or static, not '" + value + "'");
      c.static_partition = value == "static";
    } else if (key == "overcommit") {
      BERTH_ASSIGN_OR_RETURN(c.overcommit_permille, ParseRatio(key, value));
    } else if (key == "spill") {
      if (value != "true" && value != "false")
        return InvalidArgument("plugin 'colocation': spill must be true or false, not '" + value + "'");
      c.spill = value == "true";
    } else if (key.rfind("node.", 0) == 0 && key.size() > 5) {
      BERTH_ASSIGN_OR_RETURN(c.node_permille[key.substr(5)], ParseRatio(key, value));
    } else if (key.rfind("queue.", 0) == 0 && key.size() > 6) {
      BERTH_ASSIGN_OR_RETURN(c.queue_permille[key.substr(6)], ParseRatio(key, value));
    } else {
      return InvalidArgument("plugin 'colocation': unknown arg '" + key +
                             "' (reserved, mode, overcommit, spill, node.NAME, queue.NAME)");
    }
  }
  if (cluster != nullptr) {
    for (size_t n = 0; n < c.reserved.size(); ++n) {
      if (!c.reserved[n]) continue;
      const cluster::Node& nd = cluster->node(NodeId(static_cast<int32_t>(n)));
      c.reserved_milli_gpu += int64_t{nd.gpu_count} * kMilliPerGpu;
      c.reserved_cpu_milli += nd.cpu_milli;
      c.reserved_memory_mib += nd.memory_mib;
    }
    for (const auto& [name, permille] : c.node_permille) {
      bool found = false;
      for (const auto& n : cluster->nodes()) found = found || n.name == name;
      if (!found) return InvalidArgument("plugin 'colocation': node." + name + ": no such node");
    }
  }
  return c;
}

ColocationPlugin::ColocationPlugin(ColocationConfig config) : config_(std::move(config)) {}

namespace {
const std::string& QueueOf(const job::JobSpec& j) { return j.queue.empty() ? j.tenant : j.queue; }
bool IsReplica(const job::JobSpec& j) { return j.service.has_value() || j.replica_of.valid(); }
// Adds (sign 1) or takes away (-1) a job's GPUs, CPU and memory.
template <typename H>
void AddDemand(const job::JobSpec& job, int64_t sign, H& held) {
  for (const auto& g : job.groups) {
    held.milli_gpu += sign * g.count * g.milli_per_task();
    held.cpu_milli += sign * g.count * g.cpu_milli;
    held.memory_mib += sign * g.count * g.memory_mib;
  }
}
bool SameRequest(const framework::TaskRequest& a, const framework::TaskRequest& b) {
  return a.gpus == b.gpus && a.milli_per_gpu == b.milli_per_gpu && a.cpu_milli == b.cpu_milli &&
         a.memory_mib == b.memory_mib && a.gpu_types == b.gpu_types && a.gpu_types_unknown == b.gpu_types_unknown;
}
}  // namespace

bool ColocationPlugin::WithinGuarantee(const Held& extra) const {
  return services_.milli_gpu + extra.milli_gpu <= config_.reserved_milli_gpu &&
         services_.cpu_milli + extra.cpu_milli <= config_.reserved_cpu_milli &&
         services_.memory_mib + extra.memory_mib <= config_.reserved_memory_mib;
}

bool ColocationPlugin::MaySpill(const framework::CycleContext& ctx, const framework::TaskRequest& req) const {
  const state::ClusterState& state = ctx.state;
  if (memo_.valid && memo_.state == &state && memo_.version == state.version() && memo_.job == ctx.job.id &&
      SameRequest(memo_.req, req))
    return memo_.result;
  // Within the guarantee with the whole job (it starts all or nothing).
  Held want;
  AddDemand(ctx.job, 1, want);
  bool result = WithinGuarantee(want);
  // Only when no reserved node can hold it now.
  for (size_t n = 0; result && n < config_.reserved.size(); ++n)
    if (config_.reserved[n] && TaskFitsNode(state, req, NodeId(static_cast<int32_t>(n)))) result = false;
  memo_ = SpillMemo{state.version(), &state, ctx.job.id, req, result, true};
  return result;
}

int64_t ColocationPlugin::BestEffortMilli(const state::ClusterState& state, NodeId n, const std::string* queue) const {
  int64_t milli = 0;
  for (const TaskKey& t : state.tasks_on(n)) {
    auto it = best_effort_.find(t.job);
    if (it == best_effort_.end() || (queue != nullptr && it->second.queue != *queue)) continue;
    if (const state::Allocation* a = state.Find(t)) milli += a->total_milli();
  }
  return milli;
}

int64_t ColocationPlugin::BestEffortMilliUnder(const state::ClusterState& state, NodeId n,
                                               const tenancy::QueueTree& tree, int32_t queue) const {
  if (leaf_tree_ != &tree) {
    for (auto& [id, b] : best_effort_) b.leaf = -2;
    leaf_tree_ = &tree;
  }
  int64_t milli = 0;
  for (const TaskKey& t : state.tasks_on(n)) {
    auto it = best_effort_.find(t.job);
    if (it == best_effort_.end()) continue;
    if (it->second.leaf == -2) it->second.leaf = tree.LeafFor(it->second.who);
    bool under = false;
    for (int32_t a = it->second.leaf; a >= 0 && !under; a = tree.node(a).parent) under = a == queue;
    if (!under) continue;
    if (const state::Allocation* a = state.Find(t)) milli += a->total_milli();
  }
  return milli;
}

bool ColocationPlugin::WithinTreeRatios(const framework::CycleContext& ctx, int64_t want, int64_t own_all) const {
  if (ctx.ledger == nullptr || ctx.queue < 0 || config_.queue_permille.empty()) return true;
  const tenancy::QueueTree& tree = ctx.ledger->tree();
  if (ctx.queue >= tree.size()) return true;
  const cluster::Cluster& c = ctx.state.cluster();
  for (int32_t q = ctx.queue; q >= 0; q = tree.node(q).parent) {
    auto it = config_.queue_permille.find(tree.node(q).name);
    if (it == config_.queue_permille.end()) continue;
    int64_t held = 0, capacity = 0;
    for (size_t n = 0; n < config_.reserved.size(); ++n) {
      if (!config_.reserved[n]) continue;
      const NodeId id(static_cast<int32_t>(n));
      capacity += int64_t{c.node(id).gpu_count} * kMilliPerGpu;
      held += BestEffortMilliUnder(ctx.state, id, tree, q);
    }
    if ((held + own_all + want) * 1000 > int64_t{it->second} * capacity) return false;
  }
  return true;
}

bool ColocationPlugin::Filter(const framework::CycleContext& ctx, const framework::TaskRequest& req,
                              NodeId node) const {
  if (config_.reserved.empty()) return true;
  const job::JobSpec& j = ctx.job;
  const bool on_reserved = reserved(node);
  if (IsReplica(j)) return on_reserved || (config_.spill && !config_.static_partition && MaySpill(ctx, req));
  if (!on_reserved) return true;
  if (config_.static_partition) return false;
  if (!j.best_effort) return true;
  // Best effort on a reserved node: the node's ratio, then the queue's.
  const cluster::Cluster& c = ctx.state.cluster();
  const cluster::Node& nd = c.node(node);
  auto nit = config_.node_permille.find(nd.name);
  const int64_t node_permille = nit != config_.node_permille.end() ? nit->second : config_.overcommit_permille;
  // Tasks of this job placed earlier in the cycle hold GPUs here too.
  int64_t own = 0;
  for (const TaskKey& t : ctx.state.tasks_on(node))
    if (t.job == j.id)
      if (const state::Allocation* a = ctx.state.Find(t)) own += a->total_milli();
  const int64_t want = req.total_milli();
  if ((BestEffortMilli(ctx.state, node, nullptr) + own + want) * 1000 > node_permille * nd.gpu_count * kMilliPerGpu)
    return false;
  if (config_.queue_permille.empty()) return true;
  // The queues' ratios: those on the job's path in the scheduler's queue
  // tree, and its `queue` (or tenant) by name when the path has no queue so named.
  const std::string& q = QueueOf(j);
  auto qit = config_.queue_permille.find(q);
  if (qit != config_.queue_permille.end() && ctx.ledger != nullptr && ctx.queue >= 0 &&
      ctx.queue < ctx.ledger->tree().size()) {
    const tenancy::QueueTree& tree = ctx.ledger->tree();
    for (int32_t a = ctx.queue; a >= 0 && qit != config_.queue_permille.end(); a = tree.node(a).parent)
      if (tree.node(a).name == q) qit = config_.queue_permille.end();  // the tree's ratio
  }
  int64_t held = 0, capacity = 0, own_all = 0;
  for (size_t n = 0; n < config_.reserved.size(); ++n) {
    if (!config_.reserved[n]) continue;
    const NodeId id(static_cast<int32_t>(n));
    capacity += int64_t{c.node(id).gpu_count} * kMilliPerGpu;
    if (qit != config_.queue_permille.end()) held += BestEffortMilli(ctx.state, id, &q);
    for (const TaskKey& t : ctx.state.tasks_on(id))
      if (t.job == j.id)
        if (const state::Allocation* a = ctx.state.Find(t)) own_all += a->total_milli();
  }
  if (qit != config_.queue_permille.end() && (held + own_all + want) * 1000 > int64_t{qit->second} * capacity)
    return false;
  return WithinTreeRatios(ctx, want, own_all);
}

bool ColocationPlugin::RulesOut(const framework::SchedulerView&, const job::JobSpec& j,
                                std::span<uint8_t> out) const {
  if (config_.reserved.empty()) return false;
  const size_t nodes = std::min(out.size(), config_.reserved.size());
  if (IsReplica(j)) {
    // Off the reservation; with spill only beyond the guarantee, with the whole job.
    bool off = !config_.spill || config_.static_partition;
    if (!off) {
      Held whole;
      AddDemand(j, 1, whole);
      off = !WithinGuarantee(whole);
    }
    if (off)
      for (size_t n = 0; n < nodes; ++n)
        if (!config_.reserved[n]) out[n] = 1;
    return true;
  }
  if (config_.static_partition)
    for (size_t n = 0; n < nodes; ++n)
      if (config_.reserved[n]) out[n] = 1;
  return true;
}

bool ColocationPlugin::Avoids(const framework::SchedulerView&, const job::JobSpec& j, std::span<uint8_t> out) const {
  if (config_.reserved.empty() || !IsReplica(j)) return false;
  bool any = false;
  const size_t nodes = std::min(out.size(), config_.reserved.size());
  for (size_t n = 0; n < nodes; ++n)
    if (!config_.reserved[n]) out[n] = 1, any = true;
  return any;
}

void ColocationPlugin::OnStart(const job::JobSpec& job) {
  if (job.best_effort) {
    BestEffortJob& b = best_effort_[job.id];
    b.queue = QueueOf(job);
    b.who.queue = job.queue;
    b.who.tenant = job.tenant;
    b.leaf = -2;
  }
  if (IsReplica(job)) AddDemand(job, 1, services_);
  memo_.valid = false;
}

void ColocationPlugin::OnFinish(const job::JobSpec& job) {
  best_effort_.erase(job.id);
  if (IsReplica(job)) AddDemand(job, -1, services_);
  memo_.valid = false;
}

Status RegisterColocationPlugins(framework::PluginRegistry& r) {
  return r.Register(
      std::string(ColocationPlugin::kName),
      [](const framework::PluginArgs& args,
         const framework::PluginContext& context) -> StatusOr<std::unique_ptr<framework::Plugin>> {
        BERTH_ASSIGN_OR_RETURN(ColocationConfig c, ParseColocationArgs(args, context.cluster));
        return std::unique_ptr<framework::Plugin>(std::make_unique<ColocationPlugin>(std::move(c)));
      });
}

}  // namespace berth::plugins
