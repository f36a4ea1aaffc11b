// Queue-sort plugins: fifo (submission time), priority (higher first, then
// submission), sjf (shortest known or declared runtime first); and the
// registration of the others of this folder: srtf (srtf.cc), tiresias
// (tiresias.cc), fairshare (fairshare.cc).
#include <memory>

#include "berth/plugins/builtin.h"
#include "berth/plugins/queue_sort/sort_util.h"

namespace berth::plugins {
namespace {

using framework::QueuedJob;

class Fifo final : public framework::QueueSortPlugin {
 public:
  static constexpr std::string_view kName = "fifo";
  std::string_view Name() const override { return kName; }
  bool Less(const QueuedJob& a, const QueuedJob& b) const override {
    return a.spec->submit_time < b.spec->submit_time;
  }
};

class Priority final : public framework::QueueSortPlugin {
 public:
  static constexpr std::string_view kName = "priority";
  std::string_view Name() const override { return kName; }
  bool Less(const QueuedJob& a, const QueuedJob& b) const override {
    if (a.spec->priority != b.spec->priority) return a.spec->priority > b.spec->priority;
    return a.spec->submit_time < b.spec->submit_time;
  }
};

// Runtime estimate: the true duration if known (an oracle in simulation), else
// the user's limit, else unknown (sorted last).
TimeUs Runtime(const job::JobSpec& j) {
  if (j.duration >= 0) return j.duration;
  if (j.runtime_limit >= 0) return j.runtime_limit;
  return INT64_MAX;
}

class Sjf final : public framework::QueueSortPlugin {
 public:
  static constexpr std::string_view kName = "sjf";
  std::string_view Name() const override { return kName; }
  bool Less(const QueuedJob& a, const QueuedJob& b) const override {
    TimeUs ra = Runtime(*a.spec), rb = Runtime(*b.spec);
    if (ra != rb) return ra < rb;
    return a.spec->submit_time < b.spec->submit_time;
  }
};

template <typename T>
framework::PluginRegistry::Factory Simple() {
  return [](const framework::PluginArgs&) -> StatusOr<std::unique_ptr<framework::Plugin>> {
    return std::unique_ptr<framework::Plugin>(std::make_unique<T>());
  };
}

}  // namespace

Status RegisterQueueSortPlugins(framework::PluginRegistry& r) {
  BERTH_RETURN_IF_ERROR(r.Register(std::string(Fifo::kName), Simple<Fifo>()));
  BERTH_RETURN_IF_ERROR(r.Register(std::string(Priority::kName), Simple<Priority>()));
  BERTH_RETURN_IF_ERROR(r.Register(std::string(Sjf::kName), Simple<Sjf>()));
  BERTH_RETURN_IF_ERROR(queue_sort::RegisterSrtf(r));
  BERTH_RETURN_IF_ERROR(queue_sort::RegisterTiresias(r));
  BERTH_RETURN_IF_ERROR(queue_sort::RegisterFairShare(r));
  return Status::Ok();
}

}  // namespace berth::plugins
