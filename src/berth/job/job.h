// The job model: a job is one or more task groups (a gang); every task of a
// group asks for the same resources. A task asks for whole GPUs (gpus >= 1,
// milli_per_gpu == 1000), a share of one GPU (gpus == 1, milli_per_gpu < 1000),
// or no GPU (gpus == 0).
//
//   JobSpec j;  j.name = "llm-pretrain";
//   j.groups.push_back({.name = "worker", .count = 64, .gpus = 8, .cpu_milli = 96000});
//   Status s = ValidateJob(j);
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "berth/cluster/gpu_type.h"
#include "berth/cluster/level.h"
#include "berth/common/ids.h"
#include "berth/common/quantity.h"
#include "berth/common/status.h"
#include "berth/job/service_spec.h"

namespace berth::cluster { class Cluster; }

namespace berth::job {

struct TaskGroup {
  std::string name = "main";
  int32_t count = 1;       // tasks in the group
  int32_t min_count = -1;  // gang minimum (-1: all `count` tasks, all or nothing)
  int32_t gpus = 0;        // GPUs per task
  MilliGpu milli_per_gpu = kMilliPerGpu;  // share of each GPU (< 1000 only when gpus == 1)
  MilliCpu cpu_milli = 0;
  MiB memory_mib = 0;
  std::string gpu_type_spec;  // "" = any; else '|'-separated accepted types
  cluster::GpuTypeSet gpu_types;  // resolved from gpu_type_spec against a cluster
  bool gpu_types_unknown = false; // the spec names only types the cluster lacks
  // Blocks: every run of `block_tasks` consecutive ranks must share one domain
  // of `block_level` (a tensor-parallel group in one NVLink domain, a pipeline
  // stage in one leaf). 0 = no blocks.
  int32_t block_tasks = 0;
  cluster::Level block_level = cluster::Level::kNvlink;
  // GPU memory (MiB) each task needs on each of its GPUs; 0 = not stated (no
  // memory accounting). A task is placed only on GPUs whose type has at least
  // this much and, for a share, whose unallocated memory holds it; the runtime
  // gets it as the task's memory limit (docs/launch.md).
  MiB gpu_memory_mib = 0;
  // Topology of this group alone (whole-GPU tasks only): all of its GPUs
  // within one domain of `required_level` (never wider than the job's
  // required level, which still bounds the whole gang); `preferred_level`
  // replaces the job's preference for this group (see JobSpec).
  std::optional<cluster::Level> required_level;
  std::optional<cluster::Level> preferred_level;

