// The queue tree's figures in Kubernetes mode: GET /v1/queues (the ledger's
// figures per queue as `berth serve` shows them, with the gangs pending and
// running in each queue's subtree) and the per-queue gauges of /metrics
// (server/queue_metrics.h). Computed on the loop thread.
#include <map>

#include "berth/kubesched/kube_scheduler.h"
#include "berth/server/queue_metrics.h"
#include "berth/server/queue_views.h"

namespace berth::kube {

using nlohmann::json;

KubeScheduler::QueueFigures KubeScheduler::Queues() {
  QueueFigures out;
  Sync([&] {
    if (!sched_) return;
    out.views = server::BuildQueueViews(sched_->ledger(), *cluster_, clock_.Now());
    const int32_t size = static_cast<int32_t>(out.views.names.size());
    std::vector<int64_t> pending(size, 0), running(size, 0), pending_gpus(size, 0), running_gpus(size, 0);
    for (const auto& [id, e] : jobs_) {
      const scheduler::JobRecord* rec = sched_->Find(JobId(id));
      if (!rec || rec->queue < 0 || rec->queue >= size) continue;
      const bool is_running = rec->state == job::JobState::kRunning;
      if (!is_running && rec->state != job::JobState::kPending) continue;
      const int64_t gpus = e.spec.total_gpus();
      out.leaf_pending[out.views.names[rec->queue]] += is_running ? 0 : 1;
      out.leaf_running[out.views.names[rec->queue]] += is_running ? 1 : 0;
      for (int32_t q = rec->queue; q >= 0; q = out.views.parents[q]) {
        (is_running ? running : pending)[q] += 1;
        (is_running ? running_gpus : pending_gpus)[q] += gpus;
      }
    }
    for (int32_t q = 0; q < size; ++q) {
      json& item = out.views.items[q];
      item["pending"] = pending[q];
      item["running"] = running[q];
      item["pending_gpus"] = pending_gpus[q];
      item["running_gpus"] = running_gpus[q];
    }
  });
  return out;
}

json KubeScheduler::QueuesJson() {
  QueueFigures f = Queues();
  std::map<std::string, json> by_name;
  for (size_t q = 0; q < f.views.names.size(); ++q) by_name[f.views.names[q]] = std::move(f.views.items[q]);
  return server::QueuesBody(std::move(by_name), f.views);
}

std::string KubeScheduler::QueueMetricsText() {
  const QueueFigures f = Queues();
  std::string out;
  server::RenderQueueMetrics(f.views, f.leaf_pending, f.leaf_running, out);
  return out;
}

}  // namespace berth::kube
