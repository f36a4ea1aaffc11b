// openb pod lists: name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,qos,
// pod_phase,creation_time,deletion_time,scheduled_time]. The multigpu variants
// have only the first five columns.
#include <algorithm>

#include "berth/common/csv.h"
#include "berth/sim/readers/reader_util.h"
#include "berth/sim/readers/readers.h"

namespace berth::sim {
namespace {

constexpr const char* kRequired[] = {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"};
constexpr const char* kKnown[] = {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec",
                                  "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time"};

LineResult ParsePod(const CsvFile& f, bool has_spec, bool has_times, job::JobSpec& j) {
  BERTH_CHECK_LINE(kWrongWidth, f.CheckWidth());
  int64_t cpu, mem, num_gpu, milli;
  BERTH_CHECK_LINE(kWrongWidth, f.GetString("name", j.name));
  if (j.name.empty()) return Bad(kBadValue, f.Error("empty pod name"));
  BERTH_CHECK_LINE(kNotNumber, f.GetInt("cpu_milli", cpu));
  BERTH_CHECK_LINE(kNotNumber, f.GetInt("memory_mib", mem));
  BERTH_CHECK_LINE(kNotNumber, f.GetInt("num_gpu", num_gpu));
  BERTH_CHECK_LINE(kNotNumber, f.GetInt("gpu_milli", milli));
  if (cpu < 0) return Bad(kOutOfRange, f.Error("cpu_milli: negative value " + std::to_string(cpu)));
  if (mem < 0) return Bad(kOutOfRange, f.Error("memory_mib: negative value " + std::to_string(mem)));
  if (num_gpu < 0) return Bad(kOutOfRange, f.Error("num_gpu: negative value " + std::to_string(num_gpu)));
  if (num_gpu > 64) return Bad(kOutOfRange, f.Error("num_gpu: " + std::to_string(num_gpu) + " is more than any node has"));
  if (milli < 0) return Bad(kOutOfRange, f.Error("gpu_milli: negative value " + std::to_string(milli)));
  if (num_gpu == 1 && milli == 0) return Bad(kOutOfRange, f.Error("gpu_milli: zero share for a GPU pod"));
  job::TaskGroup g;
  g.cpu_milli = cpu;
  g.memory_mib = mem;
  g.gpus = static_cast<int32_t>(num_gpu);
  // As the original simulator: the share is clamped to 0..1000; multi-GPU pods use whole GPUs.
  g.milli_per_gpu = num_gpu == 0 ? kMilliPerGpu
                    : num_gpu > 1 ? kMilliPerGpu
                                  : static_cast<MilliGpu>(std::clamp<int64_t>(milli, 1, kMilliPerGpu));
  if (has_spec) BERTH_CHECK_LINE(kWrongWidth, f.GetString("gpu_spec", g.gpu_type_spec));
  j.groups.push_back(std::move(g));
  if (has_times) {
    std::string created, deleted, scheduled;
    BERTH_CHECK_LINE(kWrongWidth, f.GetString("creation_time", created));
    BERTH_CHECK_LINE(kWrongWidth, f.GetString("deletion_time", deleted));
    BERTH_CHECK_LINE(kWrongWidth, f.GetString("scheduled_time", scheduled));
    int64_t c = 0, d = -1, s = -1;
    if (!created.empty() && !ParseInt64(created, c).ok()) return Bad(kNotNumber, f.Error("creation_time: not an integer"));
    if (!deleted.empty() && !ParseInt64(deleted, d).ok()) return Bad(kNotNumber, f.Error("deletion_time: not an integer"));
    if (!scheduled.empty() && !ParseInt64(scheduled, s).ok())
      return Bad(kNotNumber, f.Error("scheduled_time: not an integer"));
    if (c < 0) return Bad(kOutOfRange, f.Error("creation_time: negative"));
    j.submit_time = c * kUsPerSecond;
    const int64_t start = s >= 0 ? s : c;
    if (d >= start) j.duration = (d - start) * kUsPerSecond;
    BERTH_CHECK_LINE(kWrongWidth, f.GetString("qos", j.tenant));
  }
  Status valid = job::ValidateJob(j);
  if (!valid.ok()) return Bad(kInvalidJob, f.Error(valid.message()));
  return {};
}

}  // namespace

StatusOr<Trace> ReadOpenbPods(const std::string& path, const ReadOptions& opts) {
  BERTH_ASSIGN_OR_RETURN(CsvFile f, CsvFile::Open(path));
  BERTH_RETURN_IF_ERROR(CheckColumns(f, kRequired, kKnown));
  const bool has_spec = f.HasColumn("gpu_spec"), has_times = f.HasColumn("creation_time");
  Trace t;
  t.format = "openb";
  while (f.Next()) {
    ++t.report.lines;
    job::JobSpec j;
    LineResult r = ParsePod(f, has_spec, has_times, j);
    BERTH_ASSIGN_OR_RETURN(const bool stop, TakeLine(opts, t, r, std::move(j)));
    if (stop) break;
  }
  BERTH_RETURN_IF_ERROR(FinishRead(path, t, /*has_header=*/true));
  return t;
}

}  // namespace berth::sim
