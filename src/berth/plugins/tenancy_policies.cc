// Named policies for sharing a fleet between tenants: ordering (srtf,
// tiresias, fairshare), quotas, preemption and backfill.
//
//   srtf                shortest remaining time first, preemptive; best fit
//   tiresias            2D-LAS with discretized queues, preemptive; best fit
//   tiresias-pollux     tiresias as Pollux's (OSDI'21) simulator configures
//                       it: two queues split at 16 GPU-hours, no promotion,
//                       no minimum runtime before eviction
//   fairshare           fair-share order over the queue tree; quota admission,
//                       reclaim by preemption; topology-aware gangs, best fit
//   fairshare-backfill  fairshare plus reservation and backfill
//   fairshare-entitled  fairshare that keeps each queue to the GPU types of
//                       its reachable entitlement (the `entitle` filter and
//                       score, plugins/entitle/entitle.h)
//
// All are greedy passes (a job that cannot start does not block the next).
// Registered here too, from their folders: `priority-preempt` and
// `priority-preempt-lpf` (preempt/register.cc), `backfill` (FIFO with EASY
// backfill, backfill/register.h).
#include "berth/plugins/backfill/register.h"
#include "berth/plugins/builtin.h"

namespace berth::plugins {

using framework::PluginRef;
using framework::Profile;

namespace {

Profile Base(std::string queue_sort) {
  Profile p;
  p.queue_sort = std::move(queue_sort);
  p.filter = {PluginRef{"fit"}};
  p.score = {PluginRef{"bestfit"}};
  p.permit = {PluginRef{"gang"}};
  return p;
}

// The queue sort doubles as the post-filter: it evicts what its order ranks below.
Profile OrderPreemptive(const std::string& name) {
  Profile p = Base(name);
  p.post_filter = {PluginRef{name}};
  return p;
}

// Tiresias with the settings of the Tiresias baseline in Pollux's artifact
// (petuum/adaptdl, simulator/tiresias.py, osdi21-artifact branch): one
// threshold of 16 GPU-hours (two queues), starvation promotion off, and any
// running job of a lower queue may be evicted at once.
Profile TiresiasPollux() {
  Profile p = OrderPreemptive("tiresias");
  p.queue_sort_args = {{"thresholds_gpu_h", "16"}, {"promote_after", "0"}, {"min_runtime_s", "0"}};
  return p;
}

Profile FairShare(bool backfill) {
  Profile p = Base("fairshare");
  p.admit = {PluginRef{"quota"}};
  p.filter.push_back(PluginRef{"quota"});
  if (backfill) {
    p.admit.push_back(PluginRef{"backfill"});
    p.filter.push_back(PluginRef{"backfill"});
  }
  p.reserve = {PluginRef{"quota"}};
  p.plan = {PluginRef{"topology"}};
  p.post_filter = {PluginRef{"preempt"}};
  return p;
}

Profile FairShareEntitled() {
  Profile p = FairShare(false);
  p.filter.push_back(PluginRef{"entitle"});
  p.score.insert(p.score.begin(), PluginRef{"entitle", {}, 100});
  return p;
}

}  // namespace

Status RegisterTenancyPolicies(framework::PolicyRegistry& r) {
  BERTH_RETURN_IF_ERROR(r.Register(
      "srtf", OrderPreemptive("srtf"),
      "shortest remaining time first (declared or known runtime), evicting longer-remaining jobs; best fit"));
  BERTH_RETURN_IF_ERROR(r.Register(
      "tiresias", OrderPreemptive("tiresias"),
      "2D-LAS (Tiresias): least attained GPU-time first in discretized queues, evicting higher queues; best fit"));
  BERTH_RETURN_IF_ERROR(r.Register(
      "tiresias-pollux", TiresiasPollux(),
      "tiresias as Pollux's simulator sets it: two queues split at 16 GPU-hours, no promotion, no minimum runtime"));
  BERTH_RETURN_IF_ERROR(r.Register(
      "fairshare", FairShare(false),
      "weighted fair share with decayed usage over the queue tree, quotas with borrowing, reclaim by preemption"));
  BERTH_RETURN_IF_ERROR(r.Register("fairshare-backfill", FairShare(true),
                                   "fairshare plus a reservation for the blocked head job and backfill behind it"));
  BERTH_RETURN_IF_ERROR(r.Register(
      "fairshare-entitled", FairShareEntitled(),
      "fairshare that keeps each queue to the GPU types of its reachable entitlement (queue file entitlement: reachable)"));
  BERTH_RETURN_IF_ERROR(RegisterPreemptionPolicies(r));
  BERTH_RETURN_IF_ERROR(RegisterBackfillPolicies(r));
  BERTH_RETURN_IF_ERROR(RegisterServicePolicies(r));
  return Status::Ok();
}

}  // namespace berth::plugins
