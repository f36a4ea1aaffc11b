// Reading Pollux's application profiles.
#include "berth/elastic/app_profile.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "berth/common/csv.h"

namespace berth::elastic {
namespace {

constexpr double kMaxNoiseRatio = 1e9;

Status ReadPlacements(const std::string& path, std::vector<StepSample>& out) {
  BERTH_ASSIGN_OR_RETURN(CsvFile f, CsvFile::Open(path));
  while (f.Next()) {
    BERTH_RETURN_IF_ERROR(f.CheckWidth());
    std::string placement;
    int64_t local = 0;
    StepSample s;
    BERTH_RETURN_IF_ERROR(f.GetString("placement", placement));
    BERTH_RETURN_IF_ERROR(f.GetInt("local_bsz", local));
    BERTH_RETURN_IF_ERROR(f.GetDouble("step_time", s.step_time_s));
    BERTH_RETURN_IF_ERROR(f.GetDouble("sync_time", s.sync_time_s));
    if (placement.empty()) return f.Error("placement: empty");
    s.nodes = 0;
    s.gpus = 0;
    for (char c : placement) {
      if (c < '1' || c > '9') return f.Error("placement: '" + placement + "' is not a string of GPU counts per node");
      ++s.nodes;
      s.gpus += c - '0';
    }
    if (local <= 0 || s.step_time_s <= 0) return f.Error("local_bsz and step_time must be positive");
    s.local_bsz = static_cast<int32_t>(local);
    out.push_back(s);
  }
  return Status::Ok();
}

Status ReadScalability(const std::string& path, std::vector<StepSample>& out) {
  BERTH_ASSIGN_OR_RETURN(CsvFile f, CsvFile::Open(path));
  while (f.Next()) {
    BERTH_RETURN_IF_ERROR(f.CheckWidth());
    int64_t nodes = 0, gpus = 0, local = 0;
    StepSample s;
    BERTH_RETURN_IF_ERROR(f.GetInt("num_nodes", nodes));
    BERTH_RETURN_IF_ERROR(f.GetInt("num_replicas", gpus));
    BERTH_RETURN_IF_ERROR(f.GetInt("local_bsz", local));
    BERTH_RETURN_IF_ERROR(f.GetDouble("step_time", s.step_time_s));
    BERTH_RETURN_IF_ERROR(f.GetDouble("sync_time", s.sync_time_s));
    if (nodes <= 0 || gpus < nodes || local <= 0 || s.step_time_s <= 0)
      return f.Error("num_nodes, num_replicas (>= num_nodes), local_bsz and step_time must be positive");
    s.nodes = static_cast<int32_t>(nodes);
    s.gpus = static_cast<int32_t>(gpus);
    s.local_bsz = static_cast<int32_t>(local);
    out.push_back(s);
  }
  return Status::Ok();
}

Status ReadValidation(const std::string& path, int32_t batch, NoiseCurve& out) {
  BERTH_ASSIGN_OR_RETURN(CsvFile f, CsvFile::Open(path));
  out.batch = batch;
  while (f.Next()) {
    BERTH_RETURN_IF_ERROR(f.CheckWidth());
    double progress = 0, sqr = 0, var = 0;
    BERTH_RETURN_IF_ERROR(f.GetDouble("progress", progress));
    BERTH_RETURN_IF_ERROR(f.GetDouble("grad_sqr", sqr));
    BERTH_RETURN_IF_ERROR(f.GetDouble("grad_var", var));
    if (sqr < 0 || var < 0) return f.Error("grad_sqr and grad_var must not be negative");
    if (!out.progress.empty() && progress <= out.progress.back()) return f.Error("progress: not increasing");
    out.progress.push_back(progress);
    // A vanishing gradient (grad_sqr 0, late in training) is all noise:
    // large batches lose nothing. The cap keeps the arithmetic finite.
    out.phi.push_back(sqr > 0 ? std::min(var / sqr, kMaxNoiseRatio) : kMaxNoiseRatio);  // times M0 once M0 is known
  }
  if (out.progress.empty()) return InvalidArgument(path + ": no data lines");
  return Status::Ok();
}

}  // namespace

double AppProfile::NoiseScale(double progress, int32_t batch) const {
  const NoiseCurve* best = &curves.front();
  double best_d = 1e300;
  for (const NoiseCurve& c : curves) {
    const double d = std::fabs(std::log(static_cast<double>(c.batch)) - std::log(static_cast<double>(std::max(batch, 1))));
    if (d < best_d - 1e-12) {
      best_d = d;
      best = &c;
    }
  }
  const auto& p = best->progress;
  if (progress <= p.front()) return best->phi.front();
  if (progress >= p.back()) return best->phi.back();
  const size_t k = static_cast<size_t>(std::upper_bound(p.begin(), p.end(), progress) - p.begin());
  const double w = (progress - p[k - 1]) / (p[k] - p[k - 1]);
  return best->phi[k - 1] + w * (best->phi[k] - best->phi[k - 1]);
}

StatusOr<AppProfile> LoadAppProfile(const std::string& dir) {
  namespace fs = std::filesystem;
  AppProfile app;
  app.name = fs::path(dir).filename().string();
  if (app.name.empty()) app.name = fs::path(dir).parent_path().filename().string();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return NotFound(dir + ": no such application folder");
  if (fs::exists(dir + "/placements.csv")) BERTH_RETURN_IF_ERROR(ReadPlacements(dir + "/placements.csv", app.steps));
  if (fs::exists(dir + "/scalability.csv")) BERTH_RETURN_IF_ERROR(ReadScalability(dir + "/scalability.csv", app.steps));
  if (app.steps.empty()) return InvalidArgument(dir + ": no step times (placements.csv or scalability.csv)");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string f = e.path().filename().string();
    if (f.rfind("validation-", 0) == 0 && f.size() > 15 && f.substr(f.size() - 4) == ".csv") files.push_back(f);
  }
  if (ec) return InvalidArgument(dir + ": " + ec.message());
  std::sort(files.begin(), files.end());  // directory order is not stable
  for (const std::string& f : files) {
    int64_t batch = 0;
    if (!ParseInt64(f.substr(11, f.size() - 15), batch).ok() || batch <= 0)
      return InvalidArgument(dir + "/" + f + ": the file name does not give a batch size");
    NoiseCurve c;
    BERTH_RETURN_IF_ERROR(ReadValidation(dir + "/" + f, static_cast<int32_t>(batch), c));
    app.curves.push_back(std::move(c));
  }
  if (app.curves.empty()) return InvalidArgument(dir + ": no validation-<batch>.csv files");
  std::sort(app.curves.begin(), app.curves.end(), [](const NoiseCurve& a, const NoiseCurve& b) { return a.batch < b.batch; });
  app.base_batch = app.curves.front().batch;
  app.max_batch = app.curves.back().batch;
  app.target_progress = app.curves.front().progress.back();
  for (NoiseCurve& c : app.curves) {
    for (double& phi : c.phi) phi *= app.base_batch;
    app.target_progress = std::min(app.target_progress, c.progress.back());
  }
  app.min_local_bsz = app.steps.front().local_bsz;
  app.max_local_bsz = app.steps.front().local_bsz;
  for (const StepSample& s : app.steps) {
    app.min_local_bsz = std::min(app.min_local_bsz, s.local_bsz);
    app.max_local_bsz = std::max(app.max_local_bsz, s.local_bsz);
  }
  return app;
}

}  // namespace berth::elastic
