// Berth as a Kubernetes scheduler of its own: the scheduling core driven by
// the API server. Nodes, Pods and PodGroups are listed and watched (resuming
// from the last resourceVersion, re-listing after 410 Gone); pods whose
// spec.schedulerName is Berth's are grouped into gangs and placed by the same
// scheduler::Scheduler the simulator and `berth serve` use; placements are
// bound through the pods/binding subresource (the GPU indexes ride along as
// the annotation berth.dev/gpus). Waiting pods get a PodScheduled=False
// condition with Berth's reason and a FailedScheduling event.
//
// The truth about what runs is Kubernetes': every non-terminal pod bound to a
// node holds its resources in Berth's state until the watch reports it gone
// (deleted, Succeeded or Failed). After a restart Berth rebuilds from the
// lists alone: bound pods are adopted where they are (by group), pending ones
// queued in creation order.
//
// Threads: one watch thread per resource feeds a queue; one loop thread owns
// the Scheduler and every table; a pool of writer threads binds, evicts and
// writes conditions and events, reporting back through the queue.
//
// A Deployment's pods are service replicas (kube_services.cc); Deployments
// annotated berth.dev/autoscale are sized by the core's autoscaler through
// their scale subresource (kube_autoscale.h). A pending replica waiting for a
// victim's min-runtime guard gets a pass when it expires.
//
// Node set changes (a node added or deleted, or its GPUs, type or topology
// labels changed) rebuild the cluster model and re-adopt every placement
// (ADR 0001: the node order is fixed per model); cordon and readiness only
// mark a node down or up.
//
// A node lost (NotReady, or a NoExecute taint) requeues each gang with a pod
// there (all its pods evicted), or, with in-place repair (--repair in-place,
// or the gang's berth.dev/repair annotation), moves only the tasks there to
// a spare or free node of their domain and evicts only their pods; the
// replacement pod the owner makes is bound to that node, in the freed rank
// (kube_repair.cc).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/common/clock.h"
#include "berth/faults/handler.h"
#include "berth/framework/registry.h"
#include "berth/kubesched/client.h"
#include "berth/kubesched/group_topology.h"
#include "berth/kube/node_model.h"
#include "berth/scheduler/scheduler.h"
#include "berth/server/colocation_flags.h"
#include "berth/server/log.h"
#include "berth/server/metrics.h"
#include "berth/server/pod_service.h"
#include "berth/server/read_view.h"
#include "berth/tenancy/queue_tree.h"
#include "berth/tenancy/queue_yaml.h"
#include "berth/workload/autoscaler.h"

