// The live service: the scheduling core (scheduler::Scheduler with a real
// clock) run as a daemon over a durable store. HTTP-agnostic: the HTTP layer
// (http_server.h) and the tests call the methods below, which answer with an
// HTTP status and a JSON document.
//
// Threads: one scheduling thread owns the Scheduler and every table below;
// other threads hand it work through a queue (Post/Call) and wait for the
// answer. A submission is answered only once its record is durable in the
// store; then the scheduling thread queues it. Decisions are written to the
// store before the (virtual) nodes are told to run them.
//
// Reads (jobs, why, queues, nodes, metrics, the admin list) never run on the
// scheduling thread: it publishes a snapshot (read_view.h) at the end of each
// turn of its loop, and answers what it was asked in that turn (Call, a
// submission's acceptance) only after publishing, so a client reads its own
// writes. A scheduling pass has a time budget (pass_budget): a pass that
// overruns it stops between jobs and the next turn continues it.
//
// Heartbeats: their arrival times are written to per-node atomics by the
// agents' thread, and judged on the loop against the steady clock; the loop
// being late never makes a node late (a heartbeat that arrived counts when it
// arrived), and a checker that itself did not run for longer than the timeout
// (the process was stopped) grants every node a fresh timeout.
//
// Node agents (ServiceOptions::agent_nodes, docs/agent.md): the cluster is
// the registered agents. A registration that adds or changes a node is made
// durable, then the cluster model is rebuilt and every placement re-adopted
// on the new model by node name (ADR 0001: node order is fixed per model;
// ADR 0014). Agents learn their tasks from heartbeat answers and report exits;
// the API serves the task logs they upload.
//
// Recovery (Start): the store's records are folded into the last state of
// every job; unfinished jobs are re-submitted in id order and running ones
// re-applied on their recorded placements (Scheduler::Adopt).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/common/clock.h"
#include "berth/faults/handler.h"
#include "berth/faults/spares.h"
#include "berth/framework/registry.h"
#include "berth/scheduler/scheduler.h"
#include "berth/server/extender_verify.h"
#include "berth/server/job_json.h"
#include "berth/server/log.h"
#include "berth/server/metrics.h"
#include "berth/server/read_view.h"
#include "berth/server/turn_clock.h"
#include "berth/server/virtual_nodes.h"
#include "berth/store/store.h"
#include "berth/tenancy/queue_yaml.h"
#include "berth/workload/launch.h"
#include "berth/workload/workflow.h"
#include "berth/workload/service_controller.h"

