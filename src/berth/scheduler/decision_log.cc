// Decision log formatting and hashing.
#include "berth/scheduler/decision_log.h"

#include <cstdio>

namespace berth::scheduler {

void DecisionLog::Line(const std::string& line) {
  hash_.Add(line);
  hash_.Add("\n");
  ++entries_;
  if (out_) *out_ << line << '\n';
}

void DecisionLog::Placed(TimeUs t, const cluster::Cluster& c, JobId job,
                         std::span<const framework::TaskPlacement> tasks) {
  for (const auto& p : tasks) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " %llx %d", static_cast<unsigned long long>(p.alloc.gpu_mask),
                  p.alloc.milli_per_gpu);
    Line(std::to_string(t) + " place " + std::to_string(job.value()) + " " + std::to_string(p.task.index) + " " +
         c.node(p.alloc.node).name + buf);
  }
}

void DecisionLog::Failed(TimeUs t, JobId job, const framework::Verdict& v) {
  Line(std::to_string(t) + " fail " + std::to_string(job.value()) + " " + framework::VerdictCodeName(v.code));
}

void DecisionLog::Finished(TimeUs t, JobId job, std::string_view state) {
  Line(std::to_string(t) + " finish " + std::to_string(job.value()) + " " + std::string(state));
}

void DecisionLog::Resized(TimeUs t, JobId job, int32_t from, int32_t to, std::string_view why) {
  Line(std::to_string(t) + " resize " + std::to_string(job.value()) + " " + std::to_string(from) + " -> " +
       std::to_string(to) + " : " + std::string(why));
}

void DecisionLog::Preempted(TimeUs t, JobId preemptor, std::span<const JobId> victims, std::string_view reason) {
  std::string line = std::to_string(t) + " preempt " + std::to_string(preemptor.value()) + " victims";
  for (JobId v : victims) line += " " + std::to_string(v.value());
  Line(line + " : " + std::string(reason));
}

}  // namespace berth::scheduler