namespace berth::kube {

struct KubeSchedulerOptions {
  std::string scheduler_name = "berth";
  std::string policy = "topology";
  NodeModelOptions node_model;
  // A queue file (docs/queues.md), resolved against each cluster model built
  // from the Nodes; Queue objects, when there are any, take its place. Neither:
  // every namespace its own queue.
  std::optional<tenancy::QueueFile> queue_file;
  std::string queue_file_name;
  // A tree in normalized units (`unit: normalized`, or a `reference`) charges
  // through the throughput model: this accelerator catalog, fitted to a
  // measured table ("" = the spec-based estimate only).
  std::string catalog = "data/accelerators.yaml";
  std::string throughputs;
  TimeUs usage_half_life = 0;
  uint64_t seed = 42;
  TimeUs min_runtime = -1;       // preemption guard (-1: the policy's default)
  std::vector<std::string> plugin_args;  // "PLUGIN.KEY=VALUE" (--plugin-arg)
  TimeUs preemption_grace = 0;
  // Yield deadlines of evicted best-effort and checkpointing work (-1: the
  // grace; SchedulerOptions::yield_best_effort, yield_training_grace).
  TimeUs yield_best_effort = -1;
  TimeUs yield_training_grace = -1;
  // The services' reserved nodes (--reserved-nodes: Node names; docs/services.md,
  // "On Kubernetes"), resolved against each cluster model built from the Nodes.
  server::ServeColocation colocation;
  // The autoscaler of the Deployments that opt in (kube_autoscale.h): HPA's
  // defaults, as in `berth serve`.
  workload::AutoscalerOptions autoscaler;
  TimeUs tick = 20'000;          // the loop's longest sleep
  int writers = 32;              // parallel bind/evict/status requests
  bool pod_conditions = true;    // PodScheduled=False with the reason on waiting pods
  bool events = true;            // Scheduled / FailedScheduling events
  TimeUs condition_interval = 2'000'000;  // at most one condition update per waiting pod per interval
  int watch_timeout_s = 300;
  // In-place repair of gangs on a lost node (docs/kubernetes.md, "In-place
  // repair"): the mode (a gang's berth.dev/repair annotation overrides it),
  // hot spares kept idle per leaf or spine (as ServiceOptions::spares), the
  // repair cost (SchedulerOptions), and how long a repaired task's target is
  // held for its replacement pod before the gang is requeued after all.
  faults::RepairMode repair = faults::RepairMode::kRequeue;
  faults::SpareSetting spares;
  TimeUs repair_cost = 0;
  TimeUs replacement_timeout = 300'000'000;
  // When set, writes happen only while it is true (leader election: a
  // replica that lost its Lease binds and evicts nothing more).
  const std::atomic<bool>* leading = nullptr;
};

// What the loop knows of one pod.
struct PodEntry {
  std::string ns, name, uid;
  std::string scheduler;       // spec.schedulerName
  std::string node;            // spec.nodeName ("" = unbound)
  std::string phase;
  bool terminating = false;    // deletionTimestamp set (still holds its resources)
  std::string group;           // "ns/group" or "" for a lone pod
  int32_t min_member = 1;
  std::string queue;
  std::string priority_class;
  int32_t priority = 0;
  int32_t gpus = 0;
  MilliCpu cpu_milli = 0;
  MiB memory_mib = 0;
  std::string created;         // metadata.creationTimestamp (RFC 3339 sorts as text)
  std::string gpu_annotation;  // berth.dev/gpus
  std::string required_level, preferred_level;  // berth.dev/required-level, ...-preferred-level
  std::string gpu_memory;  // berth.dev/gpu-memory-mib: GPU memory per GPU (MiB), as written
  std::string subgroup;        // label berth.dev/subgroup (or kai.scheduler/subgroup-name)
  std::string launcher;        // berth.dev/launcher: torch, tf, mpi, none ("" = none)
  std::string repair;          // berth.dev/repair: in-place or requeue ("" = the --repair flag)
  // A Deployment's pod (or one labelled berth.dev/service) is a service
  // replica (pod_service.h); why it cannot be read, when it cannot.
  server::k8s::PodService service;
  std::string service_error;
  // Berth's bookkeeping.
  int64_t job = -1;            // the Berth job holding this pod's task
  int32_t task = -1;
  bool binding = false;        // a bind request is in flight
  std::string shown_reason;    // the last condition message written
  TimeUs shown_at = 0;
};

class KubeScheduler {
 public:
  KubeScheduler(KubeClient& client, KubeClient& event_client, KubeSchedulerOptions options, server::Logger& log,
                server::Metrics& metrics);
  ~KubeScheduler();

  // Lists nodes, pods and pod groups, rebuilds the state, then starts the
  // watches, the loop and the writers. Errors: the API server cannot be read.
  Status Start();
  void Stop();
  bool ready() const { return ready_.load(); }

  // Views for /v1/nodes, /v1/pods and /metrics (computed on the loop thread).
  nlohmann::json NodesJson();
  nlohmann::json PodsJson();
  std::string MetricsText();
  // The queue tree's figures (kube_queue_views.cc): GET /v1/queues, and the
  // per-queue gauges /metrics appends (server/queue_metrics.h).
  nlohmann::json QueuesJson();
  std::string QueueMetricsText();
  // Services on Kubernetes (kube_autoscale.h): the autoscaled Deployments
  // (/v1/services), one of them (/v1/services/NS/NAME), and a load report
  // for one (POST /v1/services/NS/NAME/load: {"requests_per_s": R}).
  struct Answer {
    int status = 200;
    nlohmann::json body;
  };
  nlohmann::json ServicesJson();
  Answer GetService(const std::string& ns, const std::string& name);
  Answer ReportServiceLoad(const std::string& ns, const std::string& name, const std::string& body);
  // Runs `fn` on the loop thread after everything queued before it.
  bool Sync(std::function<void()> fn = [] {});

