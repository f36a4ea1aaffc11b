// The allowed lifecycle edges.
#include "berth/job/lifecycle.h"

#include <string>

namespace berth::job {

const char* JobStateName(JobState s) {
  switch (s) {
    case JobState::kPending: return "pending";
    case JobState::kAdmitted: return "admitted";
    case JobState::kRunning: return "running";
    case JobState::kSucceeded: return "succeeded";
    case JobState::kFailed: return "failed";
    case JobState::kPreempted: return "preempted";
    case JobState::kCancelled: return "cancelled";
  }
  return "?";
}

bool IsTerminal(JobState s) {
  return s == JobState::kSucceeded || s == JobState::kFailed || s == JobState::kCancelled;
}

Status CheckTransition(JobState from, JobState to) {
  using S = JobState;
  bool ok = false;
  switch (from) {
    case S::kPending: ok = to == S::kAdmitted || to == S::kCancelled || to == S::kFailed; break;
    case S::kAdmitted: ok = to == S::kRunning || to == S::kPending || to == S::kCancelled; break;
    case S::kRunning:
      ok = to == S::kSucceeded || to == S::kFailed || to == S::kPreempted || to == S::kCancelled;
      break;
    case S::kPreempted: ok = to == S::kPending || to == S::kCancelled; break;
    default: ok = false;
  }
  if (ok) return Status::Ok();
  return FailedPrecondition(std::string("job cannot go from ") + JobStateName(from) + " to " + JobStateName(to));
}

}  // namespace berth::job
