// Job helpers and validation.
#include "berth/job/job.h"

#include <algorithm>

#include "berth/cluster/cluster.h"

namespace berth::job {

const char* LauncherName(Launcher l) {
  switch (l) {
    case Launcher::kTorch: return "torch";
    case Launcher::kTf: return "tf";
    case Launcher::kMpi: return "mpi";
    case Launcher::kNone: break;
  }
  return "none";
}

std::optional<Launcher> ParseLauncher(const std::string& name) {
  if (name == "none") return Launcher::kNone;
  if (name == "torch") return Launcher::kTorch;
  if (name == "tf") return Launcher::kTf;
  if (name == "mpi") return Launcher::kMpi;
  return std::nullopt;
}

bool IsEnvName(const std::string& name) {
  if (name.empty() || name.size() > 256) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

int32_t JobSpec::num_tasks() const {
  int32_t n = 0;
  for (const auto& g : groups) n += g.count;
  return n;
}

int64_t JobSpec::total_gpus() const {
  int64_t n = 0;
  for (const auto& g : groups) n += int64_t{g.count} * g.gpus;
  return n;
}

int64_t JobSpec::total_milli_gpu() const {
  int64_t n = 0;
  for (const auto& g : groups) n += int64_t{g.count} * g.milli_per_task();
  return n;
}

std::pair<int32_t, int32_t> JobSpec::TaskPosition(int32_t task_index) const {
  if (elastic() && task_index >= 0 && task_index < std::max(max_workers, groups.front().count)) return {0, task_index};
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    if (task_index < groups[gi].count) return {static_cast<int32_t>(gi), task_index};
    task_index -= groups[gi].count;
  }
  return {-1, -1};
}

namespace {

// A group's own topology levels: whole-GPU tasks, and a required level no
// wider than the job's (the job's bounds the whole gang).
Status ValidateGroupTopology(const JobSpec& job, const TaskGroup& g, const std::string& where) {
  for (const auto* level : {&g.required_level, &g.preferred_level}) {
    if (!*level) continue;
    const char* field = level == &g.required_level ? "required_level" : "preferred_level";
    if (g.gpus < 1 || g.milli_per_gpu != kMilliPerGpu)
      return InvalidArgument(where + field + ": a group's topology level needs whole-GPU tasks");
  }
  if (g.required_level && job.required_level && *g.required_level < *job.required_level)
    return InvalidArgument(where + "required_level: " + cluster::LevelName(*g.required_level) +
                           " is wider than the job's required_level " + cluster::LevelName(*job.required_level));
  return Status::Ok();
}

}  // namespace

Status ValidateJob(const JobSpec& job) {
  const std::string who = "job '" + job.name + "'";
  if (job.groups.empty()) return InvalidArgument(who + ": groups: no task groups");
  if (job.duration < -1) return InvalidArgument(who + ": duration: negative (-1 means unknown)");
  if (job.runtime_limit < -1) return InvalidArgument(who + ": runtime_limit: negative (-1 means none)");
  if (job.checkpoint_interval < -1) return InvalidArgument(who + ": checkpoint_interval: negative (-1 means never)");
  if (job.submit_time < 0) return InvalidArgument(who + ": submit_time: negative");
  if (job.dataset_mib < 0) return InvalidArgument(who + ": dataset_mib: negative");
  if (job.deadline == 0 || job.deadline < -1) return InvalidArgument(who + ": deadline: must be positive (or -1: none)");
  if (job.budget_cents < -1) return InvalidArgument(who + ": budget: negative (-1 means none)");
  for (const auto& r : job.regions)
    for (const auto& a : job.avoid_regions)
      if (r == a) return InvalidArgument(who + ": region '" + r + "' is both in regions and avoid_regions");
  if (job.work_steps == 0 || job.work_steps < -1)
    return InvalidArgument(who + ": work_steps: must be positive (or -1: unknown)");
  if (job.command.size() > kMaxCommandArgs)
    return InvalidArgument(who + ": command: more than " + std::to_string(kMaxCommandArgs) + " arguments");
  if (!job.command.empty() && job.command.front().empty())
    return InvalidArgument(who + ": command[0]: empty program name");
  if (job.env.size() > kMaxEnvVars)
    return InvalidArgument(who + ": env: more than " + std::to_string(kMaxEnvVars) + " variables");
  for (const auto& [name, value] : job.env)
    if (!IsEnvName(name))
      return InvalidArgument(who + ": env: '" + name + "' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)");
  if (job.service) {
    BERTH_RETURN_IF_ERROR(ValidateService(*job.service, who));
    if (job.groups.size() != 1 || job.groups[0].count != 1 || job.groups[0].min_count > 1)
      return InvalidArgument(who + ": groups: a service has one task group of count 1 (the shape of a replica)");
  }
  if (job.batch_size == 0 || job.batch_size < -1) return InvalidArgument(who + ": batch_size: must be positive (or -1: unknown)");
  if (job.resize_cost < -1) return InvalidArgument(who + ": resize_cost: negative (-1 means none given)");
  if (job.min_workers == 0 || job.min_workers < -1) return InvalidArgument(who + ": min_workers: must be positive (or -1)");
  if (job.max_workers == 0 || job.max_workers < -1) return InvalidArgument(who + ": max_workers: must be positive (or -1: not elastic)");
  if (!job.elastic() && (job.min_workers > 0 || job.resize_cost >= 0))
    return InvalidArgument(who + ": min_workers / resize_cost: need max_workers (an elastic job)");
  if (job.elastic()) {
    if (job.groups.size() != 1) return InvalidArgument(who + ": max_workers: an elastic job has exactly one task group");
    const auto& g = job.groups.front();
    if (g.count > job.max_workers)
      return InvalidArgument(who + ": max_workers: " + std::to_string(job.max_workers) + " is below the group's count " +
                             std::to_string(g.count));
    if (job.elastic_min() > g.count)
      return InvalidArgument(who + ": min_workers: " + std::to_string(job.elastic_min()) + " is above the group's count " +
                             std::to_string(g.count));
    if (g.gpus < 1 || g.milli_per_gpu != kMilliPerGpu)
      return InvalidArgument(who + ": max_workers: elastic workers need whole GPUs");
    if (g.block_tasks > 0) return InvalidArgument(who + ": max_workers: elastic jobs take no block_tasks");
  }
  for (const auto& g : job.groups) {
    const std::string where = who + " group '" + g.name + "': ";
    if (g.count <= 0) return InvalidArgument(where + "count: must be positive");
    if (g.min_count > g.count) return InvalidArgument(where + "min_count: gang minimum above count");
    if (g.min_count == 0 || g.min_count < -1)
      return InvalidArgument(where + "min_count: gang minimum must be positive (or -1 for all tasks)");
    if (g.gpus < 0) return InvalidArgument(where + "gpus: negative GPU count");
    if (g.gpus > 64) return InvalidArgument(where + "gpus: more GPUs per task than any node has");
    if (g.milli_per_gpu <= 0 || g.milli_per_gpu > kMilliPerGpu)
      return InvalidArgument(where + "milli_per_gpu: GPU share must be in 1..1000 milli-GPU");
    if (g.gpus > 1 && g.milli_per_gpu != kMilliPerGpu)
      return InvalidArgument(where + "milli_per_gpu: a fractional GPU share needs exactly one GPU per task");
    if (g.cpu_milli < 0) return InvalidArgument(where + "cpu_milli: negative CPU request");
    if (g.memory_mib < 0) return InvalidArgument(where + "memory_mib: negative memory request");
    if (g.block_tasks < 0) return InvalidArgument(where + "block_tasks: negative block size");
    if (g.block_tasks > 0 && g.count % g.block_tasks != 0)
      return InvalidArgument(where + "block_tasks: count " + std::to_string(g.count) +
                             " is not a multiple of the block size " + std::to_string(g.block_tasks));
    if (g.block_tasks > 0 && g.milli_per_gpu != kMilliPerGpu)
      return InvalidArgument(where + "block_tasks: blocks need whole-GPU tasks");
    // GPU memory per GPU of each task.
    if (g.gpu_memory_mib < 0) return InvalidArgument(where + "gpu_memory_mib: negative GPU memory request");
    if (g.gpu_memory_mib > kMaxGpuMemoryMib)
      return InvalidArgument(where + "gpu_memory_mib: " + std::to_string(g.gpu_memory_mib) + " MiB is more than " +
                             std::to_string(kMaxGpuMemoryMib) + " MiB per GPU");
    if (g.gpu_memory_mib > 0 && g.gpus == 0)
      return InvalidArgument(where + "gpu_memory_mib: a task without GPUs takes no GPU memory");
    BERTH_RETURN_IF_ERROR(ValidateGroupTopology(job, g, where));
  }
  return Status::Ok();
}

void ApplyJobBlocks(JobSpec& job, int32_t block_tasks, cluster::Level block_level, const std::vector<bool>& inherits) {
  if (block_tasks <= 0) return;
  for (size_t i = 0; i < job.groups.size() && i < inherits.size(); ++i) {
    TaskGroup& g = job.groups[i];
    if (!inherits[i] || g.gpus < 1 || g.milli_per_gpu != kMilliPerGpu) continue;
    g.block_tasks = block_tasks;
    g.block_level = block_level;
  }
}

void ResolveGpuTypes(JobSpec& job, const cluster::Cluster& cluster) {
  for (auto& g : job.groups) {
    auto parsed = cluster.ParseTypeSet(g.gpu_type_spec);
    g.gpu_types = parsed.set;
    g.gpu_types_unknown = parsed.unknown;
    if (g.gpu_memory_mib > 0 && !g.gpu_types_unknown) {
      // Only the accepted types whose GPUs hold the memory request.
      cluster::GpuTypeSet big;
      const auto& types = cluster.gpu_types();
      for (size_t t = 0; t < types.size(); ++t) {
        const GpuTypeId id(static_cast<int16_t>(t));
        if (g.gpu_types.Accepts(id) && types[t].memory_mib >= g.gpu_memory_mib) big.Add(id);
      }
      g.gpu_types = big;
      g.gpu_types_unknown = big.empty();
    }
  }
}

Status CheckGpuMemory(const JobSpec& job, const cluster::Cluster& cluster) {
  MiB largest = 0;
  std::string name;
  for (const auto& t : cluster.gpu_types())
    if (t.memory_mib > largest) largest = t.memory_mib, name = t.name;
  for (size_t i = 0; i < job.groups.size(); ++i) {
    const MiB want = job.groups[i].gpu_memory_mib;
    if (want <= largest) continue;
    return InvalidArgument("groups[" + std::to_string(i) + "].gpu_memory_mib: " + std::to_string(want) +
                           " MiB is more than the largest GPU here (" +
                           (largest > 0 ? std::to_string(largest) + " MiB, " + name
                                        : std::string("no GPU type with known memory")) + ")");
  }
  return Status::Ok();
}

}  // namespace berth::job