 private:
  struct QueueFigures {
    server::QueueViews views;                     // per queue, pending/running over its subtree
    std::map<std::string, int64_t> leaf_pending;  // gangs by leaf queue name
    std::map<std::string, int64_t> leaf_running;
  };
  QueueFigures Queues();
  struct JobEntry {
    int64_t id = -1;
    std::string group;                 // group key (or "uid:<uid>" for a lone pod)
    job::JobSpec spec;
    std::vector<std::string> pod_of_task;  // task index -> pod uid ("" once gone)
    bool running = false;
    std::set<std::string> waiting_for;  // victims' pods that must be gone before binding
    bool binds_sent = false;
    // The gang's launch ConfigMap (launch_config.h): its name once written
    // for this job, and its uid once the API server answered.
    std::string launch_config, launch_config_uid;
    std::string service;  // "ns/NAME" when the job is a replica of that service
    // The task index of each rank, from the first placement bound: kept
    // through in-place repairs (workload::LaunchOptions::rank_order).
    std::vector<int32_t> rank_order;
    // The gang's repair mode (nullopt: KubeSchedulerOptions::repair).
    std::optional<faults::RepairMode> repair;
    // Tasks repaired in place whose replacement pod is awaited: the task's
    // placement is already on the target node (pod_of_task is "" for it).
    struct Awaited {
      std::string pod;       // the evicted pod's name (a replacement of that name is preferred)
      std::string from, to;  // the lost node and the target node
      TimeUs deadline = 0;   // then the gang is requeued
    };
    std::map<int32_t, Awaited> awaiting;  // by task index
  };
  struct GroupInfo {  // from a PodGroup object
    int32_t min_member = 0;
    std::string queue;
    std::string priority_class;
    PodGroupTopology topology;   // spec.topology and spec.subGroups (group_topology.h)
    std::string topology_error;  // why they could not be read ("" when they could)
    int64_t gpu_memory_mib = 0;  // spec.gpuMemoryMiB: every member's GPU memory per GPU (0: not set)
    std::string repair;          // metadata.annotations berth.dev/repair, as written
  };
  // A Deployment with berth.dev/autoscale: "true" (kube_autoscale.h).
  struct ScaledDeployment {
    std::string ns, name;
    int32_t replicas = 1;            // spec.replicas, as last seen or written
    job::ServiceSpec spec;           // min, max and target from the annotations
    std::string error;               // why the annotations do not read ("" when they do)
    std::unique_ptr<workload::Autoscaler> autoscaler;  // null while `error` is set
    int64_t load_milli_rps = -1;     // the latest load (-1: none yet)
    int64_t annotation_load = -1;    // berth.dev/load-requests-per-s as last read
    std::string load_source;         // "report" or "annotation"
    bool scaling = false;            // a scale write is in flight
    int64_t scale_writes = 0;
  };
  struct WriteOp {
    enum class Kind {
      kBind, kEvict, kCondition, kDelete, kGroupStatus, kScheduledEvent,
      kConfigMap,        // create or replace `object` (a ConfigMap), then queue `then`
      kDeleteConfigMap,  // delete ConfigMap `name` if its uid is still `uid`
      kScale,            // Deployment `name`'s scale subresource to `replicas`
    } kind = Kind::kBind;
    std::string ns, name, uid, node, gpus, message;
    int64_t job = -1;
    int32_t replicas = 0;  // kScale
    // kBind: more annotations for the pod, from the gang's launch spec
    // (berth.dev/rank, berth.dev/world-size, berth.dev/master, ...).
    std::vector<std::pair<std::string, std::string>> annotations;
    nlohmann::json object;      // kConfigMap: the object to write
    std::vector<WriteOp> then;  // kConfigMap: the binds that follow it
    static WriteOp Make(Kind kind, std::string ns, std::string name, std::string uid, std::string node = "",
                        std::string gpus = "", std::string message = "", int64_t job = -1) {
      WriteOp op;
      op.kind = kind;
      op.ns = std::move(ns);
      op.name = std::move(name);
      op.uid = std::move(uid);
      op.node = std::move(node);
      op.gpus = std::move(gpus);
      op.message = std::move(message);
      op.job = job;
      return op;
    }
  };

