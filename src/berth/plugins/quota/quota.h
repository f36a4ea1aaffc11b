// The "quota" plugin: admission against the queue tree's quotas (ledger.h).
//
//   Admit    a fast check: could the job's whole demand (its gang minimum)
//            fit its queue's quota in some GPU type all its groups accept (or
//            in all types together when no one type is accepted by all)?
//   Filter   (optional) steers tasks to GPU types the queue's quota can
//            take them in: a node is out when the task fits the queue's
//            all-types quotas but not those of the node's type. (When it fits
//            no quota at all, Reserve gives the verdict.)
//   Reserve  each task's allocation, in the node's GPU type, on top of the
//            gang's earlier tentative charges: ledger.CheckFits. The gang's
//            tentative charges are dropped at Unreserve and at the next Admit.
// A refusal is Unschedulable, naming the queue and the limit hit ("queue 'a'
// (all GPU types): would borrow 4 GPUs, over its borrowing limit of 2"): the
// job stays pending and is tried again at later passes, never failed. The
// ledger itself is charged by the scheduler when a run starts. Every check is
// in the ledger's unit: with normalized units a task is checked at what it
// would be charged on the node's GPU type (Ledger::Amount), so a job whose
// charge on fast cards exceeds its quota may still start on slower ones.
//
// Profile: admit = {quota}, reserve = {quota}, and filter = {quota} on
// clusters with several GPU types (one instance serves every point).
#pragma once

#include <string_view>
#include <vector>

#include "berth/framework/plugin.h"

namespace berth::plugins {

class QuotaPlugin final : public framework::AdmitPlugin,
                          public framework::FilterPlugin,
                          public framework::ReservePlugin {
 public:
  static constexpr std::string_view kName = "quota";
  std::string_view Name() const override { return kName; }
  void Counters(framework::PluginCounters& out) const override;

  // Admit: the ledger comes from the pass's view (it outlives the scheduler's passes).
  void BeginPass(const framework::SchedulerView& view) override {
    ledger_ = &view.ledger;
    Reset();
  }
  framework::Verdict Admit(const job::JobSpec& job, const state::ClusterState& state, TimeUs now) override;

  bool Filter(const framework::CycleContext& ctx, const framework::TaskRequest& req, NodeId node) const override;
  std::string_view FailReason() const override { return "GPU type over the queue's quota"; }
  // The verdict reads only the node's GPU type.
  bool FiltersByType(const framework::CycleContext&, const framework::TaskRequest&) const override { return true; }

  framework::Verdict Reserve(const framework::CycleContext& ctx, const state::Allocation& alloc) override;
  void Unreserve(const framework::CycleContext& ctx, const state::Allocation& alloc) override;

 private:
  struct Tentative {
    int32_t task = 0;
    int32_t dim = -1;  // GPU type dimension, -1 for none
    int64_t milli = 0;
  };
  void Reset();

  const tenancy::Ledger* ledger_ = nullptr;
  JobId job_;                         // the gang whose tasks are reserved
  std::vector<Tentative> tentative_;  // the current gang's reserved tasks
  std::vector<int64_t> pending_;      // per GPU type dimension: tentative milli
  int64_t pending_all_ = 0;
  // Filter verdicts per GPU type for the task being placed (-1: not yet known).
  mutable JobId filter_job_;
  mutable int32_t filter_task_ = -1;
  mutable std::vector<int8_t> filter_type_ok_;
  int64_t refused_admit_ = 0;
  int64_t refused_reserve_ = 0;
};

}  // namespace berth::plugins
