// The "backfill" plugin: EASY backfill with a reservation, per node, for GPU
// types and gangs.
//
// Each pass starts with no reservation. The first job of the pass that cannot
// start for want of whole GPUs (in queue order: the head-of-line job) gets a
// reservation: its shadow time S, the earliest time its demand fits as the
// running jobs end at their predicted times (start + predicted runtime), and
// the nodes R it will take then (see reservation.h). With the arg
// `reservations=N` the first N such jobs get one, each beside the earlier ones.
// Every later job of the pass is admitted only if, for each reservation:
//   - it is predicted to end by S (now + predicted runtime <= S), or
//   - it fits in the spare GPUs at S (GPUs free at S of the reserved job's
//     types beyond what it needs), which then shrink by its GPUs, and it is
//     kept off the nodes R (this plugin is also a filter; list it among the
//     profile's filters for that node-level guard - as an admit plugin alone
//     it is the classic, type-aggregate EASY rule);
// otherwise it waits: "backfill: would delay the reservation of job X at t=S
// (...)", with the code kWait (not kUnschedulable: evicting others cannot help
// it, so a preempting profile does not try). As a filter, once the framework
// has called it, Admit also turns away a spare-GPU job that cannot fit off the
// reserved nodes, before its placement attempt.
//
// Predictions come from RuntimePredictor (limit, else a quantile of the
// history of similar jobs); a running job past its predicted end is predicted
// to run twice as long, then four times, ... (never "ending now"). A job with
// a reservation is never delayed by a backfilled job whose prediction held.
//
// Counters (Plugin::Counters, prefix "backfill."):
//   reservations            reservations made (one per pass and reserved job)
//   reserved_jobs           distinct jobs that got a reservation
//   reserved_started        of them, the jobs that started
//   reserved_late           ... that started after their first shadow time (any cause)
//   reserved_late_sum_s     sum of (start - first shadow time) over those
//   jobs_backfilled         jobs started ahead of a reserved job: the two
//                           below, and jobs that cannot use its GPUs (other
//                           types, no GPU)
//   backfilled_short        ... predicted to end by the shadow time
//   backfilled_spare        ... on the spare GPUs (running past the shadow time)
//   predictions_too_short   short backfills still running at their shadow time
//   too_short_while_waiting ... while the reserved job had not started
//   delayed_reserved_jobs   reserved jobs delayed by those
//   misprediction_delay_sum_s, misprediction_delay_max_s: the delay they
//                           caused: per reserved job, from the earliest shadow
//                           time overrun to min(its start, the last overrun's
//                           end); mean = sum / reserved_started
//   runs_predicted, runs_underpredicted: completed runs, and those that ran
//                           longer than predicted at their start
//
// Args: reservations (default 1), and the predictor's quantile, window,
// min_samples, default_runtime_s (runtime_predictor.h).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "berth/framework/plugin.h"
#include "berth/plugins/backfill/reservation.h"
#include "berth/plugins/backfill/runtime_predictor.h"

namespace berth::plugins::backfill {

struct BackfillOptions {
  int32_t reservations = 1;
  RuntimePredictorOptions predictor;

  static StatusOr<BackfillOptions> FromArgs(const framework::PluginArgs& args);
};

class BackfillPlugin final : public framework::AdmitPlugin, public framework::FilterPlugin {
 public:
  static constexpr std::string_view kName = "backfill";

  explicit BackfillPlugin(BackfillOptions options);

  std::string_view Name() const override { return kName; }
  void Counters(framework::PluginCounters& out) const override;

  // Admit.
  framework::Verdict Admit(const job::JobSpec& job, const state::ClusterState& state, TimeUs now) override;
  void OnStart(const job::JobSpec& job) override;
  void BeginPass(const framework::SchedulerView& view) override;
  void OnBlocked(const job::JobSpec& job, const framework::Verdict& verdict,
                 const framework::SchedulerView& view) override;
  bool ObservesBlocked() const override { return static_cast<int32_t>(reservations_.size()) < options_.reservations; }
  void OnRunEnded(const job::JobSpec& job, TimeUs start, TimeUs end, bool completed) override;

  // Filter: a job admitted on spare GPUs stays off the reserved nodes.
  bool Filter(const framework::CycleContext& ctx, const framework::TaskRequest& req, NodeId node) const override;
  std::string_view FailReason() const override { return "reserved for a waiting job"; }