namespace berth::server {

struct ServiceOptions {
  std::string policy = "topology";  // a name from the policy registry
  bool virtual_nodes = false;
  double speedup = 1.0;                       // virtual nodes run jobs duration/speedup long
  TimeUs heartbeat_interval = 200'000;        // virtual agents, real time
  TimeUs heartbeat_timeout = 2'000'000;       // a node silent this long is down
  int32_t quarantine_failures = 3;            // failures within the window that quarantine a node
  TimeUs quarantine_window = 600'000'000;
  TimeUs tick = 20'000;                       // the scheduling loop's longest sleep
  TimeUs pass_budget = 100'000;               // a scheduling pass stops after this long; the next turn continues it
  int32_t read_slots = 0;                     // large reads built at once (0: half the cores, at least 1)
  // The scheduling thread's nice value (Linux, per thread): below the HTTP
  // threads' 0 and the large-read pool's 10, so reads cannot take its core
  // in the middle of a pass. 0: unchanged. A process not allowed to lower
  // it (no CAP_SYS_NICE, RLIMIT_NICE too low) logs that and runs at 0.
  int32_t scheduler_nice = -5;
  // 1-99: the scheduling thread runs under SCHED_FIFO at this priority (no
  // normal thread preempts it; it still sleeps between turns). 0: off. A
  // process not allowed to (no CAP_SYS_NICE, RLIMIT_RTPRIO too low) logs that
  // and uses scheduler_nice.
  int32_t scheduler_rt_priority = 0;
  TimeUs request_timeout = 30'000'000;        // longest wait for the loop or the store
  // An extender placement no pod of its group ever bound is released this
  // long after it was made (and a waiting group nobody asked about for this
  // long is dropped). Groups with a bound pod never expire.
  TimeUs extender_reservation_ttl = 600'000'000;
  // Idempotency keys. A job's key is held while the job is unfinished; when
  // it ends, a key the server made from the name ("name:<name>", no
  // idempotency_key sent) is freed at once, and a key the client sent is
  // kept until this long after the submission (so a late retry still gets
  // the same job), then freed. 0: freed when the job ends.
  TimeUs idempotency_ttl = 86'400'000'000;
  // The store records the cluster it was written for; a start on a different
  // cluster fails (kFailedPrecondition) unless this is set. Then the jobs
  // that no longer fit stay pending, reported (log and the job's "unfit").
  bool accept_cluster_change = false;
  uint64_t seed = 42;
  // The queue tree (null: every tenant its own unconstrained queue). With a
  // tree, the policy's profile gets the quota plugin if it lacks it.
  std::shared_ptr<const tenancy::QueueTree> queues;
  // With node agents the cluster grows as nodes register: the queue file as
  // written, resolved again against the registered nodes at every rebuild of
  // the cluster model (quotas of GPU types no node has yet are left out until
  // one joins). `queues` is then the tree without typed quotas: it maps
  // tenants to leaves at submission and turns the quota plugin on.
  std::optional<tenancy::QueueFile> queue_file;
  std::string queue_file_name;
  TimeUs usage_half_life = 0;  // decayed usage for fair share
  // Creates the Binding of pod ns/name (uid) to `node` in the API server, for
  // the extender's bind verb. Called on an HTTP thread, never on the
  // scheduling thread, so it may block. Unset: the bind verb answers an error.
  std::function<Status(const std::string& ns, const std::string& name, const std::string& uid,
                       const std::string& node)>
      k8s_bind;
  // The extender's source of truth (the API server's pods and PodGroups;
  // kube::ExtenderLink). With one, the verbs schedule the API server's copy
  // of the pod a request names and refuse pods they cannot verify
  // (extender_verify.h). Null: requests are taken as sent.
  std::shared_ptr<ExtenderPodSource> k8s_pods;
  // With k8s_pods: the spec.schedulerName values whose pods the verbs accept
  // (empty: any).
  std::vector<std::string> extender_scheduler_names;
  // What the verbs may make the service track (names, groups, pods).
  ExtenderLimits extender_limits;
  // Preemption: the grace an evicted job gets to checkpoint and leave (its
  // preemptor starts that much later; SchedulerOptions::preemption_grace),
  // and the least a job runs before it may be evicted (-1: the policy's
  // plugins' default, 600 s; plugins::SetMinRuntime).
  TimeUs preemption_grace = 0;
  TimeUs min_runtime = -1;
  // Plugin arguments, "PLUGIN.KEY=VALUE" (--plugin-arg; framework::ApplyPluginArgs).
  std::vector<std::string> plugin_args;
  // A run resumed from a checkpoint spends this long restoring before it
  // works (SchedulerOptions::restore_cost).
  TimeUs restore_cost = 0;
  // Yield deadlines of evicted best-effort and checkpointing work (-1: the
  // grace; SchedulerOptions::yield_best_effort, yield_training_grace).
  TimeUs yield_best_effort = -1;
  TimeUs yield_training_grace = -1;
  // Co-location: the args of the colocation filter (the services' reserved
  // nodes, mode, overcommit ratios; ColocationArgs in colocation_flags.h
  // builds them from --reserved-nodes and the queue file), added to the
  // policy's filters and admit plugins. Empty: no reservation.
  framework::PluginArgs colocation;
  // The throughput model of the hetero-speed and hetero-cost policies: the
  // accelerator catalog, fitted to a measured table ("" = specs only).
  std::string catalog = "data/accelerators.yaml";
  std::string throughputs;
  // What one submission may create (a 422 beyond; docs/service.md, "Input
  // limits").
  AdmissionLimits limits;
  // Real nodes run by `berth agent` (docs/agent.md): the cluster passed to
  // the constructor must be empty; the registered agents make it up.
  bool agent_nodes = false;
  // A task stopped by Berth (cancel, requeue, a failed rank's gang) gets
  // SIGTERM, then SIGKILL this long after (its agent's supervisor does it).
  TimeUs kill_grace = 10'000'000;
  // In-place repair with node agents (docs/failures.md, "In-place repair in
  // the service"): with kInPlace, a gang of two or more tasks whose node
  // fails (heartbeat timeout, a failed GPU it holds, a quarantine, a task
  // lost with its supervisor) keeps its other tasks' GPUs; each stopped task
  // starts again as a new attempt of the same run (same rank) on the same
  // node's other GPUs (a GPU failure), the same node (a lost task), a spare
  // of its domain or a free node of its leaf, then spine, within the
  // narrowest domain holding the gang. Without a place the gang is requeued.
  faults::RepairMode repair = faults::RepairMode::kRequeue;
  // Hot spares kept out of the scheduler per leaf or spine (per_domain N,
  // at least 1), chosen among empty healthy nodes (the highest names of the
  // domain first) and refilled as nodes come back.
  // per_domain -1 ("leaf" or "spine" alone): sized per domain from
  // spare_rates by the expected-cost rule (faults/spares.h) for the largest
  // gang the service holds, whose whole restart costs its restart_cost_s
  // (else restart_cost) against repair_cost; without rates, 1.
  faults::SpareSetting spares;
  std::vector<faults::FailureRate> spare_rates;
  TimeUs restart_cost = 0;
  TimeUs repair_cost = 0;  // a repaired gang works again after this (SchedulerOptions)
  // The other tasks of a repaired gang: keep running (they are told of the
  // new peer: the run list's "peers" and the task's peers.json), or restart
  // too as new attempts on their own GPUs.
  enum class RepairPeers : uint8_t { kKeep, kRestart } repair_peers = RepairPeers::kKeep;
  // Where the task logs agents upload are kept ("" = no logs kept).
  std::string agent_log_dir;
  int64_t max_log_bytes = 64ll << 20;  // per task and run; later bytes are dropped
  // Launch specs (GET /v1/jobs/{id}/launch): the MASTER_PORT range and a
  // node address hook (besides the addresses SetNodeAddress records).
  workload::LaunchOptions launch;
  // A federation member (docs/federation.md, "Fencing"): start fenced, so
  // nothing starts until a dispatcher grants a lease (without it the fence
  // holds from the first lease on).
  bool require_federation_lease = false;

