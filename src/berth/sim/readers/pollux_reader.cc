// Pollux workload CSVs (OSDI'21 simulator, workloads/workload-N.csv):
//   name,time,application,num_replicas,batch_size
//   cifar10-0,107,cifar10,6,2048
// One job per line: a group of num_replicas single-GPU workers, submitted at
// `time` seconds, job_class = application, batch_size = the global batch the
// job was tuned to. Every job is elastic (1..64 workers, 30 s per resize) and
// checkpoints (every 60 s), and has no duration: it runs until its progress
// reaches its application's target, at the goodput its allocation and batch
// give (elastic/goodput.h). The application's profile must be in the apps
// folder (ReadOptions::apps_dir, default <trace folder>/../apps).
#include <filesystem>

#include "berth/sim/readers/reader_util.h"
#include "berth/sim/readers/readers.h"

namespace berth::sim {
namespace {

constexpr const char* kRequired[] = {"name", "time", "application", "num_replicas", "batch_size"};
constexpr int32_t kMaxWorkers = 64;
constexpr TimeUs kResizeCost = 30 * kUsPerSecond;
constexpr TimeUs kCheckpointInterval = 60 * kUsPerSecond;

LineResult ParseLine(const CsvFile& f, const elastic::GoodputCatalog& apps, job::JobSpec& j) {
  BERTH_CHECK_LINE(kWrongWidth, f.CheckWidth());
  int64_t replicas, batch;
  double submit;
  BERTH_CHECK_LINE(kWrongWidth, f.GetString("name", j.name));
  if (j.name.empty()) return Bad(kBadValue, f.Error("name: empty"));
  BERTH_CHECK_LINE(kNotNumber, f.GetDouble("time", submit));
  if (submit < 0 || submit > kMaxTraceSeconds)
    return Bad(kOutOfRange, f.Error("time: " + std::to_string(submit) + " s is out of range"));
  BERTH_CHECK_LINE(kWrongWidth, f.GetString("application", j.job_class));
  const elastic::GoodputModel* m = apps.Find(j.job_class);
  if (m == nullptr)
    return Bad(kBadValue, f.Error("application: '" + j.job_class + "' has no profile in " + apps.dir));
  BERTH_CHECK_LINE(kNotNumber, f.GetInt("num_replicas", replicas));
  if (replicas <= 0 || replicas > kMaxWorkers)
    return Bad(kOutOfRange, f.Error("num_replicas: " + std::to_string(replicas) + " is not in 1.." +
                                    std::to_string(kMaxWorkers)));
  BERTH_CHECK_LINE(kNotNumber, f.GetInt("batch_size", batch));
  if (batch <= 0 || batch > (int64_t{1} << 30)) return Bad(kOutOfRange, f.Error("batch_size: must be positive"));
  j.submit_time = SecondsToUs(submit);
  j.duration = -1;
  j.tenant = "pollux";
  j.batch_size = static_cast<int32_t>(batch);
  j.min_workers = 1;
  j.max_workers = kMaxWorkers;
  j.resize_cost = kResizeCost;
  j.checkpoint_interval = kCheckpointInterval;
  job::TaskGroup g;
  g.name = "worker";
  g.count = static_cast<int32_t>(replicas);
  g.gpus = 1;
  j.groups.push_back(std::move(g));
  Status valid = job::ValidateJob(j);
  if (!valid.ok()) return Bad(kInvalidJob, f.Error(valid.message()));
  return {};
}

}  // namespace

StatusOr<Trace> ReadPollux(const std::string& path, const ReadOptions& opts) {
  namespace fs = std::filesystem;
  BERTH_ASSIGN_OR_RETURN(CsvFile f, CsvFile::Open(path));
  BERTH_RETURN_IF_ERROR(CheckColumns(f, kRequired, kRequired));
  std::string apps_dir = opts.apps_dir;
  if (apps_dir.empty()) apps_dir = (fs::path(path).parent_path().parent_path() / "apps").string();
  auto apps = elastic::LoadGoodputCatalog(apps_dir);
  if (!apps.ok())
    return InvalidArgument(path + ": the pollux format needs the application profiles: " + apps.status().message());
  Trace t;
  t.format = "pollux";
  t.goodput = *apps;
  NameSet names;
  while (f.Next()) {
    ++t.report.lines;
    job::JobSpec j;
    LineResult r = ParseLine(f, *t.goodput, j);
    if (r.ok()) {
      if (int64_t first = names.Add(j.name, f.line_number()))
        r = Bad(kDuplicate, f.Error("name: '" + j.name + "' already on line " + std::to_string(first)));
    }
    BERTH_ASSIGN_OR_RETURN(const bool stop, TakeLine(opts, t, r, std::move(j)));
    if (stop) break;
  }
  BERTH_RETURN_IF_ERROR(FinishRead(path, t, /*has_header=*/true));
  return t;
}

}  // namespace berth::sim
