// Per-queue gauges: one sample per queue and GPU type with a figure, none
// where a queue sets no guarantee or limit, job counts for every queue.
#include "berth/server/queue_metrics.h"

#include <gtest/gtest.h>

namespace berth::server {
namespace {

QueueViews TwoQueues() {
  QueueViews q;
  q.names = {"research", "prod"};
  q.parents = {-1, -1};
  q.items.push_back({{"name", "research"},
                     {"dimensions",
                      {{"*", {{"guarantee", 16.0}, {"limit", nullptr}, {"usage", 24.0}, {"borrowed", 8.0}}},
                       {"H100", {{"guarantee", 16.0}, {"limit", 32.0}, {"usage", 24.0}, {"borrowed", 8.0}}}}}});
  q.items.push_back({{"name", "prod"},
                     {"dimensions", {{"*", {{"guarantee", nullptr}, {"limit", nullptr}, {"usage", 0.5}, {"borrowed", 0.0}}}}}});
  return q;
}

TEST(QueueMetrics, GaugesPerQueueAndGpuType) {
  std::string out;
  RenderQueueMetrics(TwoQueues(), {{"research", 3}}, {{"research", 2}, {"prod", 1}}, out);
  for (const char* want : {
           "# TYPE berth_queue_guaranteed_gpus gauge\n",
           "berth_queue_guaranteed_gpus{queue=\"research\",gpu_type=\"H100\"} 16\n",
           "berth_queue_guaranteed_gpus{queue=\"research\",gpu_type=\"*\"} 16\n",
           "berth_queue_limit_gpus{queue=\"research\",gpu_type=\"H100\"} 32\n",
           "berth_queue_used_gpus{queue=\"research\",gpu_type=\"H100\"} 24\n",
           "berth_queue_used_gpus{queue=\"prod\",gpu_type=\"*\"} 0.5\n",
           "berth_queue_borrowed_gpus{queue=\"research\",gpu_type=\"H100\"} 8\n",
           "berth_queue_borrowed_gpus{queue=\"prod\",gpu_type=\"*\"} 0\n",
           "berth_queue_pending_jobs{queue=\"research\"} 3\n",
           "berth_queue_pending_jobs{queue=\"prod\"} 0\n",  // every queue, zeros included
           "berth_queue_running_jobs{queue=\"prod\"} 1\n",
       })
    EXPECT_NE(out.find(want), std::string::npos) << want << "\n" << out;
  // No guarantee, no limit: no sample (not a 0 that reads as "nothing guaranteed").
  EXPECT_EQ(out.find("berth_queue_guaranteed_gpus{queue=\"prod\""), std::string::npos);
  EXPECT_EQ(out.find("berth_queue_limit_gpus{queue=\"research\",gpu_type=\"*\"}"), std::string::npos);
  EXPECT_EQ(out.find("berth_queue_limit_gpus{queue=\"prod\""), std::string::npos);
}

TEST(QueueMetrics, EscapesNamesAndNeedsNoQueues) {
  QueueViews q;
  q.names = {"a\"b"};
  q.items.push_back({{"dimensions", {{"*", {{"usage", 1.0}}}}}});
  std::string out;
  RenderQueueMetrics(q, {}, {}, out);
  EXPECT_NE(out.find("berth_queue_used_gpus{queue=\"a\\\"b\",gpu_type=\"*\"} 1\n"), std::string::npos) << out;
  std::string empty;
  RenderQueueMetrics(QueueViews{}, {{"default", 2}}, {}, empty);
  EXPECT_NE(empty.find("berth_queue_pending_jobs{queue=\"default\"} 2\n"), std::string::npos);
  EXPECT_NE(empty.find("# TYPE berth_queue_used_gpus gauge\n"), std::string::npos);
}

}  // namespace
}  // namespace berth::server
