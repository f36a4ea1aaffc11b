// Runtime prediction from limits and the history of similar jobs.
#include "berth/plugins/backfill/runtime_predictor.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace berth::plugins::backfill {
namespace {

StatusOr<double> ParseNumber(const std::string& key, const std::string& value) {
  double v = 0;
  auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || p != value.data() + value.size() || !std::isfinite(v))
    return InvalidArgument("backfill: " + key + " must be a number, not '" + value + "'");
  return v;
}

}  // namespace

Status RuntimePredictorOptions::Validate() const {
  if (!(quantile > 0 && quantile <= 1)) return InvalidArgument("backfill: quantile must be in (0, 1]");
  if (window < 1 || window > 1'000'000) return InvalidArgument("backfill: window must be in 1..1000000");
  if (min_samples < 1 || min_samples > window) return InvalidArgument("backfill: min_samples must be in 1..window");
  if (default_runtime <= 0) return InvalidArgument("backfill: default_runtime_s must be positive");
  return Status::Ok();
}

StatusOr<RuntimePredictorOptions> RuntimePredictorOptions::FromArgs(const framework::PluginArgs& args) {
  RuntimePredictorOptions o;
  for (const auto& [key, value] : args) {
    if (key == "quantile") {
      BERTH_ASSIGN_OR_RETURN(o.quantile, ParseNumber(key, value));
    } else if (key == "window" || key == "min_samples") {
      BERTH_ASSIGN_OR_RETURN(double v, ParseNumber(key, value));
      if (v != std::floor(v) || v < 1 || v > 1e6) return InvalidArgument("backfill: " + key + " must be a positive integer");
      (key == "window" ? o.window : o.min_samples) = static_cast<int32_t>(v);
    } else if (key == "default_runtime_s") {
      BERTH_ASSIGN_OR_RETURN(double v, ParseNumber(key, value));
      if (v <= 0 || v > 1e9) return InvalidArgument("backfill: default_runtime_s must be in (0, 1e9]");
      o.default_runtime = SecondsToUs(v);
    }
  }
  BERTH_RETURN_IF_ERROR(o.Validate());
  return o;
}

const char* SourceName(RuntimePredictor::Source s) {
  switch (s) {
    case RuntimePredictor::Source::kLimit: return "limit";
    case RuntimePredictor::Source::kTenantQueueGpus: return "tenant+queue+gpus";
    case RuntimePredictor::Source::kQueueGpus: return "queue+gpus";
    case RuntimePredictor::Source::kGpus: return "gpus";
    case RuntimePredictor::Source::kGlobal: return "all";
    case RuntimePredictor::Source::kDefault: return "default";
  }
  return "?";
}

int32_t RuntimePredictor::Intern(std::string_view name) {
  auto it = names_.find(name);
  if (it != names_.end()) return it->second;
  const auto id = static_cast<int32_t>(names_.size());
  names_.emplace(std::string(name), id);
  return id;
}

int32_t RuntimePredictor::Lookup(std::string_view name) const {
  auto it = names_.find(name);
  return it == names_.end() ? -1 : it->second;
}

void RuntimePredictor::Add(History& h, TimeUs runtime) {
  if (static_cast<int32_t>(h.ring.size()) < options_.window) {
    h.ring.push_back(runtime);
  } else {
    h.ring[h.next] = runtime;
    h.next = (h.next + 1) % options_.window;
  }
  h.quantile = -1;
}

// Nearest rank: the smallest sample with at least quantile x n samples at or below it.
TimeUs RuntimePredictor::Quantile(History& h) {
  if (h.quantile >= 0) return h.quantile;
  scratch_.assign(h.ring.begin(), h.ring.end());
  const auto n = static_cast<int64_t>(scratch_.size());
  int64_t rank = static_cast<int64_t>(std::ceil(options_.quantile * static_cast<double>(n) - 1e-9));
  rank = std::clamp<int64_t>(rank, 1, n);
  std::nth_element(scratch_.begin(), scratch_.begin() + (rank - 1), scratch_.end());
  h.quantile = scratch_[rank - 1];
  return h.quantile;
}

TimeUs RuntimePredictor::FromKey(const Key& key) {
  auto it = by_key_.find(key);
  if (it == by_key_.end() || static_cast<int32_t>(it->second.ring.size()) < options_.min_samples) return -1;
  return Quantile(it->second);
}

void RuntimePredictor::Learn(const job::JobSpec& job, TimeUs runtime) {
  runtime = std::max<TimeUs>(runtime, 1);
  const int32_t tenant = Intern(job.tenant);
  const int32_t queue = Intern(job.queue);
  const int64_t gpus = job.total_gpus();
  Add(by_key_[Key{tenant, queue, gpus}], runtime);
  Add(by_key_[Key{-1, queue, gpus}], runtime);
  Add(by_key_[Key{-1, -1, gpus}], runtime);
  Add(global_, runtime);
  ++learned_;
}

RuntimePredictor::Prediction RuntimePredictor::Predict(const job::JobSpec& job) {
  if (job.runtime_limit > 0) return {job.runtime_limit, Source::kLimit};
  const int32_t tenant = Lookup(job.tenant);
  const int32_t queue = Lookup(job.queue);
  const int64_t gpus = job.total_gpus();
  TimeUs t = -1;
  if (tenant >= 0 && queue >= 0 && (t = FromKey(Key{tenant, queue, gpus})) >= 0) return {t, Source::kTenantQueueGpus};
  if (queue >= 0 && (t = FromKey(Key{-1, queue, gpus})) >= 0) return {t, Source::kQueueGpus};
  if ((t = FromKey(Key{-1, -1, gpus})) >= 0) return {t, Source::kGpus};
  if (static_cast<int32_t>(global_.ring.size()) >= options_.min_samples) return {Quantile(global_), Source::kGlobal};
  return {options_.default_runtime, Source::kDefault};
}

}  // namespace berth::plugins::backfill
