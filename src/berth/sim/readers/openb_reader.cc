// openb pod lists: name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,qos,
// pod_phase,creation_time,deletion_time,scheduled_time]. The multigpu variants
// have only the first five columns.
#include "berth/sim/readers/readers.h"

#include <algorithm>

#include "berth/common/csv.h"

namespace berth::sim {

StatusOr<Trace> ReadOpenbPods(const std::string& path, const ReadOptions& opts) {
  BERTH_ASSIGN_OR_RETURN(CsvFile f, CsvFile::Open(path));
  for (const char* col : {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"})
    if (!f.HasColumn(col)) return InvalidArgument(path + ":1: missing column '" + col + "'");
  static const char* kKnown[] = {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec",
                                 "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time"};
  for (const auto& h : f.header()) {
    bool known = false;
    for (const char* k : kKnown) known = known || h == k;
    if (!known) return InvalidArgument(path + ":1: unknown column '" + h + "'");
  }
  const bool has_spec = f.HasColumn("gpu_spec"), has_times = f.HasColumn("creation_time");
  Trace t;
  t.format = "openb";
  while (f.Next()) {
    ++t.report.lines;
    auto parse = [&](job::JobSpec& j) -> Status {
      BERTH_RETURN_IF_ERROR(f.CheckWidth());
      int64_t cpu, mem, num_gpu, milli;
      BERTH_RETURN_IF_ERROR(f.GetString("name", j.name));
      if (j.name.empty()) return f.Error("empty pod name");
      BERTH_RETURN_IF_ERROR(f.GetInt("cpu_milli", cpu));
      BERTH_RETURN_IF_ERROR(f.GetInt("memory_mib", mem));
      BERTH_RETURN_IF_ERROR(f.GetInt("num_gpu", num_gpu));
      BERTH_RETURN_IF_ERROR(f.GetInt("gpu_milli", milli));
      if (cpu < 0) return f.Error("cpu_milli: negative value " + std::to_string(cpu));
      if (mem < 0) return f.Error("memory_mib: negative value " + std::to_string(mem));
      if (num_gpu < 0) return f.Error("num_gpu: negative value " + std::to_string(num_gpu));
      if (num_gpu > 64) return f.Error("num_gpu: " + std::to_string(num_gpu) + " is more than any node has");
      if (milli < 0) return f.Error("gpu_milli: negative value " + std::to_string(milli));
      job::TaskGroup g;
      g.cpu_milli = cpu;
      g.memory_mib = mem;
      g.gpus = static_cast<int32_t>(num_gpu);
      // As the original simulator: the share is clamped to 0..1000; multi-GPU pods use whole GPUs.
      g.milli_per_gpu = num_gpu == 0 ? kMilliPerGpu
                        : num_gpu > 1 ? kMilliPerGpu
                                      : static_cast<MilliGpu>(std::clamp<int64_t>(milli, 1, kMilliPerGpu));
      if (num_gpu == 1 && milli == 0) return f.Error("gpu_milli: zero share for a GPU pod");
      if (has_spec) BERTH_RETURN_IF_ERROR(f.GetString("gpu_spec", g.gpu_type_spec));
      j.groups.push_back(std::move(g));
      if (has_times) {
        std::string created, deleted, scheduled;
        BERTH_RETURN_IF_ERROR(f.GetString("creation_time", created));
        BERTH_RETURN_IF_ERROR(f.GetString("deletion_time", deleted));
        BERTH_RETURN_IF_ERROR(f.GetString("scheduled_time", scheduled));
        int64_t c = 0, d = -1, s = -1;
        if (!created.empty() && !ParseInt64(created, c).ok()) return f.Error("creation_time: not an integer");
        if (!deleted.empty() && !ParseInt64(deleted, d).ok()) return f.Error("deletion_time: not an integer");
        if (!scheduled.empty() && !ParseInt64(scheduled, s).ok()) return f.Error("scheduled_time: not an integer");
        if (c < 0) return f.Error("creation_time: negative");
        j.submit_time = c * kUsPerSecond;
        const int64_t start = s >= 0 ? s : c;
        if (d >= start) j.duration = (d - start) * kUsPerSecond;
        std::string qos;
        BERTH_RETURN_IF_ERROR(f.GetString("qos", qos));
        j.tenant = qos;
      }
      return job::ValidateJob(j);
    };
    job::JobSpec j;
    Status s = parse(j);
    if (!s.ok()) {
      if (s.message().find(path) != 0) s = f.Error(s.message());
      BERTH_RETURN_IF_ERROR(HandleBadLine(opts, t.report, s, "invalid pod"));
      continue;
    }
    j.id = JobId(static_cast<int64_t>(t.jobs.size()));
    t.jobs.push_back(std::move(j));
    if (opts.max_jobs >= 0 && static_cast<int64_t>(t.jobs.size()) >= opts.max_jobs) break;
  }
  t.report.jobs = static_cast<int64_t>(t.jobs.size());
  if (t.jobs.empty()) return InvalidArgument(path + ": no pods in the file");
  return t;
}

}  // namespace berth::sim