  Status Validate() const;
};

// An answer: an HTTP status and a JSON document.
struct ApiResult {
  int code = 200;
  nlohmann::json body;
  // When set, the answer already serialized (body is then null): large reads
  // built from cached text (GET /v1/jobs).
  std::string text;
  static ApiResult Error(int code, const std::string& message) { return {code, {{"error", message}}}; }
};

class Service final : private VirtualNodes::Sink {
 public:
  Service(const cluster::Cluster& cluster, store::Store& store, ServiceOptions options, Logger& log,
          Metrics& metrics);
  ~Service() override;

  // Takes a term from the store, rebuilds state from its records, starts the
  // scheduling thread (and the virtual nodes). Then ready() is true. With a
  // replicated store, taking the term waits while another process leads
  // (a standby); Store::Interrupt() ends the wait (kUnavailable).
  Status Start();
  // Stops the threads; queued work that was not run fails.
  void Stop();
  // Ready: writing rights held and state loaded (readyz). Goes false when the
  // store fences this writer out, or on StepDown().
  bool ready() const { return ready_.load(); }
  // True once Start() has loaded the state (reads are served from then on).
  bool started() const { return phase_.load() >= Phase::kLeading; }
  // This process lost its term (replicated stores): stop deciding and
  // accepting at once. Any thread; idempotent.
  void StepDown(const std::string& reason);
  // The 503 answer while not ready: what this process is doing (standby,
  // loading, stepped down) and who leads when the store knows.
  ApiResult NotReady() const;

  // --- the API ---
  ApiResult SubmitJob(const std::string& body);
  ApiResult GetJob(int64_t id);
  ApiResult WhyJob(int64_t id);
  // The launch spec of a running job (docs/launch.md): 404 unknown, 409 not
  // placed (pending or ended). A read of the snapshot, off the loop.
  ApiResult GetLaunch(int64_t id);
  // The address peers reach `node` at in launch specs (an agent registers
  // it; "" forgets it). Any thread.
  void SetNodeAddress(const std::string& node, const std::string& address);
  // as_text: the answer as serialized text (ApiResult::text; each job's item
  // cached on its view), the same document as the body otherwise.
  ApiResult ListJobs(const std::string& state, int64_t after, int64_t limit, bool as_text = false);
  ApiResult CancelJob(int64_t id);
  ApiResult Queues();
  // For tests: the published per-queue tallies against a recount over every
  // published job view (Internal naming the first queue that differs).
  Status CheckReadTallies();
  ApiResult Nodes();
  // Every node's allocation as columns, with the spine > leaf tree as node
  // ranges (service_topology.cc; the dashboard's heat map).
  ApiResult Topology();
  // The capacity digest a federation dispatcher reads (service_digest.cc).
  ApiResult Digest();
  // A federation dispatcher's lease (GET /v1/digest?lease_until=): this
  // member may start jobs until `until` (wall clock); once it has lapsed it
  // starts nothing, and jobs the dispatcher sent (idempotency key "fed-...")
  // that still run `hold_running` after it are requeued here. A grant never
  // shortens the lease; one that arrives after it ended (a request delayed in
  // a stopped process) does not reopen it. Any thread.
  void GrantFederationLease(TimeUs until, TimeUs hold_running);
  std::string MetricsText();

  // --- the admin API (the HTTP layer checks the token) ---
  // `who` says who asked (client address, how authenticated), for the audit
  // log line every call writes.
  // The nodes that are down or quarantined, with their failure counts.
  ApiResult AdminNodes(const std::string& who);
  // Lifts the quarantine of node `name` (its failure window is cleared; it is
  // up again at its next heartbeat), durably. 404: no such node; 200 with
  // "was_quarantined": false when it was not.
  // Returns node `name` to service: lifts its quarantine (its failure window
  // is cleared; it is up again at its next heartbeat) and its drain, durably.
  // 404: no such node; 200 with "was_quarantined" and "was_draining" false
  // when it was neither.
  ApiResult Unquarantine(const std::string& name, const std::string& who);
  // Quarantines node `name` by hand, durably: no new work lands on it, and the
  // jobs running there stop and go back to the queue (from their last
  // checkpoint) at once. It stays out, across restarts, until Unquarantine.
  // Not counted as a failure. 404: no such node.
  ApiResult Quarantine(const std::string& name, const std::string& who);
  // Drains node `name`, durably: no new work lands on it; its running jobs go
  // on. The body is empty or {"deadline_s": S} (an integer >= 0): S seconds
  // from now the jobs still there take a checkpoint and go back to the queue
  // (planned maintenance). A drain of a draining node sets the new deadline.
  // 400: bad body; 404: no such node.
  ApiResult Drain(const std::string& name, const std::string& body, const std::string& who);

