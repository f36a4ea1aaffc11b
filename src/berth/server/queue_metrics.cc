// Per-queue gauges of /metrics, from the published queue views.
#include "berth/server/queue_metrics.h"

#include <cmath>
#include <cstdio>
#include <vector>

#include "berth/server/metrics.h"

namespace berth::server {
namespace {

// A GPU figure as Prometheus reads it: "8", "2.5", "0.125".
std::string Number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

struct Family {
  const char* name;
  const char* help;
  const char* key;  // the dimension's key in the queue view
};

}  // namespace

void RenderQueueMetrics(const QueueViews& queues, const std::map<std::string, int64_t>& pending,
                        const std::map<std::string, int64_t>& running, std::string& out) {
  static constexpr Family kFamilies[] = {
      {"berth_queue_guaranteed_gpus", "GPUs guaranteed to the queue (nominal quota), per GPU type (* = all types).",
       "guarantee"},
      {"berth_queue_limit_gpus", "Most GPUs the queue may use, borrowing included, per GPU type (* = all types).",
       "limit"},
      {"berth_queue_used_gpus", "GPUs held by the queue's running jobs, per GPU type (* = all types).", "usage"},
      {"berth_queue_borrowed_gpus", "GPUs the queue uses beyond its guarantee (borrowed), per GPU type (* = all types).",
       "borrowed"},
  };
  for (const Family& f : kFamilies) {
    out += std::string("# HELP ") + f.name + " " + f.help + "\n# TYPE " + f.name + " gauge\n";
    for (size_t i = 0; i < queues.items.size() && i < queues.names.size(); ++i) {
      const nlohmann::json& item = queues.items[i];
      const auto dims = item.find("dimensions");
      if (dims == item.end() || !dims->is_object()) continue;
      for (const auto& [type, d] : dims->items()) {
        const auto v = d.find(f.key);
        if (v == d.end() || !v->is_number()) continue;  // no quota, or unlimited
        out += std::string(f.name) + "{queue=\"" + PromLabel(queues.names[i]) + "\",gpu_type=\"" + PromLabel(type) +
               "\"} " + Number(v->get<double>()) + "\n";
      }
    }
  }
  auto jobs = [&](const char* name, const char* help, const std::map<std::string, int64_t>& counts) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " gauge\n";
    std::map<std::string, int64_t> all = counts;
    for (const std::string& q : queues.names) all.emplace(q, 0);
    for (const auto& [q, n] : all)
      out += std::string(name) + "{queue=\"" + PromLabel(q) + "\"} " + std::to_string(n) + "\n";
  };
  jobs("berth_queue_pending_jobs", "Jobs waiting, per queue (Kueue's pending workloads).", pending);
  jobs("berth_queue_running_jobs", "Jobs running, per queue (Kueue's admitted active workloads).", running);
}

}  // namespace berth::server
