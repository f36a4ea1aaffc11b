// Progress of jobs whose runtime depends on their allocation, for the replay:
// jobs with a goodput model (pollux traces: elastic/goodput.h) and elastic
// jobs with a duration (their work runs at count / initial count of full
// speed: linear scaling).
//
// After every batch of changes at time t the replay calls Sync: each tracked
// job whose allocation changed since (JobRecord::alloc_version) gets its
// progress settled up to t on the allocation it had, then its new allocation
// recorded and, if it runs, a completion at the time its remaining work takes
// on it (work starts after the run's startup delay: restore or resize cost).
// Progress is kept whole when a job is evicted or resized (it checkpoints at
// the change). A round may change a running job's batch (SetBatch), which
// also re-times its completion.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "berth/framework/plugin.h"
#include "berth/scheduler/scheduler.h"
#include "berth/sim/trace.h"

namespace berth::sim {

class ProgressTracker {
 public:
  // (trace index, completion time)
  using PushCompletion = std::function<void(int32_t, TimeUs)>;
  using FindRecord = std::function<const scheduler::JobRecord*(int32_t)>;

  ProgressTracker(const Trace& trace, std::span<const JobId> ids);
  bool active() const { return !tracked_.empty(); }
  bool Tracks(int32_t i) const { return !tracks_.empty() && tracks_[i] != 0; }

  void Sync(TimeUs t, const FindRecord& find, const PushCompletion& push);
  // The elastic tracked jobs of one partition (route == part), pending or
  // running, for a resize round at t, by job id.
  std::vector<framework::ElasticJob> ElasticJobs(TimeUs t, const FindRecord& find, std::span<const int32_t> route,
                                                 int32_t part) const;
  // A new batch for a running job from t on (its completion moves).
  void SetBatch(int32_t i, int32_t batch, TimeUs t, const FindRecord& find, const PushCompletion& push);
  double progress(int32_t i) const { return prog_[i].done; }

 private:
  struct Prog {
    double done = 0;   // model jobs: base-batch iterations; linear jobs: seconds at full size
    TimeUs since = 0;  // progress counted up to here (or work starts here)
    int32_t gpus = 0, nodes = 0, batch = 0;
    int64_t version = -1;
    bool running = false;
  };
  double Advance(int32_t i, const Prog& p, double seconds) const;
  double SecondsLeft(int32_t i, const Prog& p) const;
  void Settle(int32_t i, TimeUs t);
  void Retime(int32_t i, TimeUs t, const PushCompletion& push);
  int32_t DefaultBatch(int32_t i, int32_t gpus, int32_t nodes) const;

  const Trace& trace_;
  std::span<const JobId> ids_;
  // Per job, sized only when some job is tracked (active()).
  std::vector<const elastic::GoodputModel*> model_;  // or null (linear)
  std::vector<uint8_t> tracks_;
  std::vector<int32_t> tracked_;
  std::vector<Prog> prog_;
  std::vector<int32_t> chosen_batch_;  // set by rounds (0: none)
};

}  // namespace berth::sim