  // --- services (kind: service; docs/service.md, "Services") ---
  // A load report for service `id`: the body {"requests_per_s": R}; the
  // autoscaler in the scheduling loop reads the latest. 404: no such service.
  ApiResult ReportServiceLoad(int64_t id, const std::string& body);
  // The service's replicas as the controller sees them (desired, running, ...).
  ApiResult GetService(int64_t id);

  // --- the Kubernetes scheduler extender (bodies are the k8s JSON) ---
  ApiResult ExtenderFilter(const std::string& body);
  ApiResult ExtenderPrioritize(const std::string& body);
  ApiResult ExtenderPreempt(const std::string& body);
  ApiResult ExtenderBind(const std::string& body);
  // What a Kubernetes watch saw, for the extender's bookkeeping. Both return at
  // once; the work runs on the scheduling thread in order with the verbs.
  // A pod was deleted or reached Succeeded/Failed: Berth forgets it; when every
  // pod Berth knew of a group is gone, the group's job ends (its GPUs are
  // freed) and waiting jobs are tried again. Unknown pods are ignored.
  void ExtenderPodGone(const std::string& ns, const std::string& name, const std::string& uid);
  // A pod was seen bound to `node`: its group counts as bound (never expires).
  void ExtenderPodBound(const std::string& ns, const std::string& name, const std::string& uid,
                        const std::string& node);

  // --- the node API (the HTTP layer checks the node token; docs/agent.md) ---
  ApiResult AgentRegister(const std::string& body);
  ApiResult AgentHeartbeat(const std::string& body);
  ApiResult AgentTaskStatus(const std::string& body);
  // Appends `data` at byte `offset` of the log of (job, generation, task,
  // attempt), sent by node `name`.
  ApiResult AgentLogUpload(const std::string& name, const std::string& agent_id, int64_t job, int32_t generation,
                           int32_t task, int64_t offset, const std::string& data, int32_t attempt = 0);
  // The log of task `task` of job `id` (its latest run, or run `generation`
  // when >= 1): 200 with the text in body["text"], or an error.
  ApiResult JobLogs(int64_t id, int32_t task, int32_t generation);

  // Failure injection and inspection, for tests and demos (null without virtual nodes).
  VirtualNodes* virtual_nodes() { return vnodes_.get(); }
  // The cluster the scheduling thread uses (agents: changes on registration).
  const cluster::Cluster& cluster() const { return *cluster_; }
  // Runs `fn` on the scheduling thread after everything queued before it.
  bool Sync(std::function<void()> fn = [] {});

