// The federation simulator: one unchanged scheduler::Scheduler per member
// cluster, all on one simulated clock, under a global dispatch policy.
//
// Messages take half the round-trip time between the dispatcher's region and
// the member's: a job reaches the member that long after its dispatch (and
// not before its data is staged there), a reply or a digest reaches the
// dispatcher that long after it was sent. A member publishes a digest when
// its state changed, at most once per digest interval, so what the
// dispatcher sees is stale by the interval and the delay.
//
// A job dispatched with a promise (a lease) must start as soon as it reaches
// the member; if it cannot, the member refuses it and the dispatcher sends it
// again (a re-dispatch). A member that could never run a job refuses it too.
// Data: a staged dataset without a replica in the member's region moves over
// the link from the replica that delivers first, links carrying one transfer
// at a time (FIFO); a streamed one is read during the run, which lasts at
// least the transfer time. MultiKueue cannot stage ahead (its copies wait in
// every member), so its jobs move their data after they start, holding their
// GPUs. Run times: the trace duration scaled by the speed of the card type
// the member placed the job on, relative to the federation's
// trace_reference_type (hetero throughput model).
//
// Figures: JCT = finish - submit; queueing delay = start - submit (dispatch,
// staging and member queue); cross-region bytes and egress over every move;
// GPU cost = GPUs x hours held x price (a withdrawn MultiKueue copy that had
// started included); a double promise is a dispatch onto GPUs the digest
// showed free but that an earlier dispatch not yet reflected in any digest
// had already been sent to (and for MultiKueue, a second member starting a
// copy of a job another member already runs); a deadline miss is a finish
// after submit + deadline.
//
// Member failures (fed.failures): a failed member stops at once (its running
// jobs lose the work since their last checkpoint and queue there again) and
// is silent; after fed.member_timeout the dispatcher marks it down and sends
// its queued jobs (and those sent to it meanwhile) elsewhere, after
// fed.requeue_running_after more its running ones, resumed from their last
// checkpoint (checkpoint_interval of job time), which moves from the failed
// member's region as data. When it comes back it rejoins after one round
// trip: the copies that moved away are cancelled there before it schedules
// again, so no job runs twice; what stayed its runs there.
//
// Partitions (kind: partition): the member runs on, unseen. The dispatcher
// hears no digest or heartbeat: a digest interval (plus the message delay)
// after the cut it suspects the member and neither promises its capacity nor
// sends it jobs until it hears from it again. The member's lease from its
// last contact lapses 3/4 of member_timeout after the cut: from then on it
// starts nothing (fenced), and requeue_running_after later it stops the
// jobs still running there at their last checkpoint. The dispatcher marks it
// down at member_timeout and moves its queued jobs, and at requeue_running_after
// more its running ones, which the member has stopped by then; a job that
// finished there meanwhile is found finished in its region's checkpoint store
// and is not run again. Messages sent during the cut are lost; the member
// rejoins one round trip after the partition heals, as after an outage.
//
// Gangs across regions (span.h): a job with span_regions whose gang no
// member may hold whole (or, under `global`, when a split finishes sooner
// by the estimate) is split into parts on members of different regions,
// each sent under a lease. A member admits its part (it holds the GPUs and
// tells the dispatcher); once every part is admitted the dispatcher sends
// all of them one common start, timed to reach the farthest member, so
// every part starts at the same instant. A part refused, or not admitted
// within its lease, releases every part and the job is sent again (a
// re-dispatch). The run is stretched by the link between the parts, and
// its traffic counts in cross_region_bytes and egress (span.h). A failure or
// partition of a part's member stops the whole gang at once (every part
// ends; progress kept to the last checkpoint, written in the largest part's
// region); the dispatcher sends the job again when a surviving part's member
// tells it, or when it marks the members down. A split that fits nowhere now
// waits in the dispatcher until a digest shows room.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "berth/federation/dispatch.h"
#include "berth/federation/federation.h"
#include "berth/framework/registry.h"
#include "berth/sim/result.h"
#include "berth/sim/trace.h"

namespace berth::federation {

struct FedSimOptions {
  uint64_t seed = 42;
  // A batch of at least this many jobs arriving at one instant is dispatched
  // as an assignment problem (global policies); fewer go one by one.
  int32_t batch_min = 8;
  // Member failures: the time a job resumed after a failure spends restoring
  // before it works again (added to its run).
  TimeUs restore_cost = 0;
};

struct MemberFigures {
  std::string name;
  std::string region;
  int64_t gpus = 0;
  int64_t jobs = 0;          // jobs that finished there
  double utilization = 0;    // GPU-time held / (GPUs x makespan)
  double gpu_cost = 0;
};

struct FedResult {
  std::string policy;
  int64_t jobs_total = 0, jobs_finished = 0, jobs_lost = 0, jobs_unfinished = 0;
  sim::Distribution jct_s, queue_delay_s;
  double makespan_s = 0;
  double cross_region_bytes = 0;
  double egress_cost = 0, gpu_cost = 0;
  int64_t deadline_jobs = 0, deadline_misses = 0;
  int64_t double_promises = 0, redispatches = 0, promises = 0, digests = 0;
  int64_t refused_promises = 0, refused_never_fit = 0;  // refusals by cause (each a re-dispatch)
  int64_t batches = 0;
  // Member failures (Federation::failures): outages simulated, members the
  // dispatcher marked down, jobs moved off them (queued at once, running from
  // their last checkpoint), the checkpoints' bytes (part of
  // cross_region_bytes), work redone (GPU-seconds of job time since the last
  // checkpoint), copies cancelled when a member rejoined, and runs that would
  // have duplicated a job (a second copy running or finishing; must be 0).
  int64_t member_failures = 0, members_marked_down = 0;
  int64_t requeued_queued = 0, requeued_running = 0;
  double checkpoint_bytes = 0, lost_work_gpu_s = 0;
  int64_t stale_copies_cancelled = 0, ran_twice = 0;
  // Partitions and silence: partitions simulated (per member), running jobs
  // a fenced member stopped, jobs that finished at a member cut off from the
  // dispatcher, promises made to a member already silent (lost on the way and
  // moved later), leases that lapsed without a digest reflecting them.
  int64_t partitions = 0, fenced_requeues = 0, finished_unseen = 0;
  int64_t promises_to_silent = 0, leases_expired = 0;
  // Gangs across regions: jobs that ran split (once each), parts started.
  int64_t spanning_jobs = 0, spanning_parts = 0;
  // Every part started: the job (trace index), its member and the instant
  // (not in the JSON; for tests and debugging).
  struct SpanStart {
    int64_t job = 0;
    int32_t member = -1;
    TimeUs at = 0;
  };
  std::vector<SpanStart> span_starts;
  std::vector<MemberFigures> members;
  double wall_seconds = 0;
};

// `speed`: per member, per GPU type, the speed relative to the reference type.
StatusOr<FedResult> RunFederation(const Federation& fed, const SpeedTable& speed, const sim::Trace& trace,
                                  const framework::Profile& member_profile, const framework::PluginRegistry& registry,
                                  Policy policy, const FedSimOptions& options);

}  // namespace berth::federation
