// A member's capacity digest: the compact summary it publishes to the global
// dispatcher, and the dispatcher's ledger of what it promised since.
//
// A digest holds, per GPU type, the whole GPUs free and how many tasks of 1,
// 2, 4 and 8 GPUs (one node each) the free GPUs could hold; the GPUs that
// running jobs are expected to free, as a release profile of (time, GPUs);
// and the queue: jobs, GPUs and normalized work (GPU-seconds on the
// reference type) waiting. `version` grows by one per digest of a member.
//
//   Digest d = BuildDigest(member, version, now, sched.state(), ends, pending);
//
// The dispatcher sees a digest one network delay late. Its InFlight ledger
// holds every job it sent to a member that no digest it has seen reflects
// yet (a lease when the job was promised free capacity): the estimator takes
// their GPUs off the digest's free capacity, so two dispatches never promise
// the same GPUs. An entry leaves when a digest taken after the job reached the
// member arrives, when the member refuses the job, or when the lease expires.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "berth/common/quantity.h"
#include "berth/state/cluster_state.h"

namespace berth::federation {

inline constexpr std::array<int32_t, 4> kBlockSizes = {1, 2, 4, 8};
// Index in kBlockSizes of the smallest block that holds a task of `gpus` GPUs
// (tasks above 8 GPUs use the 8-GPU block).
int BlockIndex(int32_t gpus);

struct TypeDigest {
  std::string name;
  int64_t total = 0;  // whole GPUs of this type on up nodes
  int64_t free = 0;   // of them fully free
  std::array<int64_t, 4> fit{};  // tasks of kBlockSizes[i] GPUs the free GPUs could hold
};

struct Release {
  TimeUs at = 0;     // expected end (absolute)
  int64_t gpus = 0;  // GPUs freed then
};

struct Digest {
  int32_t member = -1;
  int64_t version = 0;  // 0: none received yet
  TimeUs taken_at = 0;
  std::vector<TypeDigest> types;
  std::vector<Release> releases;  // ascending, at most kMaxReleases entries (merged)
  int64_t total_gpus = 0;
  int64_t free_gpus = 0;
  int64_t queue_jobs = 0;
  int64_t queue_gpus = 0;
  double queue_work_gpu_s = 0;
};

inline constexpr size_t kMaxReleases = 16;

struct RunningEnd {
  TimeUs at = 0;
  int64_t gpus = 0;
};
struct PendingWork {
  int64_t gpus = 0;
  double work_gpu_s = 0;
};

// Summarizes a member's state: free capacity from the cluster state, the
// release profile from the running jobs' expected ends (merged into at most
// kMaxReleases steps, each at the latest end it covers, so no GPU is counted
// free before it is expected), the queue from the pending jobs.
Digest BuildDigest(int32_t member, int64_t version, TimeUs now, const state::ClusterState& state,
                   std::vector<RunningEnd> ends, std::span<const PendingWork> pending);

// One job the dispatcher sent to a member that no received digest shows yet.
struct InFlight {
  int64_t attempt = 0;
  int64_t gpus = 0;
  int32_t task_gpus = 0;  // GPUs per task (the block it needs)
  int32_t tasks = 0;
  int32_t type = -1;      // index in Digest::types it was promised on (-1: queued, no promise)
  TimeUs arrives = 0;     // when it reaches the member
  TimeUs expires = 0;     // lease end (only for promises)
};

}  // namespace berth::federation
