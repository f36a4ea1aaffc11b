// Prometheus metrics of the service: counters and histograms updated from any
// thread (lock-free counters; a histogram takes a short lock), rendered in the
// text exposition format. Gauges that describe the scheduler's state (queue
// lengths, GPUs allocated) are computed on the scheduling thread at scrape
// time and passed to Render.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace berth::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double value);
  // Appends the _bucket/_sum/_count lines of `name`.
  void Render(const std::string& name, const std::string& help, std::string& out) const;
  // The smallest bucket bound at or above quantile q (0..1); for tests and logs.
  double Quantile(double q) const;
  uint64_t count() const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // per bound, plus +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

// A counter with labels, e.g. HTTP requests by method, handler and code; the
// label values must come from small sets (route patterns, not paths).
class LabeledCounter {
 public:
  explicit LabeledCounter(std::vector<std::string> label_names) : names_(std::move(label_names)) {}
  void Add(const std::vector<std::string>& values, uint64_t n = 1);
  uint64_t Get(const std::vector<std::string>& values) const;
  void Render(const std::string& name, const std::string& help, std::string& out) const;

 private:
  std::vector<std::string> names_;
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, uint64_t> counts_;
};

struct Metrics {
  Metrics();
  std::atomic<uint64_t> jobs_submitted{0};     // accepted (durable), not counting duplicates
  std::atomic<uint64_t> jobs_duplicate{0};     // retried submissions answered with the first id
  std::atomic<uint64_t> jobs_rejected{0};      // 4xx on submission
  std::atomic<uint64_t> decisions{0};          // jobs placed
  std::atomic<uint64_t> jobs_finished{0};       // succeeded
  std::atomic<uint64_t> jobs_failed{0};
  std::atomic<uint64_t> jobs_cancelled{0};
  std::atomic<uint64_t> jobs_requeued{0};
  std::atomic<uint64_t> preemptions{0};        // jobs evicted for others by the scheduler
  std::atomic<uint64_t> scheduling_passes{0};
  std::atomic<uint64_t> pass_splits{0};        // passes stopped by their time budget (continued next turn)
  std::atomic<uint64_t> heartbeats_late{0};    // heartbeats that came longer than the timeout after the last
  std::atomic<uint64_t> heartbeat_graces{0};   // checker runs that granted every node a fresh timeout
  std::atomic<uint64_t> node_failures{0};
  std::atomic<uint64_t> gpu_failures{0};  // GPUs node agents reported failed
  std::atomic<uint64_t> gang_repairs{0};      // gangs repaired in place (agents)
  std::atomic<uint64_t> tasks_repaired{0};    // tasks restarted as a new attempt by those repairs
  std::atomic<uint64_t> repair_fallbacks{0};  // repairs wanted that found no place: requeued
  std::atomic<uint64_t> spares_used{0};       // hot spares taken by repairs
  std::atomic<uint64_t> failures_learned{0};  // node and GPU failures fed to failure-aware plugins
  std::atomic<int64_t> failure_history{0};     // failures the history holds (durable: kept across restarts)
  std::atomic<uint64_t> store_commits{0};
  std::atomic<uint64_t> store_records{0};
  std::atomic<uint64_t> store_errors{0};
  std::atomic<uint64_t> http_requests{0};
  std::atomic<uint64_t> http_errors{0};        // 4xx and 5xx
  Histogram decision_latency;  // seconds: wall time of one scheduling pass that placed jobs
  Histogram pass_latency;      // seconds: wall time of every scheduling pass
  Histogram pass_cpu;          // seconds: CPU time the scheduling thread spent in every pass
  // Passes during which the scheduling thread was taken off its core:
  // preempted (another thread ran on it), or asleep waiting (a lock, a page).
  std::atomic<uint64_t> passes_preempted{0};
  std::atomic<uint64_t> passes_blocked{0};
  std::atomic<uint64_t> passes_faulted{0};  // that took a page fault
  std::atomic<int> scheduler_nice{0};        // the scheduling thread's nice value
  std::atomic<int> scheduler_rt_priority{0};  // its SCHED_FIFO priority (0: not real-time)
  // Turns of the scheduling loop (the work handed in, checks, publishing,
  // the pass): wall time of each, the longest, and those long enough to log.
  Histogram loop_turn;
  std::atomic<int64_t> loop_turn_max_us{0};
  std::atomic<uint64_t> loop_turns_slow{0};
  Histogram commit_latency;    // seconds: store batch arrival to durable
  Histogram commit_batch;      // records per store commit
  Histogram submit_latency;    // seconds: POST /v1/jobs received to answered
  Histogram admission_wait;    // seconds: a job's submission to its (first) start
  LabeledCounter http_by_route{{"method", "handler", "code"}};
  // berth_build_info's labels (set once at start).
  std::string build_version = "unknown", build_commit = "unknown", build_type = "unknown";
};

// The handler label of a route pattern: capture groups become "{}"
// ("/v1/jobs/([^/]+)/why" -> "/v1/jobs/{}/why"); "" (no route) -> "none".
std::string HandlerLabel(const std::string& route_pattern);

// The standard process_* metrics of this process (Linux /proc): CPU seconds,
// resident and virtual memory, open and maximum file descriptors, start time.
void RenderProcessMetrics(std::string& out);

// Escapes a label value for the exposition format.
std::string PromLabel(const std::string& value);

}  // namespace berth::server