  // Watch plumbing (watch threads).
  void WatchLoop(const std::string& kind, const std::string& collection, std::string rv);
  void Post(std::function<void()> fn);
  void Loop();
  // One turn of the loop after the queued work ran: rebuild, adopt, repairs
  // and spares, then a pass when one is due.
  void Turn();
  void WriterLoop();
  void Enqueue(WriteOp op);
  // A Berth PodGroup's status: phase, pods scheduled, and the reason it waits.
  void GroupStatus(const std::string& group, const std::string& phase, int64_t scheduled, const std::string& message);
  void PostEvent(const WriteOp& op, const char* type, const char* reason, const std::string& message);

  // On the loop thread.
  void OnNode(const std::string& type, const nlohmann::json& obj);
  void OnPod(const std::string& type, const nlohmann::json& obj);
  void OnPodGroup(const std::string& kind, const std::string& type, const nlohmann::json& obj);
  void OnRelisted(const std::string& kind, const std::vector<nlohmann::json>& items);
  void PodGone(PodEntry& pod, job::JobState how);
  void Rebuild();
  void AdoptUntracked();
  void FormJobs();
  void Pass();
  void AfterStart(JobEntry& job);
  // Binds the job's pods (only task `only_task`'s, when >= 0: a replacement).
  void SendBinds(JobEntry& job, int32_t only_task = -1);
  void UpdateWaiting();
  // In-place repair and spares (kube_repair.cc). NodeLost repairs or
  // requeues every running gang with a pod on `node`.
  void NodeLost(NodeId node, const std::string& reason);
  // Moves the gang's tasks on `node` to replacements and evicts their pods;
  // false (the caller requeues the gang) when repair is off for it, does not
  // apply, or a task finds no place.
  bool TryRepair(JobEntry& job, NodeId node, const std::string& reason);
  faults::RepairMode RepairModeOf(const JobEntry& job) const { return job.repair.value_or(options_.repair); }
  // Pending pods of a gang awaiting replacements take the freed ranks.
  void AttachReplacements();
  // Awaited replacements past their deadline: the gang is requeued.
  void ExpireRepairs(TimeUs now);
  // Releases the awaited tasks' placements (no replacement will come).
  void DropAwaited(JobEntry& job);
  // Keeps options_.spares spares per domain among empty usable nodes.
  void RefreshSpares();
  // After a rebuild: the spares are down in the new scheduler.
  void ReapplySpares();
  std::string RepairMetricsText() const;
  void OnBindDone(const WriteOp& op, const Status& s);
  // A gang's launch ConfigMap was written (uid) or could not be ("").
  void OnLaunchConfigWritten(int64_t job, const std::string& ns, const std::string& name, const std::string& uid);
  // The gang ended: its launch ConfigMap goes (when Berth knows its uid).
  void ForgetLaunchConfig(const JobEntry& job);
  // The writer's side of kConfigMap: create, or replace what is there.
  StatusOr<nlohmann::json> WriteConfigMap(const WriteOp& op);
  // A write tried again while the API server answers Unavailable (5 tries,
  // 100 ms more back-off each), until the scheduler stops.
  StatusOr<nlohmann::json> Retried(const std::function<StatusOr<nlohmann::json>()>& call);
  void CancelPendingJob(int64_t id);
  std::string GroupKey(const PodEntry& p) const;
  int32_t MinMember(const PodEntry& p) const;
  StatusOr<std::unique_ptr<scheduler::Scheduler>> NewScheduler(const cluster::Cluster& c);
  // The queue tree from the Queue objects (null when there are none).
  StatusOr<std::shared_ptr<const tenancy::QueueTree>> QueuesFromCrds(const cluster::Cluster& c) const;
  void OnQueue(const std::string& type, const nlohmann::json& obj);
  // Autoscaled Deployments (kube_autoscale.cc): the watch, the evaluations
  // due (a scale write when the count changes), and the write's answer.
  void OnDeployment(const std::string& type, const nlohmann::json& obj);
  void AutoscaleTick();
  void OnScaleDone(const WriteOp& op, const Status& s);
  nlohmann::json ServiceView(const ScaledDeployment& d, int32_t bound, int32_t waiting) const;
  // On the loop: fn(key, deployment) for an autoscaled Deployment, a 404 for
  // any other name, a 503 when the loop does not answer.
  Answer OnScaledDeployment(const std::string& ns, const std::string& name,
                            const std::function<Answer(const std::string&, ScaledDeployment&)>& fn);
  std::optional<NodeId> NodeIdOf(const std::string& name) const;
  // Makes `job` a replica of its pod's service (or a best-effort batch job),
  // counting the replicas of that service Berth holds already.
  void MarkReplica(const PodEntry& pod, JobEntry& job);
  // The colocation filter's args for cluster `c` (empty: no reservation).
  StatusOr<framework::PluginArgs> ColocationFor(const cluster::Cluster& c) const;

