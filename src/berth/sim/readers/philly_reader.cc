// Philly jobs, as the per-job CSV of the Pollux and Sia simulators:
//   timestamp,duration,num_gpus,gpu_time,cluster
//   2017-10-09 07:01:55,66.0,1,66.0,11cb48
// One job per line, tenant = the virtual cluster. A job of up to 8 GPUs is
// one task; a larger one is a gang of 8-GPU tasks (see GangShape). Submit
// times are seconds from an origin: the window start when a window is given,
// else the earliest timestamp read (Trace::time_origin says which).
#include <algorithm>
#include <cmath>
#include <limits>

#include "berth/sim/readers/reader_util.h"
#include "berth/sim/readers/readers.h"

namespace berth::sim {
namespace {

constexpr const char* kColumns[] = {"timestamp", "duration", "num_gpus", "gpu_time", "cluster"};
constexpr int64_t kGpusPerNode = 8;
constexpr int64_t kMaxJobGpus = 1 << 20;

// Window and tenant filters, in seconds since 1970 (inclusive bounds).
struct Filter {
  bool has_from = false;
  int64_t from = std::numeric_limits<int64_t>::min();
  int64_t to = std::numeric_limits<int64_t>::max();
  std::vector<std::string> tenants;  // sorted; empty: all

  bool Keeps(int64_t at, const std::string& tenant) const {
    if (at < from || at > to) return false;
    return tenants.empty() || std::binary_search(tenants.begin(), tenants.end(), tenant);
  }
};

StatusOr<Filter> MakeFilter(const ReadOptions& o) {
  Filter f;
  if (!o.window_from.empty()) {
    auto t = ParseDateTime(o.window_from, /*allow_bare_date=*/true);
    if (!t.ok()) return InvalidArgument("window start: " + t.status().message());
    f.has_from = true;
    f.from = *t;
  }
  if (!o.window_to.empty()) {
    auto t = ParseDateTime(o.window_to, /*allow_bare_date=*/true);
    if (!t.ok()) return InvalidArgument("window end: " + t.status().message());
    f.to = *t + (o.window_to.size() == 10 ? 86399 : 0);  // a bare date includes its whole day
  }
  if (f.from > f.to) return InvalidArgument("window start " + o.window_from + " is after its end " + o.window_to);
  for (const auto& t : o.tenants)
    if (t.empty()) return InvalidArgument("tenant filter: empty tenant name");
  f.tenants = o.tenants;
  std::sort(f.tenants.begin(), f.tenants.end());
  return f;
}

// GPUs per task and task count for a job of `gpus` GPUs: one task up to a
// node's 8 GPUs; above, 8-GPU tasks when 8 divides the count (16 -> 2 x 8),
// else tasks of the largest divisor below 8 (12 -> 2 x 6), so that the job
// keeps its GPU count and its tasks stay as large as possible.
std::pair<int32_t, int32_t> GangShape(int64_t gpus) {
  int64_t per = std::min(gpus, kGpusPerNode);
  while (gpus % per != 0) --per;
  return {static_cast<int32_t>(per), static_cast<int32_t>(gpus / per)};
}

struct PhillyLine {
  int64_t at = 0;  // seconds since 1970
  job::JobSpec job;
};

LineResult ParseLine(const CsvFile& f, const std::string& stem, PhillyLine& out) {
  BERTH_CHECK_LINE(kWrongWidth, f.CheckWidth());
  std::string ts, vc;
  double duration, gpu_time;
  int64_t gpus;
  BERTH_CHECK_LINE(kWrongWidth, f.GetString("timestamp", ts));
  auto at = ParseDateTime(ts);
  if (!at.ok()) return Bad(kBadValue, f.Error("timestamp: " + at.status().message()));
  BERTH_CHECK_LINE(kNotNumber, f.GetDouble("duration", duration));
  if (duration < 0 || duration > kMaxTraceSeconds)
    return Bad(kOutOfRange, f.Error("duration: " + std::to_string(duration) + " s is out of range"));
  BERTH_CHECK_LINE(kNotNumber, f.GetInt("num_gpus", gpus));
  if (gpus <= 0 || gpus > kMaxJobGpus)
    return Bad(kOutOfRange, f.Error("num_gpus: " + std::to_string(gpus) + " is not a GPU count (1.." +
                                    std::to_string(kMaxJobGpus) + ")"));
  BERTH_CHECK_LINE(kNotNumber, f.GetDouble("gpu_time", gpu_time));
  const double want = duration * static_cast<double>(gpus);
  if (std::fabs(gpu_time - want) > 1e-3 + 1e-9 * want)
    return Bad(kBadValue, f.Error("gpu_time: " + std::to_string(gpu_time) + " is not duration x num_gpus (" +
                                  std::to_string(want) + ")"));
  BERTH_CHECK_LINE(kWrongWidth, f.GetString("cluster", vc));
  if (vc.empty()) return Bad(kBadValue, f.Error("cluster: empty virtual cluster"));

  out.at = *at;
  job::JobSpec& j = out.job;
  j.name = stem + "-" + std::to_string(f.line_number());
  j.tenant = vc;
  j.duration = SecondsToUs(duration);
  job::TaskGroup g;
  std::tie(g.gpus, g.count) = GangShape(gpus);
  j.groups.push_back(std::move(g));
  Status valid = job::ValidateJob(j);
  if (!valid.ok()) return Bad(kInvalidJob, f.Error(valid.message()));
  return {};
}

}  // namespace

StatusOr<Trace> ReadPhilly(const std::string& path, const ReadOptions& opts) {
  BERTH_ASSIGN_OR_RETURN(Filter filter, MakeFilter(opts));
  BERTH_ASSIGN_OR_RETURN(CsvFile f, CsvFile::Open(path));
  BERTH_RETURN_IF_ERROR(CheckColumns(f, kColumns, kColumns));
  Trace t;
  t.format = "philly";
  const std::string stem = FileStem(path);
  std::vector<int64_t> at;  // per job, seconds since 1970
  int64_t earliest = std::numeric_limits<int64_t>::max();
  while (f.Next()) {
    ++t.report.lines;
    PhillyLine line;
    LineResult r = ParseLine(f, stem, line);
    if (!r.ok()) {
      BERTH_RETURN_IF_ERROR(HandleBadLine(opts, t.report, r.status, r.reason));
      continue;
    }
    earliest = std::min(earliest, line.at);
    if (!filter.Keeps(line.at, line.job.tenant)) {
      ++t.report.filtered;
      continue;
    }
    line.job.id = JobId(static_cast<int64_t>(t.jobs.size()));
    at.push_back(line.at);
    t.jobs.push_back(std::move(line.job));
    if (ReachedMaxJobs(opts, t)) break;
  }
  BERTH_RETURN_IF_ERROR(FinishRead(path, t, /*has_header=*/true));
  const int64_t origin = filter.has_from ? filter.from : earliest;
  for (size_t i = 0; i < t.jobs.size(); ++i) t.jobs[i].submit_time = (at[i] - origin) * kUsPerSecond;
  t.time_origin = FormatDateTime(origin);
  return t;
}

}  // namespace berth::sim