 private:
  struct JobEntry {
    int64_t id = -1;
    std::string key;          // idempotency key ("name:<name>" when the client sent none)
    std::string fingerprint;  // of the spec, to tell a retry from a different job
    job::JobSpec spec;
    job::JobState state = job::JobState::kPending;
    bool durable = false;     // its acceptance is in the store
    std::shared_future<Status> accepted;
    TimeUs accepted_at = 0, started_at = -1, finished_at = -1;
    int32_t generation = 0;   // times started
    int32_t requeues = 0;
    std::vector<framework::TaskPlacement> placements;
    std::string end_reason;
    bool extender = false;    // created by the Kubernetes extender (not persisted)
    bool replica = false;     // a replica of a service (kind: service), made by the controller (not persisted)
    // Set at recovery when the job cannot run on this cluster (changed since
    // it was accepted): the job stays pending outside the scheduler.
    std::string unfit;
    bool view_dirty = false;  // queued for the next published snapshot
    bool verdict_stale = false;  // visited by a pass; its view's verdict may be old
    std::shared_ptr<const job::JobSpec> shared_spec;  // the spec as views share it (made once)
    bool launched = false;    // agents: its start is durable, so agents may run it
    std::map<int32_t, int32_t> task_exits;  // agents: exit codes of this run's tasks, by task index
    // Agents: the attempt of each task of this run restarted in place (absent:
    // 0), and those whose repair record is not durable yet (not listed to
    // agents until it is).
    std::map<int32_t, int32_t> task_attempts;
    std::set<int32_t> attempts_unlaunched;
    std::vector<int32_t> rank_order;  // the task of each rank, from the run's first placement
    int32_t repairs = 0;  // in-place repairs of this job, all runs
    int32_t attempt(int32_t task) const {
      auto it = task_attempts.find(task);
      return it == task_attempts.end() ? 0 : it->second;
    }
  };
  // A registered node agent (agents mode).
  struct AgentEntry {
    std::string agent_id;
    cluster::NodeSpec spec;
    std::string body;  // the registration as stored
    std::vector<int32_t> gpu_indexes;  // the device index of each GPU position of the node
  };
  // A workflow (service_workflows.cc): its core state and the job of each
  // stage attempt. Durable: its acceptance is a kWorkflowAccepted record and
  // its cancellation a kJobFinished record under its id; the stage states are
  // rebuilt after a restart from its stage jobs (RecoverWorkflows).
  struct WorkflowEntry {
    int64_t id = -1;
    std::string key, fingerprint;
    workload::WorkflowRun run;
    std::vector<std::vector<int64_t>> jobs;  // per stage, the job of each attempt
    TimeUs accepted_at = 0, finished_at = -1;
    bool durable = false;                 // its acceptance record is durable: stages may be submitted
    std::shared_future<Status> accepted = {};  // ready once the acceptance record is durable (or failed)
    bool cancel_recorded = false;         // recovery: a cancellation record was read
  };
  struct NodeEntry {
    TimeUs down_at = 0;       // steady clock: when marked down (a later heartbeat brings it up)
    bool up = true;           // as the scheduler sees it
    bool quarantined = false;
    // An operator's drain (Drain): no new work; at drain_deadline (wall
    // clock, clock_; -1 none or passed) the work still there is stopped.
    bool draining = false;
    TimeUs drain_deadline = -1;
    std::deque<TimeUs> failures;  // within the quarantine window
    int64_t total_failures = 0;
    // GPUs (node-local positions) out of service after a failure report:
    // taken out of the scheduler's state (SetGpuUp) until reported healthy.
    uint64_t failed_gpus = 0;
    int64_t gpu_failures = 0;  // GPU failure reports so far
    // A hot spare (ServiceOptions::spares): cordoned for the scheduler, kept
    // for in-place repairs.
    bool spare = false;
    // The scheduler may place work here: healthy, not quarantined, not
    // draining, not a spare.
    bool schedulable() const { return up && !quarantined && !draining && !spare; }
  };
  // Extender bookkeeping: a pod group (or a lone pod) as one Berth job.
  struct ExtPod {
    std::string name;
    int32_t task = -1;     // -1 while the group's job waits
    bool bound = false;    // a Binding exists (bind verb or watch)
    bool binding = false;  // the bind verb is creating its Binding now
    std::string node;      // where it is bound
    TimeUs last_seen = 0;  // its last filter call: an unbound pod not asked for in a TTL loses its task
  };
  struct ExtGroup {
    int64_t job = -1;
    bool lone = false;                  // a pod outside any gang: its job belongs to its uid
    std::map<std::string, ExtPod> pods; // by pod uid; each task index held by at most one pod
    bool bound = false;                 // a pod of the group was bound once: the group never expires
    TimeUs last_seen = 0;               // the group's last filter call
  };

  // VirtualNodes::Sink (agents' thread): post to the loop.
  void Heartbeats(const std::vector<int32_t>& nodes) override;
  void JobDone(int64_t job, int32_t generation) override;

  // Agents mode (service_agents.cc), on the scheduling thread.
  // Builds the cluster from agents_ and moves every job onto it.
  Status RebuildAgentCluster(const std::string& why);
  StatusOr<std::unique_ptr<scheduler::Scheduler>> NewScheduler(const cluster::Cluster& c);
  // Whether the job can run on the cluster now (agents: none registered yet is an error).
  Status Feasible(const job::JobSpec& spec) const;
  Status LoadAgents();
  nlohmann::json AgentRunList(NodeId node) const;
  // An exit of (job, generation, task, attempt) on `node`: 0 ok, else 404/409 with why.
  ApiResult ApplyTaskExit(NodeId node, int64_t job, int32_t generation, int32_t task, bool lost, int32_t code,
                          int32_t attempt = 0);
  // In-place repair (service_repair.cc). Restarts `tasks` of the running
  // gang e (stopped by a failure on `node`; `failed_gpus` its failed GPU
  // positions there, all of them for a node failure, none for a lost task)
  // as new attempts on replacements; true when every task found one. False
  // (nothing changed, or a partial repair undone by the caller's requeue)
  // when repair is off or does not apply.
  bool TryRepair(JobEntry& e, const std::vector<int32_t>& tasks, NodeId node, uint64_t failed_gpus,
                 const std::string& reason);
  // Where task p of gang e goes (nullopt: nowhere); takes a spare it uses.
  std::optional<state::Allocation> RepairTarget(const JobEntry& e, const framework::TaskPlacement& p, NodeId node,
                                                uint64_t failed_gpus);
  void OnRepairDurable(int64_t id, int32_t generation, int32_t task, int32_t attempt, const Status& s);
  // Keeps ServiceOptions::spares spares per domain among empty healthy nodes.
  void RefreshSpares();
  // The spares each domain at `level` keeps (sized at most once a minute).
  int32_t SpareWant(DomainId d, int32_t nodes);
  // A node-level failure of `node` into the failure history of the policy's
  // plugins that learn from failures (topology-reliable), kept by node name
  // across rebuilds of the cluster model.
  void RecordFailure(NodeId node, double weight);
  void ReplayFailureHistory(scheduler::Scheduler& s, const cluster::Cluster& c) const;
  void CopyAgentBeats();
  // A heartbeat's failed GPUs (device indexes) of `node`: GPUs newly failed
  // stop the jobs holding them and leave the scheduler's state; GPUs no
  // longer listed return (service_gpu_health.cc).
  void ApplyGpuHealth(NodeId node, const std::vector<int32_t>& failed_devices);
  // Takes the failed GPUs of `node` out of the scheduler's state (after a
  // rebuild of the cluster model).
  void ReapplyFailedGpus(scheduler::Scheduler& s, NodeId node, uint64_t mask);
  void EndJob(JobEntry& e, job::JobState state, const std::string& reason);

