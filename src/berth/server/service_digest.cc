// GET /v1/digest: the member's capacity digest for a federation dispatcher
// (federation/digest.h, its JSON in federation/digest_json.h), taken on the
// scheduling thread: free capacity per GPU type and block size, the GPUs the
// running jobs are expected to free and when (their duration or runtime
// limit over --speedup from their start; a job declaring neither is
// expected to hold its GPUs for an hour more), and the queue. Each digest
// taken gets the next version.
#include "berth/federation/digest.h"
#include "berth/federation/digest_json.h"
#include "berth/server/service.h"

namespace berth::server {

namespace {
constexpr TimeUs kUnknownRemaining = 3600 * kUsPerSecond;
}  // namespace

ApiResult Service::Digest() {
  auto r = Call<ApiResult>([this] {
    const TimeUs now = clock_.Now();
    std::vector<federation::RunningEnd> ends;
    std::vector<federation::PendingWork> pending;
    auto length = [this](const JobEntry& e) {
      const TimeUs t = e.spec.duration >= 0 ? e.spec.duration : e.spec.runtime_limit;
      return t < 0 ? TimeUs{-1} : static_cast<TimeUs>(static_cast<double>(t) / options_.speedup);
    };
    for (int64_t id : running_) {
      const JobEntry& e = jobs_.at(id);
      const TimeUs len = length(e);
      const TimeUs end = len < 0 ? now + kUnknownRemaining : std::max(now, e.started_at + len);
      ends.push_back({end, e.spec.total_gpus()});
    }
    for (int64_t id : pending_) {
      const JobEntry& e = jobs_.at(id);
      const TimeUs len = length(e);
      const double secs = UsToSeconds(len < 0 ? kUnknownRemaining : len);
      pending.push_back({e.spec.total_gpus(), secs * static_cast<double>(e.spec.total_gpus())});
    }
    const federation::Digest d =
        federation::BuildDigest(-1, ++digest_version_, now, sched_->state(), std::move(ends), pending);
    return ApiResult{200, federation::DigestToJson(d)};
  });
  if (!r) return ApiResult::Error(503, "the scheduling loop did not answer in time");
  return *r;
}

}  // namespace berth::server