  // One reservation of the current pass.
  struct Reservation {
    JobId job;
    std::string what;   // "the reservation of job NAME at t=S", for verdicts
    TimeUs start = 0;   // shadow time
    TimeUs end = 0;     // start + predicted runtime
    GpuDemand demand;
    std::vector<NodeGpus> nodes;  // R
    int64_t spare = 0;  // GPUs free at start beyond the demand, less what spare backfills took
  };
  const std::vector<Reservation>& reservations() const { return reservations_; }
  RuntimePredictor& predictor() { return predictor_; }

 private:
  // The predicted end of a running job (see the header comment).
  TimeUs PredictedEnd(const framework::RunningJob& r);
  // A necessary condition of placing `job` off the nodes of the reservations
  // in `bits`: each whole-GPU group finds room for its gang minimum on the
  // other nodes (counted from the state's per-node free GPU buckets).
  bool FitsOffReserved(const job::JobSpec& job, const state::ClusterState& state, uint32_t bits);
  // The predicted runtime of a pending job, remembered until the predictor learns.
  TimeUs PredictPending(const job::JobSpec& job);
  void BuildTimeline(const framework::SchedulerView& view);
  bool TimelineCurrent(const framework::SchedulerView& view) const;

  // What the last Admit decided, for OnStart.
  struct Admitted {
    JobId job;
    uint32_t spare_bits = 0;  // reservations it runs past (on spare GPUs)
    int64_t gpus = 0;
  };
  // A backfilled job predicted to end by a reservation's shadow time.
  struct Promise {
    JobId reserved;
    TimeUs shadow = 0;
  };
  // Per job that ever got a reservation.
  struct ReservedStats {
    TimeUs first_shadow = 0;
    TimeUs started = -1;
    TimeUs harm_from = INT64_MAX;  // earliest shadow time overrun by a short backfill
    TimeUs harm_until = 0;         // latest end of such an overrun
    bool harmed = false;
  };

  BackfillOptions options_;
  RuntimePredictor predictor_;
  TimeUs now_ = 0;
  std::vector<Reservation> reservations_;
  std::vector<uint32_t> node_bits_;  // per node: bit i set when node is in reservation i's R
  Admitted admitted_;
  JobId restricted_job_;            // the job the filter keeps off reserved nodes
  uint32_t restricted_bits_ = 0;
  // Set once the framework has asked Filter: the profile lists the plugin as a
  // filter, so a job on spare GPUs that cannot fit off the reserved nodes is
  // turned away in Admit, before a placement attempt that would fail.
  mutable bool used_as_filter_ = false;
  std::vector<int32_t> off_nodes_;  // scratch: nodes of the reservations in question
  // FitsOffReserved's counts while the state stays as it is (cleared at each
  // pass, start and end): tasks of `gpus` GPUs of `types` off the nodes of `bits`.
  struct OffCount {
    int32_t gpus = 0;
    uint64_t types = 0;
    uint32_t bits = 0;
    int64_t fit = 0;
  };
  std::vector<OffCount> off_counts_;
  std::unordered_map<JobId, TimeUs> pending_predictions_;  // for predictor version below (looked up only)
  int64_t pending_version_ = -1;
  // The timeline is kept from pass to pass while it holds: no run started or
  // ended, the free GPUs look the same, and no predicted end has passed.
  Timeline timeline_;
  bool timeline_valid_ = false;
  std::array<int64_t, 3> timeline_state_{};  // free whole GPUs, allocated milli-GPU, tasks at the build
  std::unordered_map<JobId, TimeUs> predicted_;  // running jobs: prediction at start (looked up only)
  std::unordered_map<JobId, TimeUs> partial_;    // runtime of earlier, evicted runs (looked up only)
  std::unordered_map<JobId, std::vector<Promise>> promises_;  // running short backfills (looked up only)
  std::map<JobId, ReservedStats> reserved_;

  int64_t reservations_made_ = 0;
  int64_t jobs_backfilled_ = 0;
  int64_t backfilled_short_ = 0;
  int64_t backfilled_spare_ = 0;
  int64_t too_short_ = 0;
  int64_t too_short_waiting_ = 0;
  int64_t runs_predicted_ = 0;
  int64_t runs_underpredicted_ = 0;
};

}  // namespace berth::plugins::backfill
