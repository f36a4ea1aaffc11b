// Gavel job traces (OSDI'20): tab-separated, no header, one job per line, in
// one of two layouts, told apart by the field count of the first line:
//   10 fields (traces/physical_cluster): job_type, command, working_directory,
//      num_steps_arg, needs_data_dir, total_steps, scale_factor,
//      priority_weight, SLO, arrival_time
//   7 fields (traces/msr, per Philly VC): job_type, command, num_steps_arg,
//      needs_data_dir, total_steps, arrival_time, scale_factor
// A job is a gang of scale_factor single-GPU tasks; job_class = job_type,
// work_steps = total_steps, priority = priority_weight (1 in the 7-field
// layout, Gavel's default), submit time = arrival_time. The duration is not
// in the trace (-1): it follows from the steps and a throughput table. In the
// 7-field layout the file name is the Philly VC and becomes the tenant.
#include <cmath>
#include <fstream>

#include "berth/sim/readers/reader_util.h"
#include "berth/sim/readers/readers.h"

namespace berth::sim {
namespace {

constexpr int64_t kMaxJobGpus = 1 << 20;

struct Layout {
  size_t width;
  const char* name;
  int job_type, command, needs_data_dir, total_steps, scale_factor, arrival_time;
  int priority_weight, slo;  // -1: not in this layout
};
constexpr Layout kPhysical{10, "physical_cluster", 0, 1, 4, 5, 6, 9, 7, 8};
constexpr Layout kMsr{7, "msr", 0, 1, 3, 4, 6, 5, -1, -1};
constexpr const char* kNames10[] = {"job_type",       "command",     "working_directory", "num_steps_arg",
                                    "needs_data_dir", "total_steps", "scale_factor",      "priority_weight",
                                    "SLO",            "arrival_time"};
constexpr const char* kNames7[] = {"job_type",    "command",      "num_steps_arg", "needs_data_dir",
                                   "total_steps", "arrival_time", "scale_factor"};

std::vector<std::string> SplitTabs(const std::string& line) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t tab = line.find('\t', start);
    out.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) return out;
    start = tab + 1;
  }
}

class GavelLine {
 public:
  GavelLine(const std::string& path, int64_t line_no, const Layout& layout, std::vector<std::string> fields)
      : path_(path), line_no_(line_no), layout_(layout), fields_(std::move(fields)) {}

  Status Error(const std::string& m) const {
    return InvalidArgument(path_ + ":" + std::to_string(line_no_) + ": " + m);
  }
  std::string Name(int i) const {
    return "field " + std::to_string(i + 1) + " (" + (layout_.width == 10 ? kNames10[i] : kNames7[i]) + ")";
  }
  const std::string& Str(int i) const { return fields_[i]; }
  Status Int(int i, int64_t& out) const {
    Status s = ParseInt64(fields_[i], out);
    return s.ok() ? s : Error(Name(i) + ": " + s.message());
  }
  Status Double(int i, double& out) const {
    Status s = ParseDouble(fields_[i], out);
    return s.ok() ? s : Error(Name(i) + ": " + s.message());
  }

 private:
  const std::string& path_;
  int64_t line_no_;
  const Layout& layout_;
  std::vector<std::string> fields_;
};