  int32_t gang_min() const { return min_count < 0 ? count : min_count; }
  bool is_sharing() const { return gpus == 1 && milli_per_gpu < kMilliPerGpu; }
  MilliGpu milli_per_task() const { return gpus * milli_per_gpu; }
};

// The framework a job's tasks run under, which decides the launch spec Berth
// computes for them (docs/launch.md): torchrun variables, TF_CONFIG, an MPI
// host file, or only the common variables.
enum class Launcher { kNone, kTorch, kTf, kMpi };

// "none", "torch", "tf", "mpi".
const char* LauncherName(Launcher l);
// The launcher of a name above; nullopt for any other text.
std::optional<Launcher> ParseLauncher(const std::string& name);

struct JobSpec {
  JobId id;
  std::string name;
  std::string tenant;  // who submitted it (user, Philly VC, ...)
  std::string queue;   // the leaf queue it is charged to ("" = the tenant's default)
  int32_t priority = 0;
  TimeUs submit_time = 0;
  TimeUs duration = -1;       // true runtime when known (simulator), else -1
  TimeUs runtime_limit = -1;  // user-declared limit, -1 when none
  std::vector<TaskGroup> groups;
  std::string job_class;      // model / class label, for throughput models
  std::string dataset;        // optional dataset name
  MiB dataset_mib = 0;
  TimeUs checkpoint_interval = -1;  // -1: never checkpoints
  // Best-effort work (co-location, docs/services.md): evicted within the
  // scheduler's best-effort yield deadline, never shielded by the minimum
  // runtime, and held to the overcommit ratio on capacity services reserve.
  bool best_effort = false;
  // Time a run restarted after a failure spends before it works again
  // (rescheduling, process start, checkpoint load); -1: the run's default.
  TimeUs restart_cost = -1;
  // Topology: all of the job's GPUs must lie within one domain of
  // `required_level`, if set. Berth always tries the narrowest level that
  // holds the gang first. `preferred_level` is a soft wish: the tightest
  // domain of that level that holds the gang, else the placement that spans
  // the fewest domains of that level (least traffic between them), never a
  // wait (docs/results/topology.md, "Preferred levels").
  std::optional<cluster::Level> required_level;
  std::optional<cluster::Level> preferred_level;
  int64_t work_steps = -1;          // training steps (iterations) to run when the trace gives them, else -1
  // Federation (docs/federation.md): the regions the job may run in (empty:
  // any), the regions it must not run in, whether its gang may span regions
  // (default never), a deadline (finish by submit_time + deadline; -1: none)
  // and a budget for GPU and egress cost in US cents (-1: none).
  std::vector<std::string> regions;
  std::vector<std::string> avoid_regions;
  bool span_regions = false;
  // Set on the job a member receives for one part of a gang the federation
  // dispatcher split across regions ("Gangs across regions"): the part's
  // tasks are ranks rank_offset .. rank_offset + num_tasks() - 1 of a gang of
  // world_size ranks in `parts` parts (part `index`; part 0 holds rank 0).
  // The launch spec ranks the part's tasks from rank_offset and gives them the
  // gang's WORLD_SIZE (docs/launch.md).
  struct SpanPart {
    int32_t index = 0;
    int32_t parts = 0;
    int32_t world_size = 0;
    int32_t rank_offset = 0;
  };
  std::optional<SpanPart> span_part;
  TimeUs deadline = -1;
  int64_t budget_cents = -1;
  // What runs (for a node agent; the scheduler and the simulator ignore it):
  // the framework, the argv of every task, and environment variables added to
  // the launch spec's (sorted by name, so documents and hashes are stable).
  Launcher launcher = Launcher::kNone;
  std::vector<std::string> command;
  std::map<std::string, std::string> env;
  // Services (service_spec.h): set for a job of kind `service`; a replica job
  // the workload layer made carries a copy and the service's id in `replica_of`.
  std::optional<ServiceSpec> service;
  JobId replica_of;
  // Elastic training (docs/adr/0016): with max_workers > 0 the job's one task
  // group may run with anything from min_workers to max_workers tasks; it
  // starts with `count` (its current size, which the scheduler changes when
  // it resizes the job), may be shrunk instead of evicted, and grown when
  // capacity frees. Each resize costs `resize_cost` (re-shard and restart)
  // without progress (-1: none given, 0 s). batch_size: the global batch size
  // of a training job (-1: unknown), which goodput-driven policies retune.
  int32_t min_workers = -1;
  int32_t max_workers = -1;
  TimeUs resize_cost = -1;
  int32_t batch_size = -1;

  bool elastic() const { return max_workers > 0; }
  // The smallest size an elastic job may be shrunk to.
  int32_t elastic_min() const { return min_workers > 0 ? min_workers : 1; }

  int32_t num_tasks() const;
  int64_t total_gpus() const;            // whole-GPU equivalents rounded up per task
  int64_t total_milli_gpu() const;       // sum over tasks of gpus * milli_per_gpu
  // The group and rank within it of task index i (tasks numbered group by group).
  std::pair<int32_t, int32_t> TaskPosition(int32_t task_index) const;
};

// The largest GPU memory request a document may state (4 TiB per GPU); a
// cluster bounds it further by its largest GPU (CheckGpuMemory).
inline constexpr MiB kMaxGpuMemoryMib = MiB{1} << 22;

// Bounds of what a job may run: argv length and number of variables.
inline constexpr size_t kMaxCommandArgs = 1024;
inline constexpr size_t kMaxEnvVars = 1024;

// A POSIX-style environment variable name: [A-Za-z_][A-Za-z0-9_]*, at most 256 bytes.
bool IsEnvName(const std::string& name);

// Checks a job for internal consistency (counts, shares, quantities). Errors
// name the job, the group and the field: "job 'x' group 'main': count: must
// be positive".
Status ValidateJob(const JobSpec& job);

// A job-level block size (the native trace's and the API's job `block_tasks`,
// `block_level`): given to every group named in `inherits` (the groups whose
// own document sets no block_tasks) that asks for whole GPUs.
void ApplyJobBlocks(JobSpec& job, int32_t block_tasks, cluster::Level block_level, const std::vector<bool>& inherits);

// Resolves every group's gpu_type_spec against a cluster's GPU types. A group
// with gpu_memory_mib accepts only the types whose memory holds it (none:
// gpu_types_unknown).
void ResolveGpuTypes(JobSpec& job, const cluster::Cluster& cluster);

// Checks every group's gpu_memory_mib against the cluster's largest GPU:
// InvalidArgument "groups[1].gpu_memory_mib: 90000 MiB is more than the
// largest GPU here (81920 MiB, H100)".
Status CheckGpuMemory(const JobSpec& job, const cluster::Cluster& cluster);

}  // namespace berth::job
