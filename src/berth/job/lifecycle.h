// The job lifecycle as an explicit state machine:
//
//   pending -> admitted -> running -> succeeded
//      |  ^        |          |  \-> failed
//      |  |        v          v
//      |  +---- (unadmit)  preempted -> pending (requeued, resumes from checkpoint)
//      +-> cancelled (from pending, admitted or running)
//
// Every change of a job's state goes through CheckTransition.
#pragma once

#include "berth/common/status.h"

namespace berth::job {

enum class JobState : uint8_t { kPending, kAdmitted, kRunning, kSucceeded, kFailed, kPreempted, kCancelled };

const char* JobStateName(JobState s);
bool IsTerminal(JobState s);
// OK if `from -> to` is an allowed edge, else FailedPrecondition naming both.
Status CheckTransition(JobState from, JobState to);

}  // namespace berth::job
