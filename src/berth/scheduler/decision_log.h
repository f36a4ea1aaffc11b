// The decision log: every placement, failure, completion and preemption, in
// order, folded into a stable hash (same input and seed => same hash) and
// optionally written out as text lines.
//
//   <time_us> place <job_id> <task> <node> <gpu_mask_hex> <milli_per_gpu>
//   <time_us> fail <job_id> <verdict_code>
//   <time_us> finish <job_id> <state>
#pragma once

#include <cstdint>
#include <ostream>
#include <span>
#include <string>

#include "berth/cluster/cluster.h"
#include "berth/common/hash.h"
#include "berth/framework/plugin.h"

namespace berth::scheduler {

class DecisionLog {
 public:
  // Lines are written to `out` when it is set (borrowed; may be null).
  void set_output(std::ostream* out) { out_ = out; }

  void Placed(TimeUs t, const cluster::Cluster& c, JobId job, std::span<const framework::TaskPlacement> tasks);
  void Failed(TimeUs t, JobId job, const framework::Verdict& v);
  void Finished(TimeUs t, JobId job, std::string_view state);
  void Preempted(TimeUs t, JobId preemptor, std::span<const JobId> victims, std::string_view reason);
  // An elastic job changed size (from -> to workers); `why` says who asked.
  void Resized(TimeUs t, JobId job, int32_t from, int32_t to, std::string_view why);

  uint64_t hash() const { return hash_.value(); }
  std::string HashHex() const { return hash_.Hex(); }
  int64_t entries() const { return entries_; }

 private:
  void Line(const std::string& line);
  StableHash hash_;
  int64_t entries_ = 0;
  std::ostream* out_ = nullptr;
};

}  // namespace berth::scheduler
