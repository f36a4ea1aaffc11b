// Runtime prediction for backfill: how long will a job run once started?
//
// The answer is the job's declared runtime limit when it has one; otherwise a
// conservative quantile (default the 90th percentile) of the runtimes of
// completed runs of similar jobs, from the narrowest key that has enough
// history:
//
//   (tenant, queue, total GPUs) -> (queue, total GPUs) -> (total GPUs) -> all jobs -> a fixed default
//
// The true duration a simulator knows (JobSpec::duration) is never read: a
// prediction uses only what a real scheduler would know.
//
// Memory is bounded: each key keeps its last `window` samples in a ring, so
// the estimate follows drift and costs at most window x keys samples. The
// quantile is the nearest-rank one over the ring (deterministic), cached until
// the key learns a new sample.
//
//   RuntimePredictor p(RuntimePredictorOptions{});
//   p.Learn(job, SecondsToUs(1800));          // a completed run of 30 min
//   RuntimePredictor::Prediction x = p.Predict(other_job);
//   x.runtime, x.source                       // e.g. 30 min, kTenantQueueGpus
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "berth/common/quantity.h"
#include "berth/common/status.h"
#include "berth/framework/plugin.h"
#include "berth/job/job.h"

namespace berth::plugins::backfill {

struct RuntimePredictorOptions {
  double quantile = 0.9;       // of the recent runtimes of a key, in (0, 1]
  int32_t window = 128;        // samples kept per key
  int32_t min_samples = 3;     // a key with fewer samples defers to the next, coarser one
  TimeUs default_runtime = SecondsToUs(24 * 3600);  // no history at all

  Status Validate() const;
  // Reads the plugin args "quantile", "window", "min_samples",
  // "default_runtime_s" (and leaves every other key to the caller).
  static StatusOr<RuntimePredictorOptions> FromArgs(const framework::PluginArgs& args);
};

class RuntimePredictor {
 public:
  enum class Source { kLimit, kTenantQueueGpus, kQueueGpus, kGpus, kGlobal, kDefault };
  struct Prediction {
    TimeUs runtime = 0;
    Source source = Source::kDefault;
  };

  explicit RuntimePredictor(RuntimePredictorOptions options) : options_(options) {}

  // The predicted runtime of a run of `job` from its start (> 0).
  Prediction Predict(const job::JobSpec& job);
  // A completed run of `job` took `runtime`.
  void Learn(const job::JobSpec& job, TimeUs runtime);

  const RuntimePredictorOptions& options() const { return options_; }
  int64_t samples_learned() const { return learned_; }

 private:
  // The recent runtimes of one key, and their cached quantile.
  struct History {
    std::vector<TimeUs> ring;  // at most window samples
    int32_t next = 0;          // where the next sample goes once the ring is full
    TimeUs quantile = -1;      // cached; -1 when stale
  };
  using Key = std::tuple<int32_t, int32_t, int64_t>;  // tenant id, queue id, GPUs (-1: any)

  int32_t Intern(std::string_view name);
  int32_t Lookup(std::string_view name) const;  // -1 when never seen
  void Add(History& h, TimeUs runtime);
  TimeUs Quantile(History& h);
  // The quantile of a key with at least min_samples samples, or -1.
  TimeUs FromKey(const Key& key);

  RuntimePredictorOptions options_;
  std::map<std::string, int32_t, std::less<>> names_;  // tenants and queues -> id
  std::map<Key, History> by_key_;
  History global_;
  std::vector<TimeUs> scratch_;
  int64_t learned_ = 0;
};

const char* SourceName(RuntimePredictor::Source s);

}  // namespace berth::plugins::backfill
