// The agents' loop: heartbeats every interval, completions when due.
#include "berth/server/virtual_nodes.h"

#include <algorithm>
#include <chrono>

namespace berth::server {
namespace {
TimeUs SteadyUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

VirtualNodes::VirtualNodes(int32_t num_nodes, TimeUs heartbeat_interval, Sink& sink)
    : num_nodes_(num_nodes), heartbeat_interval_(heartbeat_interval), sink_(sink), crashed_(num_nodes, 0) {}

VirtualNodes::~VirtualNodes() { Stop(); }

void VirtualNodes::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
}

void VirtualNodes::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool VirtualNodes::EraseLocked(int64_t job) {
  auto it = runs_.find(job);
  if (it == runs_.end()) return false;
  if (it->second.end >= 0) ends_.erase({it->second.end, job});
  runs_.erase(it);
  return true;
}

void VirtualNodes::Launch(int64_t job, int32_t generation, std::vector<int32_t> nodes, TimeUs wall) {
  std::lock_guard<std::mutex> lock(mu_);
  EraseLocked(job);  // a new generation replaces the old run
  Run r;
  r.generation = generation;
  r.nodes = std::move(nodes);
  r.end = wall < 0 ? -1 : SteadyUs() + wall;
  for (int32_t n : r.nodes)
    if (n >= 0 && n < num_nodes_ && crashed_[n]) return;  // lost at once; the service will notice the node
  const TimeUs end = r.end;
  runs_[job] = std::move(r);
  if (end >= 0) {
    ends_.emplace(end, job);
    if (end < wake_at_) cv_.notify_all();  // ends before the thread's next wake
  }
}

void VirtualNodes::Kill(int64_t job) {
  std::lock_guard<std::mutex> lock(mu_);
  EraseLocked(job);
}

bool VirtualNodes::Move(int64_t job, int32_t generation, std::vector<int32_t> nodes, TimeUs delay) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = runs_.find(job);
  if (it == runs_.end() || it->second.generation != generation) return false;
  Run& r = it->second;
  r.nodes = std::move(nodes);
  r.lost = false;
  for (int32_t n : r.nodes)
    if (n >= 0 && n < num_nodes_ && crashed_[n]) r.lost = true;
  if (r.end >= 0 && delay > 0) {
    ends_.erase({r.end, job});
    r.end += delay;
    ends_.emplace(r.end, job);
    if (r.end < wake_at_) cv_.notify_all();
  }
  return true;
}

void VirtualNodes::Crash(int32_t node) {
  std::lock_guard<std::mutex> lock(mu_);
  if (node < 0 || node >= num_nodes_) return;
  crashed_[node] = 1;
  for (auto& [job, run] : runs_)
    if (std::find(run.nodes.begin(), run.nodes.end(), node) != run.nodes.end()) run.lost = true;
}

void VirtualNodes::Restore(int32_t node) {
  std::lock_guard<std::mutex> lock(mu_);
  if (node >= 0 && node < num_nodes_) crashed_[node] = 0;
}

bool VirtualNodes::crashed(int32_t node) const {
  std::lock_guard<std::mutex> lock(mu_);
  return node >= 0 && node < num_nodes_ && crashed_[node];
}

size_t VirtualNodes::running_jobs() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [job, run] : runs_) n += run.lost ? 0 : 1;
  return n;
}

uint64_t VirtualNodes::runs_examined() const {
  std::lock_guard<std::mutex> lock(mu_);
  return examined_;
}

void VirtualNodes::Loop() {
  TimeUs next_beat = 0;
  std::vector<int32_t> beats;
  std::vector<std::pair<int64_t, int32_t>> done;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    const TimeUs now = SteadyUs();
    beats.clear();
    done.clear();
    if (now >= next_beat) {
      for (int32_t n = 0; n < num_nodes_; ++n)
        if (!crashed_[n]) beats.push_back(n);
      next_beat = now + heartbeat_interval_;
    }
    // Only the runs due now, earliest first.
    while (!ends_.empty() && ends_.begin()->first <= now) {
      const int64_t job = ends_.begin()->second;
      ++examined_;
      ends_.erase(ends_.begin());
      auto it = runs_.find(job);
      if (it == runs_.end()) continue;
      if (!it->second.lost) done.emplace_back(job, it->second.generation);
      runs_.erase(it);
    }
    lock.unlock();
    if (!beats.empty()) sink_.Heartbeats(beats);
    for (const auto& [job, gen] : done) sink_.JobDone(job, gen);
    lock.lock();
    if (stop_) break;
    TimeUs wake = next_beat;  // (runs launched meanwhile are in ends_)
    if (!ends_.empty()) wake = std::min(wake, ends_.begin()->first);
    // Ends closer together than 1 ms are reported together.
    const TimeUs wait = std::min<TimeUs>(std::max<TimeUs>(1000, wake - SteadyUs()), heartbeat_interval_);
    wake_at_ = SteadyUs() + wait;
    cv_.wait_for(lock, std::chrono::microseconds(wait));
    wake_at_ = 0;  // awake: a launch need not wake it
  }
}

}  // namespace berth::server
