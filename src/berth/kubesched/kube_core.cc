// KubeScheduler: the scheduling core over the API server's objects: the
// cluster model and queue tree rebuilt from them, bound pods adopted, pending
// pods formed into jobs, passes, binds, preemption and waiting reasons.
#include "berth/kubesched/kube_scheduler.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <future>
#include <tuple>

#include "berth/common/bits.h"
#include "berth/kubesched/informer.h"
#include "berth/kubesched/kube_queues.h"
#include "berth/kubesched/kube_repair.h"
#include "berth/kubesched/kube_util.h"
#include "berth/kubesched/launch_config.h"
#include "berth/plugins/builtin.h"
#include "berth/server/extender.h"
#include "berth/tenancy/queue_yaml.h"
#include "berth/workload/launch.h"
#include "berth/workload/profile.h"

namespace berth::kube {

using job::JobState;
using nlohmann::json;


StatusOr<std::unique_ptr<scheduler::Scheduler>> KubeScheduler::NewScheduler(const cluster::Cluster& c) {
  BERTH_ASSIGN_OR_RETURN(framework::Profile profile, policies_.Find(options_.policy));
  profile.name = options_.policy;
  BERTH_RETURN_IF_ERROR(framework::ApplyPluginArgs({&profile}, options_.plugin_args));
  std::shared_ptr<const tenancy::QueueTree> queues;
  if (options_.queue_file && queue_crds_.empty()) {
    BERTH_ASSIGN_OR_RETURN(tenancy::QueueTree tree,
                           tenancy::BuildQueueTree(*options_.queue_file, options_.queue_file_name, c));
    queues = std::make_shared<tenancy::QueueTree>(std::move(tree));
  }
  if (!queue_crds_.empty()) {
    auto tree = QueuesFromCrds(c);
    if (tree.ok()) {
      queues = *tree;
      queue_error_.clear();
    } else {
      if (queue_error_ != tree.status().message()) {  // logged once per error
        queue_error_ = tree.status().message();
        log_.Error("kube_queues_invalid", {{"error", queue_error_}, {"hint", "the previous queue tree stays in force"}});
      }
      if (sched_) queues = current_queues_;
    }
  }
  current_queues_ = queues;
  if (options_.min_runtime >= 0) BERTH_RETURN_IF_ERROR(plugins::SetMinRuntime(profile, options_.min_runtime));
  if (queues) {
    for (auto* point : {&profile.admit, &profile.reserve})
      if (std::none_of(point->begin(), point->end(), [](const auto& r) { return r.name == "quota"; }))
        point->push_back(framework::PluginRef{"quota", {}});
  }
  profile = workload::WithServicePlugins(std::move(profile));  // replicas spread (a no-op for batch pods)
  BERTH_ASSIGN_OR_RETURN(framework::PluginArgs colocation, ColocationFor(c));
  if (!colocation.empty()) {  // the services' reserved nodes
    const framework::PluginRef ref{"colocation", colocation};
    profile.filter.push_back(ref);
    profile.admit.push_back(ref);
  }
  framework::PluginContext context;
  context.cluster = &c;
  BERTH_ASSIGN_OR_RETURN(std::unique_ptr<framework::Framework> fw,
                         framework::Framework::Create(profile, plugins_, context));
  scheduler::SchedulerOptions so;
  so.seed = options_.seed;
  // unit: normalized: a pod is charged its GPUs times the speed of the type it lands on.
  BERTH_RETURN_IF_ERROR(SetQueueCharging(queues, options_.catalog, options_.throughputs, c, so));
  so.usage_half_life = options_.usage_half_life;
  so.preemption_grace = options_.preemption_grace;
  so.yield_best_effort = options_.yield_best_effort;
  so.yield_training_grace = options_.yield_training_grace;
  return std::make_unique<scheduler::Scheduler>(c, std::move(fw), std::move(so), clock_);
}

void KubeScheduler::OnQueue(const std::string& type, const json& obj) {
  const std::string name = Str(Sub(obj, "metadata"), "name");
  if (name.empty()) return;
  if (type == "DELETED") {
    queue_crds_.erase(name);
  } else {
    queue_crds_[name] = Sub(obj, "spec").is_object() ? Sub(obj, "spec") : json::object();
  }
  topology_dirty_ = true;  // a new tree means a new scheduler over the same placements
  dirty_ = true;
}

// The Queue objects as a tree (kube_queues.h): unit and reference from the
// objects, else from the queue file's header.
StatusOr<std::shared_ptr<const tenancy::QueueTree>> KubeScheduler::QueuesFromCrds(const cluster::Cluster& c) const {
  return TreeFromQueueObjects(queue_crds_, options_.queue_file ? &*options_.queue_file : nullptr, c);
}

// A new cluster model from the nodes; every job is submitted again and the
// running ones adopted on their placements (by node name and GPU indexes).
void KubeScheduler::Rebuild() {
  topology_dirty_ = false;
  std::vector<NodeInfo> infos;
  infos.reserve(nodes_.size());
  for (const auto& [name, info] : nodes_) infos.push_back(info);
  auto built = BuildCluster(infos, options_.node_model);
  if (!built.ok()) {
    log_.Error("kube_cluster_invalid", {{"error", built.status().message()}});
    return;
  }
  auto next_cluster = std::make_unique<cluster::Cluster>(std::move(built).value());
  auto next = NewScheduler(*next_cluster);
  if (!next.ok()) {
    log_.Error("kube_scheduler_invalid", {{"error", next.status().message()}});
    return;
  }
  std::unique_ptr<scheduler::Scheduler> s = std::move(next).value();
  // Carry the jobs over, in id order.
  std::vector<int64_t> lost;
  for (auto& [id, job] : jobs_) {
    std::vector<framework::TaskPlacement> placements;
    if (job.running && sched_) {
      if (const auto* rec = sched_->Find(JobId(id))) {
        for (const auto& p : rec->placements) {
          auto n = next_cluster->FindNode(cluster_->node(p.alloc.node).name);
          if (!n) continue;  // the node is gone
          framework::TaskPlacement q = p;
          q.alloc.node = *n;
          placements.push_back(q);
        }
      }
    }
    job::JobSpec spec = job.spec;
    job::ResolveGpuTypes(spec, *next_cluster);
    Status sub = s->Submit(spec);
    if (sub.ok() && job.running) {
      if (placements.empty()) {
        sub = Internal("no placement left");
      } else {
        sub = s->Adopt(JobId(id), placements, clock_.Now());
      }
    }
    if (!sub.ok()) {
      log_.Warn("kube_job_dropped_on_rebuild", {{"job", id}, {"group", job.group}, {"error", sub.message()}});
      lost.push_back(id);
    }
  }
  // Placements are adopted on every node; then the unusable ones go down.
  for (NodeId n{0}; n.value() < next_cluster->num_nodes(); n = NodeId(n.value() + 1)) {
    const auto it = nodes_.find(next_cluster->node(n).name);
    if (it != nodes_.end() && !it->second.usable()) (void)s->SetNodeUp(n, false);
  }
  cluster_ = std::move(next_cluster);
  sched_ = std::move(s);
  ReapplySpares();
  for (int64_t id : lost) {
    auto jit = jobs_.find(id);
    if (jit == jobs_.end()) continue;
    if (jit->second.running) {
      // Its pods sit on nodes that left the model: they are evicted so their
      // owners make new ones; until they go they are not counted.
      for (const auto& uid : jit->second.pod_of_task) {
        auto p = pods_.find(uid);
        if (p == pods_.end()) continue;
        Enqueue(WriteOp::Make(WriteOp::Kind::kDelete, p->second.ns, p->second.name, uid));
        p->second.job = -1;
      }
      ForgetLaunchConfig(jit->second);
      jobs_.erase(jit);
    } else {
      CancelPendingJob(id);
    }
  }
  // Bound pods that never made it into a job (unknown nodes before) get another look.
  for (const auto& [uid, p] : pods_)
    if (!p.node.empty() && p.job < 0 && !p.terminating) untracked_.insert(uid);
  dirty_ = true;
  log_.Info("kube_cluster", {{"summary", cluster_->Summary()}, {"jobs", jobs_.size()}});
}

// Bound pods Berth holds no task for (found at start, after a re-list, or
// bound by another scheduler) are adopted where they run, one job per group.
void KubeScheduler::AdoptUntracked() {
  if (!sched_) return;
  std::map<std::string, std::vector<PodEntry*>> by_group;
  std::vector<std::string> keep;
  for (const auto& uid : untracked_) {
    auto it = pods_.find(uid);
    if (it == pods_.end() || it->second.job >= 0 || it->second.node.empty()) continue;
    if (!cluster_->FindNode(it->second.node)) {
      keep.push_back(uid);  // a node Berth does not know yet
      continue;
    }
    by_group[GroupKey(it->second)].push_back(&it->second);
  }
  untracked_.clear();
  untracked_.insert(keep.begin(), keep.end());
  const state::ClusterState& st = sched_->state();
  for (auto& [key, members] : by_group) {
    std::sort(members.begin(), members.end(), [](const PodEntry* a, const PodEntry* b) {
      return NaturalLess(a->name, b->name);
    });
    JobEntry job;
    job.id = next_job_++;
    job.group = key;
    job.running = true;
    job.binds_sent = true;
    job.spec.id = JobId(job.id);
    job.spec.name = key;
    job.spec.tenant = members[0]->ns;
    job.spec.queue = members[0]->queue;
    job.spec.priority = members[0]->priority;
    std::vector<framework::TaskPlacement> placements;
    // Per node, GPUs taken by earlier members of this batch.
    std::map<int32_t, uint64_t> taken;
    for (PodEntry* p : members) {
      job::TaskGroup g;
      g.name = "pod-" + std::to_string(job.pod_of_task.size());
      g.count = 1;
      g.gpus = p->gpus;
      g.cpu_milli = p->cpu_milli;
      g.memory_mib = p->memory_mib;
      job.spec.groups.push_back(g);
      const NodeId n = *cluster_->FindNode(p->node);
      const auto& node = cluster_->node(n);
      uint64_t mask = ParseMask(p->gpu_annotation);
      const uint64_t all = node.gpu_count >= 64 ? ~uint64_t{0} : (uint64_t{1} << node.gpu_count) - 1;
      const uint64_t free = st.full_free_mask(n) & ~taken[n.value()];
      if (PopCount(mask) != p->gpus || (mask & ~all) || (mask & ~free)) {
        mask = 0;  // not Berth's, or stale: take the lowest free GPUs
        for (int g2 = 0; g2 < node.gpu_count && PopCount(mask) < p->gpus; ++g2)
          if (free & (uint64_t{1} << g2)) mask |= uint64_t{1} << g2;
      }
      taken[n.value()] |= mask;
      framework::TaskPlacement tp;
      tp.task = TaskKey{JobId(job.id), static_cast<int32_t>(job.pod_of_task.size())};
      tp.alloc.node = n;
      tp.alloc.gpu_mask = mask;
      tp.alloc.milli_per_gpu = mask ? kMilliPerGpu : 0;
      tp.alloc.cpu_milli = p->cpu_milli;
      tp.alloc.memory_mib = p->memory_mib;
      placements.push_back(tp);
      p->job = job.id;
      p->task = tp.task.index;
      job.pod_of_task.push_back(p->uid);
    }
    if (members.size() == 1 && members[0]->group.empty() && members[0]->service_error.empty())
      MarkReplica(*members[0], job);  // a replica stays one after a restart
    if (auto r = ParseRepairAnnotation("pod " + members[0]->ns + "/" + members[0]->name + ": annotation berth.dev/repair",
                                       members[0]->repair);
        r.ok()) {
      job.repair = *r;
    } else {
      log_.Warn("kube_repair_annotation_invalid", {{"group", key}, {"error", r.status().message()}});
    }
    Status s = sched_->Submit(job.spec);
    // Pods run on cordoned or NotReady nodes too: such a node is up while
    // its pods are adopted.
    std::vector<NodeId> lifted;
    for (const auto& tp : placements)
      if (!st.up(tp.alloc.node) && std::find(lifted.begin(), lifted.end(), tp.alloc.node) == lifted.end()) {
        lifted.push_back(tp.alloc.node);
        (void)sched_->SetNodeUp(tp.alloc.node, true);
      }
    if (s.ok()) s = sched_->Adopt(JobId(job.id), placements, clock_.Now());
    for (NodeId n : lifted) (void)sched_->SetNodeUp(n, false);
    if (!s.ok()) {
      // Over capacity as Berth sees it (e.g. bound by another scheduler past
      // what the node offers): adopt pod by pod so what fits is counted.
      log_.Warn("kube_adopt_failed", {{"group", key}, {"pods", members.size()}, {"error", s.message()}});
      (void)sched_->Finish(JobId(job.id), JobState::kCancelled);
      for (PodEntry* p : members) p->job = -1;
      if (members.size() > 1) {
        for (PodEntry* p : members) {
          // A lone key makes each its own job on the next round.
          p->group.clear();
          untracked_.insert(p->uid);
        }
      }
      continue;
    }
    log_.Info("kube_adopted", {{"group", key}, {"job", job.id}, {"pods", members.size()}});
    jobs_.emplace(job.id, std::move(job));
  }
}

// Pending pods of Berth's scheduler become jobs: a lone pod at once, a gang
// once at least its minimum number of members exist (bound ones count).
void KubeScheduler::FormJobs() {
  std::map<std::string, std::vector<PodEntry*>> waiting;  // group -> pending pods not in a job
  std::map<std::string, int32_t> bound_members;
  for (auto& [uid, p] : pods_) {
    if (p.scheduler != options_.scheduler_name) continue;
    if (!p.node.empty() || p.binding) {
      if (!p.group.empty()) ++bound_members[p.group];
      continue;
    }
    if (p.terminating || p.job >= 0) continue;
    waiting[GroupKey(p)].push_back(&p);
  }
  for (auto& [key, members] : waiting) {
    if (pending_job_of_group_.count(key)) continue;  // one pending job per group at a time
    const int32_t need = MinMember(*members[0]);  // the same for every member
    const int32_t have =
        static_cast<int32_t>(members.size()) + (members[0]->group.empty() ? 0 : bound_members[members[0]->group]);
    if (have < need) continue;
    std::sort(members.begin(), members.end(), [](const PodEntry* a, const PodEntry* b) {
      if (a->gpus != b->gpus) return a->gpus > b->gpus;  // workers (the GPU shape) first, then helpers
      if (a->subgroup != b->subgroup) return a->subgroup < b->subgroup;
      return NaturalLess(a->name, b->name);
    });
    // The gang's annotations are read from its first pod in rank order (not
    // from whichever the pod table's hash order gave first).
    PodEntry& first = *members[0];
    JobEntry job;
    job.id = next_job_++;
    job.group = key;
    job.spec.id = JobId(job.id);
    job.spec.name = key;
    job.spec.tenant = first.ns;
    job.spec.queue = first.queue;
    job.spec.priority = first.priority;
    // GPU memory per GPU: the PodGroup's spec.gpuMemoryMiB, else the first pod's annotation.
    Status gpu_memory = Status::Ok();
    int64_t gpu_memory_mib = 0;
    if (!first.gpu_memory.empty()) {
      const char* b = first.gpu_memory.data();
      auto [end, ec] = std::from_chars(b, b + first.gpu_memory.size(), gpu_memory_mib);
      if (ec != std::errc() || end != b + first.gpu_memory.size() || gpu_memory_mib < 0)
        gpu_memory = InvalidArgument("annotation berth.dev/gpu-memory-mib: expected a non-negative integer (MiB), found '" +
                                     first.gpu_memory.substr(0, 64) + "'");
    }
    // Topology: the pod's annotations, then the PodGroup's spec.topology and
    // spec.subGroups (group_topology.h); a bad value keeps the gang out.
    Status topology = Status::Ok();
    const PodGroupTopology* group_topology = nullptr;
    // Repair mode: the PodGroup's berth.dev/repair annotation, else the first pod's.
    std::string repair_where = "pod " + first.ns + "/" + first.name + ": annotation berth.dev/repair";
    std::string repair_text = first.repair;
    for (const auto& [field, text, level] :
         {std::tuple{"annotation berth.dev/required-level", &first.required_level, &job.spec.required_level},
          std::tuple{"annotation berth.dev/preferred-level", &first.preferred_level, &job.spec.preferred_level}}) {
      auto l = ParseLevelText(field, *text);
      if (l.ok()) *level = *l;
      else if (topology.ok()) topology = l.status();
    }
    for (const char* kind : {"berth-podgroup:", "volcano-podgroup:"}) {
      auto g = pod_groups_.find(kind + first.group);
      if (g == pod_groups_.end()) continue;
      if (g->second.gpu_memory_mib < 0)
        gpu_memory = InvalidArgument("PodGroup spec.gpuMemoryMiB: expected a non-negative integer (MiB)");
      else if (g->second.gpu_memory_mib > 0)
        gpu_memory_mib = g->second.gpu_memory_mib;
      if (!g->second.queue.empty()) job.spec.queue = g->second.queue;
      if (!g->second.repair.empty()) {
        repair_where = "PodGroup " + first.group + ": annotation berth.dev/repair";
        repair_text = g->second.repair;
      }
      if (!g->second.topology_error.empty()) {
        if (topology.ok()) topology = InvalidArgument(g->second.topology_error);
      } else {
        group_topology = &g->second.topology;
      }
    }
    // The framework the gang's launch spec is written for (TF_CONFIG for tf).
    Status launcher = Status::Ok();
    if (!first.launcher.empty()) {
      if (auto l = job::ParseLauncher(first.launcher)) {
        job.spec.launcher = *l;
      } else {
        launcher = InvalidArgument("annotation berth.dev/launcher: expected torch, tf, mpi or none, found '" +
                                   first.launcher.substr(0, 64) + "'");
      }
    }
    Status repair = Status::Ok();
    if (auto r = ParseRepairAnnotation(repair_where, repair_text); r.ok()) {
      job.repair = *r;
    } else {
      repair = r.status();
    }
    std::vector<std::string> subgroup_of_group;  // a task group per run of one shape and subgroup
    for (PodEntry* p : members) {
      job::TaskGroup* last = job.spec.groups.empty() ? nullptr : &job.spec.groups.back();
      if (last && last->gpus == p->gpus && last->cpu_milli == p->cpu_milli && last->memory_mib == p->memory_mib &&
          subgroup_of_group.back() == p->subgroup) {
        ++last->count;
      } else {
        job::TaskGroup g;
        g.name = p->subgroup.empty() ? "group-" + std::to_string(job.spec.groups.size()) : p->subgroup;
        subgroup_of_group.push_back(p->subgroup);
        g.count = 1;
        g.gpus = p->gpus;
        g.cpu_milli = p->cpu_milli;
        g.memory_mib = p->memory_mib;
        job.spec.groups.push_back(g);
      }
      p->job = job.id;
      p->task = static_cast<int32_t>(job.pod_of_task.size());
      job.pod_of_task.push_back(p->uid);
    }
    if (group_topology) ApplyPodGroupTopology(*group_topology, subgroup_of_group, job.spec);
    // A Deployment's pod is a service replica (pod_service.h).
    const Status service = first.service_error.empty() ? Status::Ok() : InvalidArgument(first.service_error);
    if (service.ok() && first.group.empty()) MarkReplica(first, job);
    if (service.ok() && !first.group.empty()) job.spec.best_effort = first.service.best_effort;
    for (auto& g : job.spec.groups)
      if (g.gpus > 0) g.gpu_memory_mib = gpu_memory_mib;
    job::ResolveGpuTypes(job.spec, *cluster_);
    Status s = !launcher.ok()      ? launcher
               : !service.ok()     ? service
               : !gpu_memory.ok()  ? gpu_memory
               : !topology.ok()    ? topology
               : !repair.ok()      ? repair
                                   : job::ValidateJob(job.spec);
    if (s.ok()) s = sched_->Submit(job.spec);
    if (!s.ok()) {
      for (PodEntry* p : members) {
        p->job = -1;
        if (options_.pod_conditions && p->shown_reason != s.message()) {
          p->shown_reason = s.message();
          Enqueue(WriteOp::Make(WriteOp::Kind::kCondition, p->ns, p->name, p->uid, "", "", "berth: " + s.message()));
        }
      }
      continue;
    }
    pending_job_of_group_[key] = job.id;
    jobs_.emplace(job.id, std::move(job));
  }
}

void KubeScheduler::Pass() {
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<JobId> started = sched_->Schedule();
  ++metrics_.scheduling_passes;
  // A replica waiting for a victim's min-runtime guard, or a job for its
  // queue's budget, is tried again then (the loop wakes for it).
  budget_renew_at_ = sched_->NextBudgetRenewal(clock_.Now());
  guard_expires_at_ = sched_->NextGuardExpiry(clock_.Now());
  for (JobId victim : sched_->preempted_in_last_pass()) {
    // Kubernetes owns the victim's pods: they are evicted (their grace period
    // is the checkpoint signal) and their owners make new ones; Berth keeps
    // no requeued copy of the job.
    auto jit = jobs_.find(victim.value());
    if (jit == jobs_.end()) continue;
    ++metrics_.preemptions;
    (void)sched_->Finish(victim, JobState::kCancelled);
    for (const auto& uid : jit->second.pod_of_task) {
      auto p = pods_.find(uid);
      if (p == pods_.end()) continue;
      Enqueue(WriteOp::Make(WriteOp::Kind::kEvict, p->second.ns, p->second.name, uid));
      ++evictions_;
    }
    log_.Info("kube_preempted", {{"group", jit->second.group}, {"job", victim.value()}});
    // The preemptor holds the victims' GPUs in Berth's view from now on, so
    // nothing else is placed there (no cascade); it binds once they are gone.
    for (const auto& uid : jit->second.pod_of_task) {
      auto p = pods_.find(uid);
      if (p != pods_.end()) {
        p->second.job = -1;
        p->second.terminating = true;
      }
    }
    for (JobId s : started) {
      auto sj = jobs_.find(s.value());
      if (sj == jobs_.end()) continue;
      for (const auto& uid : jit->second.pod_of_task)
        if (pods_.count(uid)) sj->second.waiting_for.insert(uid);
    }
    ForgetLaunchConfig(jit->second);
    jobs_.erase(jit);
  }
  for (JobId id : started) {
    auto jit = jobs_.find(id.value());
    if (jit == jobs_.end()) continue;
    AfterStart(jit->second);
  }
  // Jobs held for their victims bind once those pods are gone.
  for (auto& [id, job] : jobs_)
    if (job.running && !job.binds_sent && job.waiting_for.empty()) SendBinds(job);
  UpdateWaiting();
  if (!started.empty()) {
    metrics_.decisions += started.size();
    metrics_.decision_latency.Observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  metrics_.pass_latency.Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

void KubeScheduler::AfterStart(JobEntry& job) {
  job.running = true;
  if (auto g = pending_job_of_group_.find(job.group); g != pending_job_of_group_.end() && g->second == job.id)
    pending_job_of_group_.erase(g);
  dirty_ = true;  // the group may have more pods waiting
  if (job.waiting_for.empty()) SendBinds(job);
  GroupStatus(job.group, "Running", static_cast<int64_t>(job.pod_of_task.size()),
              "berth: " + std::to_string(job.pod_of_task.size()) + " pods placed");
}

void KubeScheduler::GroupStatus(const std::string& group, const std::string& phase, int64_t scheduled,
                                const std::string& message) {
  if (!pod_groups_.count("berth-podgroup:" + group)) return;  // only Berth's own PodGroup objects
  const std::string shown = phase + "|" + std::to_string(scheduled) + "|" + message;
  auto& last = group_status_shown_[group];
  if (last == shown) return;
  last = shown;
  const auto slash = group.find('/');
  Enqueue(WriteOp::Make(WriteOp::Kind::kGroupStatus, group.substr(0, slash), group.substr(slash + 1), "", phase,
                        std::to_string(scheduled), message));
}

void KubeScheduler::SendBinds(JobEntry& job, int32_t only_task) {
  job.binds_sent = true;
  const auto* rec = sched_->Find(JobId(job.id));
  if (!rec) return;
  // The gang's launch spec (docs/launch.md): each pod's rank, the world size
  // and the master ride along as annotations of its Binding; a gang's whole
  // spec goes into its launch ConfigMap, written before the binds.
  std::vector<const workload::TaskLaunch*> launch_of_task(rec->spec.num_tasks(), nullptr);
  if (job.rank_order.empty()) job.rank_order = workload::RankOrder(rec->placements);
  workload::LaunchOptions launch_options;
  launch_options.rank_order = job.rank_order;  // a replacement takes its task's rank
  StatusOr<workload::LaunchSpec> launch =
      workload::ComputeLaunchSpec(*cluster_, rec->spec, rec->placements, launch_options);
  if (launch.ok()) {
    for (const auto& t : launch->tasks)
      if (t.task >= 0 && t.task < static_cast<int32_t>(launch_of_task.size())) launch_of_task[t.task] = &t;
  } else {
    log_.Warn("kube_launch_spec", {{"job", job.id}, {"error", launch.status().message()}});
  }
  const bool gang = job.group.rfind("uid:", 0) != 0;
  std::string ns;
  std::vector<LaunchPod> members(job.pod_of_task.size());
  for (size_t t = 0; t < job.pod_of_task.size(); ++t)
    if (auto pit = pods_.find(job.pod_of_task[t]); pit != pods_.end()) {
      members[t] = {pit->second.name, pit->second.uid};
      ns = pit->second.ns;
    }
  const std::string config = gang && launch.ok() && !ns.empty() ? LaunchConfigMapName(job.group) : "";
  std::vector<WriteOp> binds;
  for (const auto& p : rec->placements) {
    if (only_task >= 0 && p.task.index != only_task) continue;
    const std::string& uid = job.pod_of_task[p.task.index];
    auto pit = pods_.find(uid);
    if (pit == pods_.end()) continue;
    PodEntry& pod = pit->second;
    pod.binding = true;
    const std::string node = cluster_->node(p.alloc.node).name;
    WriteOp op =
        WriteOp::Make(WriteOp::Kind::kBind, pod.ns, pod.name, uid, node, MaskText(p.alloc.gpu_mask), "", job.id);
    if (p.task.index >= 0 && p.task.index < static_cast<int32_t>(launch_of_task.size()) &&
        launch_of_task[p.task.index]) {
      const workload::TaskLaunch& t = *launch_of_task[p.task.index];
      op.annotations = {{"berth.dev/rank", std::to_string(t.rank)},
                        {"berth.dev/world-size", std::to_string(launch->world_size)},
                        {"berth.dev/local-rank", std::to_string(t.local_rank)},
                        {"berth.dev/node-rank", std::to_string(t.node_rank)},
                        {"berth.dev/master", launch->master_addr + ":" + std::to_string(launch->master_port)}};
      if (!config.empty()) op.annotations.emplace_back("berth.dev/launch-config", config);
    }
    // Isolation limits for the node's runtime (docs/kubernetes-scheduler.md).
    const workload::IsolationLimits lim = workload::IsolationOf(p.alloc);
    if (lim.gpu_memory_mib > 0)
      op.annotations.emplace_back("berth.dev/gpu-memory-limit-mib", std::to_string(lim.gpu_memory_mib));
    if (lim.active_thread_percent > 0)
      op.annotations.emplace_back("berth.dev/gpu-compute-percent", std::to_string(lim.active_thread_percent));
    binds.push_back(std::move(op));
  }
  if (!config.empty()) {
    job.launch_config = config;
    job.launch_config_uid.clear();
    WriteOp cm = WriteOp::Make(WriteOp::Kind::kConfigMap, ns, config, "", "", "", "", job.id);
    cm.object = LaunchConfigMap(ns, job.group, job.id, *launch, members);
    cm.then = std::move(binds);
    Enqueue(std::move(cm));
  } else {
    for (auto& op : binds) Enqueue(std::move(op));
  }
  if (only_task < 0) log_.Info("kube_placed", {{"group", job.group}, {"job", job.id}, {"pods", rec->placements.size()}});
}

void KubeScheduler::OnLaunchConfigWritten(int64_t job, const std::string& ns, const std::string& name,
                                          const std::string& uid) {
  auto jit = jobs_.find(job);
  if (jit != jobs_.end() && jit->second.launch_config == name) {
    jit->second.launch_config_uid = uid;
    return;
  }
  // The gang ended while its ConfigMap was being written: it goes now.
  if (!uid.empty()) Enqueue(WriteOp::Make(WriteOp::Kind::kDeleteConfigMap, ns, name, uid));
}

void KubeScheduler::ForgetLaunchConfig(const JobEntry& job) {
  if (job.launch_config.empty() || job.launch_config_uid.empty()) return;  // the ownerReferences collect it
  std::string ns;
  for (const auto& uid : job.pod_of_task)
    if (auto p = pods_.find(uid); p != pods_.end()) ns = p->second.ns;
  if (ns.empty()) ns = job.group.substr(0, job.group.find('/'));
  Enqueue(WriteOp::Make(WriteOp::Kind::kDeleteConfigMap, ns, job.launch_config, job.launch_config_uid));
}

void KubeScheduler::OnBindDone(const WriteOp& op, const Status& s) {
  auto pit = pods_.find(op.uid);
  if (s.ok()) {
    ++binds_ok_;
    if (pit != pods_.end()) {
      pit->second.binding = false;
      if (pit->second.node.empty()) pit->second.node = op.node;
    }
    return;
  }
  ++binds_failed_;
  log_.Warn("kube_bind_failed", {{"pod", op.ns + "/" + op.name}, {"node", op.node}, {"error", s.message()}});
  if (pit == pods_.end()) return;  // gone: the watch released it
  // The pod could not be bound: its task is released and it waits again.
  PodEntry& p = pit->second;
  p.binding = false;
  if (p.node.empty()) {
    PodGone(p, JobState::kCancelled);
    p.job = -1;
    p.task = -1;
  }
  dirty_ = true;
}

// Waiting pods learn why (a condition and an event), at most once per interval.
void KubeScheduler::UpdateWaiting() {
  if (!options_.pod_conditions) return;
  const TimeUs now = clock_.Now();
  for (const auto& [key, id] : pending_job_of_group_) {
    const auto* rec = sched_->Find(JobId(id));
    auto jit = jobs_.find(id);
    if (!rec || jit == jobs_.end() || rec->last_verdict.reason.empty()) continue;
    const std::string message = "berth: " + rec->last_verdict.reason;
    GroupStatus(key, rec->last_verdict.code == framework::VerdictCode::kUnresolvable ? "Unschedulable" : "Pending", 0,
                message);
    for (const auto& uid : jit->second.pod_of_task) {
      auto p = pods_.find(uid);
      if (p == pods_.end()) continue;
      PodEntry& pod = p->second;
      if (pod.shown_reason == message || now - pod.shown_at < options_.condition_interval) continue;
      pod.shown_reason = message;
      pod.shown_at = now;
      Enqueue(WriteOp::Make(WriteOp::Kind::kCondition, pod.ns, pod.name, uid, "", "", message));
    }
  }
}

}  // namespace berth::kube