  friend class KubeSchedulerTestPeer;  // kube_repair_test.cc drives the loop's methods

  KubeClient& client_;
  KubeClient& event_client_;
  KubeSchedulerOptions options_;
  server::Logger& log_;
  server::Metrics& metrics_;
  SystemClock clock_;
  framework::PolicyRegistry policies_;
  framework::PluginRegistry plugins_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> stopping_{false};

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::thread loop_;
  std::vector<std::thread> watchers_;

  std::mutex wmu_;
  std::condition_variable wcv_;
  std::deque<WriteOp> writes_;        // binds and evictions first
  std::deque<WriteOp> low_writes_;    // conditions and events
  std::vector<std::thread> writers_;

  // Owned by the loop thread.
  std::map<std::string, NodeInfo> nodes_;           // by name
  std::unique_ptr<cluster::Cluster> cluster_;
  std::unique_ptr<scheduler::Scheduler> sched_;
  bool topology_dirty_ = true;
  bool dirty_ = true;
  // When a pass is due although nothing changed (-1: none): a spent budget
  // renews, or a pending replica's victim leaves its min-runtime guard
  // (Scheduler::NextBudgetRenewal, NextGuardExpiry); the loop sleeps no
  // longer than until then.
  TimeUs budget_renew_at_ = -1;
  TimeUs guard_expires_at_ = -1;
  std::unordered_map<std::string, PodEntry> pods_;  // by uid
  std::map<std::string, std::string> group_status_shown_;  // "ns/name" -> last status written
  std::map<std::string, GroupInfo> pod_groups_;     // "kind:ns/name" -> PodGroup
  std::map<std::string, nlohmann::json> queue_crds_;  // Queue name -> spec
  std::shared_ptr<const tenancy::QueueTree> current_queues_;
  std::string queue_error_;                           // why the Queue objects make no tree ("" = fine)
  std::map<int64_t, JobEntry> jobs_;
  std::map<std::string, int64_t> pending_job_of_group_;
  int64_t next_job_ = 1;
  int64_t binds_ok_ = 0, binds_failed_ = 0, evictions_ = 0;
  std::set<std::string> untracked_;  // uids of bound pods not yet in a job
  std::map<std::string, int64_t> service_ids_;  // "ns/NAME" -> the id its replicas' replica_of names
  std::map<std::string, ScaledDeployment> deployments_;  // "ns/NAME" -> an autoscaled Deployment
  int64_t scale_writes_ = 0, scale_failures_ = 0;
  std::set<std::string> spares_;     // names of the hot spares (down for the scheduler)
  std::set<int64_t> awaiting_jobs_;  // jobs with an awaited replacement
  int64_t repair_timeouts_ = 0;      // replacements that did not come in time
};

}  // namespace berth::kube
