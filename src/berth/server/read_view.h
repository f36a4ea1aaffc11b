// What the API's reads see: an immutable snapshot of the service's tables
// that the scheduling thread publishes after each turn of its loop, so reads
// never run on (or wait for) the scheduling thread.
//
// Publishing is cheap and proportional to what changed: jobs are kept in
// chunks of kJobsPerChunk ids, each chunk an immutable array of shared job
// views; a turn that changed k jobs copies the chunks holding them (and the
// short list of chunk pointers), never the whole table. Readers take the
// current snapshot with one pointer copy under a mutex held for nothing else,
// so a flood of readers cannot hold up the writer.
//
//   ReadViews views;
//   views.Publish(std::make_shared<const ReadSnapshot>(...));   // loop
//   std::shared_ptr<const ReadSnapshot> s = views.Current();    // any thread
//
// ReadGate bounds how many large reads (job lists, nodes, queues, metrics)
// build their answers at once: the others wait (asleep) for a slot, so reader
// threads cannot take every core from the scheduling thread.
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/common/quantity.h"
#include "berth/framework/cycle.h"
#include "berth/framework/verdict.h"
#include "berth/job/job.h"
#include "berth/job/lifecycle.h"

namespace berth::server {

// One job as the reads show it. Immutable once published.
struct JobView {
  int64_t id = -1;
  std::string key;
  std::shared_ptr<const job::JobSpec> spec;  // shared with the next views of the job
  job::JobState state = job::JobState::kPending;
  bool durable = false;
  bool queued = false;      // in the service's pending or running set (counted per queue)
  TimeUs accepted_at = 0, started_at = -1, finished_at = -1;
  int32_t generation = 0, requeues = 0;
  // Agents: in-place repairs so far, and for a repaired run the attempt of
  // each restarted task and the run's rank order (empty otherwise).
  int32_t repairs = 0;
  std::map<int32_t, int32_t> task_attempts;
  std::vector<int32_t> rank_order;
  std::shared_ptr<const std::vector<framework::TaskPlacement>> placements;  // never null
  std::string end_reason;
  std::string unfit;  // pending: the cluster changed and the job no longer fits
  std::string queue;        // the leaf queue's name (Service::QueueOf)
  int32_t queue_index = -1; // in the queue tree; -1: none yet
  std::string why;          // Service::WhyLine
  // The scheduler's record: the last verdict (tried = false: not tried yet).
  bool has_record = false, tried = false;
  framework::Verdict verdict;
  int32_t attempts = 0, preemptions = 0;
  TimeUs startup_delay = 0;
  framework::RunClass run_class = framework::RunClass::kGuaranteed;  // of the current run
  nlohmann::json extender;  // the extender's pod group, or null
  // The job's item of GET /v1/jobs as text, made by the first read that
  // needs it (a view never changes: a changed job is a new view), for the
  // cluster model it was made with. Not copied with the view.
  struct ListText {
    ListText() = default;
    ListText(const ListText&) {}
    ListText& operator=(const ListText&) { return *this; }
    std::mutex mu;
    const void* cluster = nullptr;
    std::string text;
  };
  mutable ListText list_text;
};

inline constexpr int64_t kJobsPerChunk = 1024;

struct JobChunk {
  std::array<std::shared_ptr<const JobView>, kJobsPerChunk> jobs;
  int32_t pending = 0;  // pending jobs in the chunk (for "pending_ahead")
};

// One node as the reads show it (the heartbeat age is read live).
struct NodeView {
  int64_t gpus_used_milli = 0;
  int64_t tasks = 0;
  int64_t failures = 0;
  bool up = true;
  bool quarantined = false;
  bool spare = false;  // a hot spare kept for in-place repairs
  bool draining = false;
  TimeUs drain_deadline = -1;  // wall clock; -1: none
  uint64_t failed_gpus = 0;    // node-local GPU positions reported failed
};

// The ledger's figures for /v1/queues: one item per queue of the tree (every
// key but the job counts), with the tree's parents to count jobs up it.
struct QueueViews {
  std::vector<std::string> names;
  std::vector<int32_t> parents;
  std::vector<nlohmann::json> items;
  std::string unit = "gpus";  // the tree's unit: "gpus" or "normalized"
  std::string reference;      // with "normalized": the reference type ("H100")
  // Queues with a budget, for /metrics: name, currency word, amount and
  // spent this period (units), and whether it is spent.
  struct Budget {
    std::string queue, unit;
    double amount = 0, spent = 0;
    bool exhausted = false;
  };
  std::vector<Budget> budgets;
};

// Queued jobs (JobView::queued) counted per (queue name, queue index), kept up
// to date as job views are published, so /metrics and /v1/queues read a few
// counts per queue instead of visiting every job.
struct QueueTally {
  int64_t pending = 0, running = 0, pending_gpus = 0, running_gpus = 0, running_best_effort = 0;
  bool operator==(const QueueTally&) const = default;
};
using QueueTallies = std::map<std::pair<std::string, int32_t>, QueueTally>;

// Adds (sign +1) or removes (-1) one view's part of the tallies; entries that
// fall to zero are erased.
inline void TallyJob(QueueTallies& tallies, const JobView& v, int sign) {
  if (!v.queued || !v.spec) return;
  auto it = tallies.try_emplace({v.queue, v.queue_index}).first;
  QueueTally& t = it->second;
  const bool running = v.state == job::JobState::kRunning;
  (running ? t.running : t.pending) += sign;
  (running ? t.running_gpus : t.pending_gpus) += sign * v.spec->total_gpus();
  if (running && v.run_class != framework::RunClass::kGuaranteed) t.running_best_effort += sign;
  if (t == QueueTally{}) tallies.erase(it);
}

struct ReadSnapshot {
  // The cluster model the views were built on (placements' node ids index it).
  std::shared_ptr<const cluster::Cluster> cluster;
  std::vector<std::shared_ptr<const JobChunk>> chunks;  // chunk c: ids [c * kJobsPerChunk, ...)
  std::shared_ptr<const std::vector<NodeView>> nodes;
  std::shared_ptr<const QueueViews> queues;
  std::shared_ptr<const QueueTallies> tallies;  // of the queued jobs in `chunks`; null before the first publish
  int64_t turn = 0;  // the loop turn that published it

  const JobView* Job(int64_t id) const {
    if (id < 0) return nullptr;
    const size_t c = static_cast<size_t>(id / kJobsPerChunk);
    if (c >= chunks.size() || !chunks[c]) return nullptr;
    return chunks[c]->jobs[id % kJobsPerChunk].get();
  }
};

class ReadViews {
 public:
  ReadViews() : current_(std::make_shared<const ReadSnapshot>()) {}
  void Publish(std::shared_ptr<const ReadSnapshot> s) {
    std::lock_guard<std::mutex> lock(mu_);
    current_.swap(s);
  }  // the old snapshot is freed outside the lock, by its last reader
  std::shared_ptr<const ReadSnapshot> Current() const {
    std::lock_guard<std::mutex> lock(mu_);
    return current_;
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const ReadSnapshot> current_;
};

class ReadGate {
 public:
  explicit ReadGate(int slots) : free_(slots < 1 ? 1 : slots) {}
  class Slot {
   public:
    explicit Slot(ReadGate& g) : g_(g) { g_.Acquire(); }
    ~Slot() { g_.Release(); }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

   private:
    ReadGate& g_;
  };

 private:
  void Acquire() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return free_ > 0; });
    --free_;
  }
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++free_;
    }
    cv_.notify_one();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  int free_;
};

}  // namespace berth::server
