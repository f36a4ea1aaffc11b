// The per-queue gauges of /metrics, named after Kueue's ClusterQueue metrics
// (kueue_cluster_queue_nominal_quota, _resource_usage, _borrowing_limit,
// kueue_pending_workloads):
//
//   berth_queue_guaranteed_gpus{queue="research",gpu_type="H100"} 16
//   berth_queue_limit_gpus{queue="research",gpu_type="*"} 32
//   berth_queue_used_gpus{queue="research",gpu_type="H100"} 8
//   berth_queue_borrowed_gpus{queue="research",gpu_type="H100"} 0
//   berth_queue_pending_jobs{queue="research"} 3
//   berth_queue_running_jobs{queue="research"} 1
//
// One sample per queue of the tree and GPU type it has a quota or usage for;
// gpu_type="*" is the queue's figure over every type (a quota written without
// a type), so sum over types with gpu_type!="*". Values are in the queue
// tree's unit: GPUs, or reference-GPU equivalents with `unit: normalized`.
// Guarantee and limit are left out where the queue sets none (or no limit).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "berth/server/read_view.h"

namespace berth::server {

// Appends the families above. `pending` and `running` count jobs by queue
// name; every queue of the tree gets a job sample (0 when it has none).
void RenderQueueMetrics(const QueueViews& queues, const std::map<std::string, int64_t>& pending,
                        const std::map<std::string, int64_t>& running, std::string& out);

}  // namespace berth::server
