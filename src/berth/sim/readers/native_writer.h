// Writing jobs in Berth's native trace format (JSON lines; see
// docs/trace-formats.md), so that any readable trace can be converted:
//
//   BERTH_ASSIGN_OR_RETURN(Trace t, ReadTrace("philly.csv", "", {}));
//   BERTH_RETURN_IF_ERROR(WriteNativeTrace(t.jobs, "philly.jsonl"));
//
// Keys at their JobSpec default are left out; reading the file back with
// ReadNative gives the same jobs (ids renumbered 0..n-1 in file order).
#pragma once

#include <string>
#include <vector>

#include "berth/common/status.h"
#include "berth/job/job.h"

namespace berth::sim {

// One job as one JSON line (no newline). Fails only on a string that is not
// valid UTF-8.
StatusOr<std::string> NativeJobLine(const job::JobSpec& job);

// Writes `jobs` to `path`, one line each.
Status WriteNativeTrace(const std::vector<job::JobSpec>& jobs, const std::string& path);

}  // namespace berth::sim