  // Queue plumbing.
  bool Post(std::function<void()> fn);
  template <typename T>
  std::optional<T> Call(std::function<T()> fn);
  void Loop();

  // Workflows (service_workflows.cc). SubmitWorkflow answers a POST whose
  // body has `stages`; the rest run on the scheduling thread.
  ApiResult SubmitWorkflow(const nlohmann::json& doc);
  // A job created on the loop (a submission or a stage): the entry, its
  // acceptance record; OnAccepted follows when the record is durable.
  int64_t AcceptOnLoop(const std::string& key, const std::string& fingerprint, const job::JobSpec& spec);
  void SubmitReadyStages(WorkflowEntry& w);
  void ProcessWorkflowEvents();  // stage jobs that changed since the last turn
  void SubmitStage(WorkflowEntry& w, int32_t stage);
  void PublishWorkflowView(const WorkflowEntry& w);
  // The workflow's acceptance record is durable (or failed: it is dropped).
  void OnWorkflowAccepted(int64_t id, const Status& s);
  // A cancel of the workflow `id` (nullopt: no such workflow); the future is
  // the cancellation record's durability (invalid when nothing was written).
  std::optional<std::pair<ApiResult, std::shared_future<Status>>> CancelWorkflowOnLoop(int64_t id);
  // Recovery (service_workflow_recovery.cc): a kWorkflowAccepted record read
  // by Recover; then, on the loop once it runs, the stage states rebuilt from
  // the stage jobs, ready stages submitted, cancellations completed.
  Status RecoverWorkflowRecord(const store::Record& r);
  void RecoverWorkflows();
  void UpdateWorkflowEnd(WorkflowEntry& w);
  // A service stage is deployed once max(1, min_replicas) replicas run.
  bool ServiceDeployed(const JobEntry& e) const;
  // Cancels a stage's job for its workflow (a service's replicas stop too).
  void CancelStageJob(JobEntry& e, int64_t workflow);
  // Ends a job by request: the scheduler, the virtual node, the record.
  std::shared_future<Status> CancelEntryOnLoop(JobEntry& e, const std::string& reason);
  std::optional<nlohmann::json> WorkflowView(int64_t id) const;

