// Tiresias job traces (NSDI'19 simulator, e.g. 60_job.csv):
//   job_id,num_gpu,submit_time,iterations,model_name,duration,interval
//   0,1,0,606,vgg19,164,30
// One job per line: name = job_id, a gang of num_gpu single-GPU tasks (the
// Tiresias simulator places a job's GPUs one by one, across nodes when it
// must), submit time and duration in seconds, job_class = model_name,
// work_steps = iterations. `interval` (the gap to the next submission) is
// checked but not kept: submit times already carry it.
#include "berth/sim/readers/reader_util.h"
#include "berth/sim/readers/readers.h"

namespace berth::sim {
namespace {

constexpr const char* kRequired[] = {"job_id", "num_gpu", "submit_time", "duration"};
constexpr const char* kKnown[] = {"job_id",     "num_gpu",  "submit_time", "iterations",
                                  "model_name", "duration", "interval"};
constexpr int64_t kMaxJobGpus = 1 << 20;

LineResult ParseLine(const CsvFile& f, job::JobSpec& j) {
  BERTH_CHECK_LINE(kWrongWidth, f.CheckWidth());
  int64_t gpus;
  double submit, duration;
  BERTH_CHECK_LINE(kWrongWidth, f.GetString("job_id", j.name));
  if (j.name.empty()) return Bad(kBadValue, f.Error("job_id: empty"));
  BERTH_CHECK_LINE(kNotNumber, f.GetInt("num_gpu", gpus));
  if (gpus <= 0 || gpus > kMaxJobGpus)
    return Bad(kOutOfRange, f.Error("num_gpu: " + std::to_string(gpus) + " is not a GPU count"));
  BERTH_CHECK_LINE(kNotNumber, f.GetDouble("submit_time", submit));
  if (submit < 0 || submit > kMaxTraceSeconds)
    return Bad(kOutOfRange, f.Error("submit_time: " + std::to_string(submit) + " s is out of range"));
  BERTH_CHECK_LINE(kNotNumber, f.GetDouble("duration", duration));
  if (duration < 0 || duration > kMaxTraceSeconds)
    return Bad(kOutOfRange, f.Error("duration: " + std::to_string(duration) + " s is out of range"));
  if (f.HasColumn("iterations")) {
    int64_t it;
    BERTH_CHECK_LINE(kNotNumber, f.GetInt("iterations", it));
    if (it <= 0) return Bad(kOutOfRange, f.Error("iterations: must be positive, not " + std::to_string(it)));
    j.work_steps = it;
  }
  if (f.HasColumn("model_name")) BERTH_CHECK_LINE(kWrongWidth, f.GetString("model_name", j.job_class));
  if (f.HasColumn("interval")) {
    double interval;
    BERTH_CHECK_LINE(kNotNumber, f.GetDouble("interval", interval));
    if (interval < 0) return Bad(kOutOfRange, f.Error("interval: negative"));
  }
  j.submit_time = SecondsToUs(submit);
  j.duration = SecondsToUs(duration);
  job::TaskGroup g;
  g.count = static_cast<int32_t>(gpus);
  g.gpus = 1;
  j.groups.push_back(std::move(g));
  Status valid = job::ValidateJob(j);
  if (!valid.ok()) return Bad(kInvalidJob, f.Error(valid.message()));
  return {};
}

}  // namespace

StatusOr<Trace> ReadTiresias(const std::string& path, const ReadOptions& opts) {
  BERTH_ASSIGN_OR_RETURN(CsvFile f, CsvFile::Open(path));
  BERTH_RETURN_IF_ERROR(CheckColumns(f, kRequired, kKnown));
  Trace t;
  t.format = "tiresias";
  NameSet names;
  while (f.Next()) {
    ++t.report.lines;
    job::JobSpec j;
    LineResult r = ParseLine(f, j);
    if (r.ok()) {
      if (int64_t first = names.Add(j.name, f.line_number()))
        r = Bad(kDuplicate, f.Error("job_id: '" + j.name + "' already on line " + std::to_string(first)));
    }
    BERTH_ASSIGN_OR_RETURN(const bool stop, TakeLine(opts, t, r, std::move(j)));
    if (stop) break;
  }
  BERTH_RETURN_IF_ERROR(FinishRead(path, t, /*has_header=*/true));
  return t;
}

}  // namespace berth::sim