LineResult ParseLine(const GavelLine& l, const Layout& lay, const std::string& stem, int64_t line_no,
                     job::JobSpec& j) {
  int64_t needs_data, steps, scale;
  double arrival;
  if (l.Str(lay.job_type).empty()) return Bad(kBadValue, l.Error(l.Name(lay.job_type) + ": empty"));
  if (l.Str(lay.command).empty()) return Bad(kBadValue, l.Error(l.Name(lay.command) + ": empty"));
  BERTH_CHECK_LINE(kNotNumber, l.Int(lay.needs_data_dir, needs_data));
  if (needs_data != 0 && needs_data != 1)
    return Bad(kOutOfRange, l.Error(l.Name(lay.needs_data_dir) + ": must be 0 or 1, not " + std::to_string(needs_data)));
  BERTH_CHECK_LINE(kNotNumber, l.Int(lay.total_steps, steps));
  if (steps <= 0) return Bad(kOutOfRange, l.Error(l.Name(lay.total_steps) + ": must be positive, not " + std::to_string(steps)));
  BERTH_CHECK_LINE(kNotNumber, l.Int(lay.scale_factor, scale));
  if (scale <= 0 || scale > kMaxJobGpus)
    return Bad(kOutOfRange, l.Error(l.Name(lay.scale_factor) + ": " + std::to_string(scale) + " is not a GPU count"));
  BERTH_CHECK_LINE(kNotNumber, l.Double(lay.arrival_time, arrival));
  if (arrival < 0 || arrival > kMaxTraceSeconds)
    return Bad(kOutOfRange, l.Error(l.Name(lay.arrival_time) + ": " + std::to_string(arrival) + " s is out of range"));
  int64_t priority = 1;
  if (lay.priority_weight >= 0) {
    double w, slo;
    BERTH_CHECK_LINE(kNotNumber, l.Double(lay.priority_weight, w));
    if (w <= 0 || w != std::floor(w) || w > 1e9)
      return Bad(kOutOfRange, l.Error(l.Name(lay.priority_weight) + ": " + l.Str(lay.priority_weight) +
                                      " is not a positive whole number"));
    priority = static_cast<int64_t>(w);
    BERTH_CHECK_LINE(kNotNumber, l.Double(lay.slo, slo));
    if (slo != -1 && slo <= 0)
      return Bad(kOutOfRange, l.Error(l.Name(lay.slo) + ": must be -1 (none) or positive, not " + l.Str(lay.slo)));
  }
  j.name = stem + "-" + std::to_string(line_no);
  if (lay.width == kMsr.width) j.tenant = stem;
  j.priority = static_cast<int32_t>(priority);
  j.submit_time = SecondsToUs(arrival);
  j.job_class = l.Str(lay.job_type);
  j.work_steps = steps;
  job::TaskGroup g;
  g.count = static_cast<int32_t>(scale);
  g.gpus = 1;
  j.groups.push_back(std::move(g));
  Status valid = job::ValidateJob(j);
  if (!valid.ok()) return Bad(kInvalidJob, l.Error(valid.message()));
  return {};
}

}  // namespace

StatusOr<Trace> ReadGavel(const std::string& path, const ReadOptions& opts) {
  std::ifstream in(path);
  if (!in) return NotFound(path + ": cannot open file");
  Trace t;
  t.format = "gavel";
  const std::string stem = FileStem(path);
  const Layout* layout = nullptr;  // set by the first line of a known width
  std::string line;
  int64_t line_no = 0, layout_line = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    ++t.report.lines;
    std::vector<std::string> fields = SplitTabs(line);
    const std::string where = path + ":" + std::to_string(line_no) + ": ";
    LineResult r;
    if (layout == nullptr && (fields.size() == kPhysical.width || fields.size() == kMsr.width)) {
      layout = fields.size() == kPhysical.width ? &kPhysical : &kMsr;
      layout_line = line_no;
    }
    if (layout == nullptr) {
      r = Bad(kWrongWidth, InvalidArgument(where + "expected 10 (physical_cluster) or 7 (msr) tab-separated fields, found " +
                                           std::to_string(fields.size())));
    } else if (fields.size() != layout->width) {
      r = Bad(kWrongWidth, InvalidArgument(where + "expected " + std::to_string(layout->width) +
                                           " tab-separated fields (" + layout->name + " layout, as line " +
                                           std::to_string(layout_line) + "), found " + std::to_string(fields.size()) +
                                           (fields.size() < layout->width ? " (truncated line?)" : "")));
    }
    job::JobSpec j;
    if (r.ok()) r = ParseLine(GavelLine(path, line_no, *layout, std::move(fields)), *layout, stem, line_no, j);
    BERTH_ASSIGN_OR_RETURN(const bool stop, TakeLine(opts, t, r, std::move(j)));
    if (stop) break;
  }
  if (in.bad()) return Internal(path + ": read error");
  BERTH_RETURN_IF_ERROR(FinishRead(path, t, /*has_header=*/false));
  return t;
}

}  // namespace berth::sim