  // On the scheduling thread.
  Status Recover();
  void SchedulePass();
  // Records a loop turn (histogram, max) and logs one that took long.
  void NoteTurn(const TurnClock& turn, size_t items);
  // The federation fence (GrantFederationLease), on the loop before a pass:
  // true while the lease has lapsed (no pass runs).
  bool FederationFenced();
  // The service controller's turn: replicas to start (submitted as jobs) and
  // to stop, from the autoscaler and rolling updates.
  void ServicesTick();
  void ServiceAccepted(JobEntry& e);
  void OnAccepted(int64_t id, const Status& s);
  void OnStartDurable(int64_t id, int32_t generation, const Status& s);
  void OnJobDone(int64_t id, int32_t generation);
  void CheckHeartbeats();
  void NodeDown(NodeId node, const std::string& reason);
  // The running job of entry e goes back to the queue after a failure
  // (restart cost counted), or is repaired in place when it can be.
  void FailJob(JobEntry& e, const std::vector<int32_t>& tasks, NodeId node, uint64_t failed_gpus,
               const std::string& reason);
  // Stops every running job with a task on `node` and sends it back to the
  // queue, from its last checkpoint or (checkpoint_now) from now.
  void StopJobsOn(NodeId node, const std::string& reason, bool checkpoint_now);
  // Drains whose deadline passed stop the work still on their node
  // (service_admin.cc).
  void CheckDrains();
  // The durable record of node `n`'s operator and failure state.
  void AppendNodeRecord(int32_t n, std::function<void(const Status&)> then = nullptr);
  // An admin action on node `name` run on the loop (service_admin.cc): `fn`
  // changes the entry and says what to answer; the answer waits until the
  // node's record is durable when `fn` wrote one.
  struct AdminOutcome {
    bool found = false;
    nlohmann::json body;
    nlohmann::json audit;
    bool write = false;  // append the node's record
  };
  ApiResult AdminNodeAction(const std::string& action, const std::string& name, const std::string& who,
                            std::function<AdminOutcome(int32_t node)> fn);
  void Requeue(JobEntry& e, const std::string& reason);
  // Bookkeeping of a job the scheduler already sent back to the queue.
  void Requeued(JobEntry& e, const std::string& reason);
  void LaunchOnAgents(const JobEntry& e);
  // The distinct nodes of a run's placements, in id order (what virtual nodes run it on).
  static std::vector<int32_t> RunNodes(const std::vector<framework::TaskPlacement>& placements);
  void AppendRecord(store::Record rec, std::function<void(const Status&)> then = nullptr);
  void OnStoreError(const Status& s);
  std::string QueueOf(const JobEntry& e) const;
  std::string WhyLine(const JobEntry& e) const;
  // The read snapshot (service_views.cc). MarkView queues a job whose entry
  // changed; PublishViews (end of each loop turn) rebuilds what changed and
  // publishes.
  void MarkView(JobEntry& e);
  void MarkView(int64_t id);
  std::shared_ptr<const JobView> BuildJobView(JobEntry& e) const;
  void PublishViews();
  void PublishAndAnswer();  // publishes, then releases the answers waiting for it
  nlohmann::json ExtenderJson(int64_t id) const;
  // Runs `fn` after this turn's snapshot is published (on the loop).
  void AfterPublish(std::function<void()> fn) { after_publish_.push_back(std::move(fn)); }
  void AuditLog(const std::string& action, const std::string& who, nlohmann::json fields);
  void ExpireExtenderReservations();
  // A job reached a final state: its idempotency key is freed now or queued
  // to expire (ServiceOptions::idempotency_ttl).
  void ReleaseKey(const JobEntry& e);
  void ExpireIdempotencyKeys();
  // Ends the job of extender group `key` (a running job with `state`, a
  // waiting one cancelled) and forgets the group and its pods.
  void EndExtenderGroup(const std::string& key, job::JobState state, const std::string& reason);
  // The group key and pod uid of a pod Berth knows (by uid, else by ns/name).
  std::optional<std::pair<std::string, std::string>> FindExtenderPod(const std::string& ns, const std::string& name,
                                                                     const std::string& uid) const;
  std::string ExtenderPlannedNode(const JobEntry& e, int32_t task) const;
  // With options_.k8s_pods: replaces `pod` by the API server's copy, or says
  // why not (any thread; logs the refusal).
  Status VerifyPod(k8s::Pod& pod);

  // The cluster model. Fixed, or (agents mode) replaced by the scheduling
  // thread on registrations; the reads use the one their snapshot holds.
  std::shared_ptr<const cluster::Cluster> cluster_;
  store::Store& store_;
  ServiceOptions options_;
  Logger& log_;
  Metrics& metrics_;
  SystemClock clock_;
  framework::PolicyRegistry policies_;
  framework::PluginRegistry plugins_;
  std::unique_ptr<scheduler::Scheduler> sched_;  // agents mode: null until a node registered
  std::optional<framework::Profile> profile_;     // the policy's, for NewScheduler
  std::unique_ptr<workload::ServiceController> services_;  // on the scheduling thread
  std::unique_ptr<VirtualNodes> vnodes_;
  store::Fence fence_;
  std::atomic<bool> ready_{false};
  // The policy places gangs by topology (a "topology" plan plugin): jobs may
  // ask for required_level, preferred_level and blocks. Set by Start.
  std::atomic<bool> topology_planned_{false};
  enum class Phase { kIdle, kAcquiring, kLoading, kLeading, kSteppedDown };
  std::atomic<Phase> phase_{Phase::kIdle};

  // The queue into the scheduling thread.
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  bool running_loop_ = false;
  std::thread loop_;

  // Workflows: loop-owned entries, the stage of each stage job, stage jobs
  // that ended this turn; and the views reads see (any thread, under the mutex).
  std::map<int64_t, WorkflowEntry> workflows_;
  std::unordered_map<std::string, int64_t> workflow_by_key_;
  std::unordered_map<int64_t, std::pair<int64_t, int32_t>> stage_of_job_;  // job -> (workflow, stage)
  std::vector<int64_t> stage_jobs_changed_;
  std::set<int64_t> deploying_stages_;  // service stage jobs not yet deployed (their stage succeeds once they are)
  mutable std::mutex workflow_views_mu_;
  std::map<int64_t, std::shared_ptr<const nlohmann::json>> workflow_views_;

  // Node addresses for launch specs (SetNodeAddress), any thread.
  mutable std::mutex addresses_mu_;
  std::map<std::string, std::string> node_addresses_;

  // Owned by the scheduling thread.
  std::map<int64_t, JobEntry> jobs_;
  std::unordered_map<std::string, int64_t> by_key_;
  std::set<int64_t> pending_, running_;
  // The federation lease (GrantFederationLease): granted at least once, its
  // end and the running jobs' hold (wall clock); fenced_ is the loop's view.
  std::atomic<bool> fed_leased_{false};
  std::atomic<int64_t> fed_lease_until_{0};
  std::atomic<int64_t> fed_hold_running_{0};
  bool fed_fenced_ = false;
  std::vector<NodeEntry> nodes_;
  int64_t next_id_ = 1;
  int64_t digest_version_ = 0;  // digests taken (GET /v1/digest)
  bool dirty_ = false;
  TimeUs budget_renew_at_ = -1;  // a queue's spent budget renews then: pass again (-1: none waits)
  TimeUs guard_expires_at_ = -1;  // a replica waits for a min-runtime guard that expires then: pass again (-1: none)
  std::map<std::string, ExtGroup> ext_groups_;  // by group key
  std::unordered_map<int64_t, std::string> ext_group_of_job_;
  // Services whose replicas came through the extender (a Deployment's pods,
  // pod_service.h): "ns/NAME" -> the id the replica jobs' replica_of names.
  std::map<std::string, int64_t> ext_service_ids_;
  std::unordered_map<std::string, std::string> ext_group_of_pod_;  // pod uid -> group key
  TimeUs next_expiry_check_ = 0;
  std::set<std::pair<TimeUs, int64_t>> key_expiry_;  // (when, job): keys of ended jobs to free

  // Agents mode, loop-owned: the registrations by node name.
  std::map<std::string, AgentEntry> agents_;
  // Node-level failures seen (node name, wall time, weight), replayed into
  // each new scheduler's failure-aware plugins; the last kMaxFailureHistory.
  static constexpr size_t kMaxFailureHistory = 100'000;
  bool recovered_ = false;  // Recover ran (before the loop starts)
  // Sized spares (ServiceOptions::spares per_domain -1): the rate, the largest
  // gang held (GPUs, restart cost) when last sized, and when.
  faults::NodeFaultRate spare_rate_;  // the node-level rate of spare_rates
  int64_t spare_gang_gpus_ = 0;
  TimeUs spare_gang_restart_ = 0;
  TimeUs spare_sized_at_ = -1;
  size_t spare_sized_jobs_ = 0;
  std::deque<std::tuple<std::string, TimeUs, double>> failure_history_;
  // Agents mode, shared with the HTTP threads under beat_mu_: each agent's
  // identity and last heartbeat (steady clock), by node name.
  mutable std::mutex beat_mu_;
  std::unordered_map<std::string, std::pair<std::string, TimeUs>> agent_beats_;
  std::mutex log_mu_;  // the task log files (HTTP threads)

  // Heartbeats: steady-clock arrival per node, written by the agents' thread.
  std::unique_ptr<std::atomic<int64_t>[]> beat_at_;
  std::atomic<int64_t> beat_gap_max_{0};  // longest gap between two heartbeats of a node
  TimeUs last_check_ = 0, grace_from_ = 0;  // loop: the checker's last run, a granted grace

  // The read snapshot. Loop-owned: the chunks being built (a chunk is copied
  // before its first change after a publish) and what changed.
  ReadViews views_;
  std::unique_ptr<ReadGate> read_gate_;  // large reads
  std::vector<std::shared_ptr<JobChunk>> chunks_;
  std::vector<uint8_t> chunk_fresh_;  // chunk copied since the last publish
  QueueTallies tallies_;              // of the views in chunks_
  std::shared_ptr<const QueueTallies> tallies_view_;  // the last published copy; null: tallies_ changed since
  std::vector<int64_t> view_queue_, verdict_queue_;
  std::shared_ptr<const std::vector<NodeView>> node_views_;
  std::shared_ptr<const QueueViews> queue_views_;
  uint64_t views_state_version_ = ~uint64_t{0};
  bool node_views_dirty_ = true;
  TimeUs queue_views_at_ = 0;
  int64_t turn_ = 0;
  std::vector<std::function<void()>> after_publish_;
  std::shared_ptr<const std::vector<framework::TaskPlacement>> no_placements_ =
      std::make_shared<const std::vector<framework::TaskPlacement>>();
};

template <typename T>
std::optional<T> Service::Call(std::function<T()> fn) {
  auto p = std::make_shared<std::promise<T>>();
  std::future<T> f = p->get_future();
  // Answered after the turn's snapshot is published: the caller then reads
  // what it changed.
  if (!Post([this, p, fn = std::move(fn)] {
        auto v = std::make_shared<T>(fn());
        AfterPublish([p, v] { p->set_value(std::move(*v)); });
      }))
    return std::nullopt;
  if (f.wait_for(std::chrono::microseconds(options_.request_timeout)) != std::future_status::ready) return std::nullopt;
  try {
    return f.get();
  } catch (const std::future_error&) {  // the loop stopped before running it
    return std::nullopt;
  }
}

}  // namespace berth::server
