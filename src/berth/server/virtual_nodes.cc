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

void VirtualNodes::Launch(int64_t job, int32_t generation, std::vector<int32_t> nodes, TimeUs wall) {
  std::lock_guard<std::mutex> lock(mu_);
  Run r;
  r.generation = generation;
  r.nodes = std::move(nodes);
  r.end = wall < 0 ? -1 : SteadyUs() + wall;
  for (int32_t n : r.nodes)
    if (n >= 0 && n < num_nodes_ && crashed_[n]) return;  // lost at once; the service will notice the node
  runs_[job] = std::move(r);
  cv_.notify_all();
}

void VirtualNodes::Kill(int64_t job) {
  std::lock_guard<std::mutex> lock(mu_);
  runs_.erase(job);
}

void VirtualNodes::Crash(int32_t node) {
  std::lock_guard<std::mutex> lock(mu_);
  if (node < 0 || node >= num_nodes_) return;
  crashed_[node] = 1;
  std::erase_if(runs_, [&](const auto& kv) {
    return std::find(kv.second.nodes.begin(), kv.second.nodes.end(), node) != kv.second.nodes.end();
  });
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
  return runs_.size();
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
    TimeUs wake = next_beat;
    for (auto it = runs_.begin(); it != runs_.end();) {
      if (it->second.end >= 0 && it->second.end <= now) {
        done.emplace_back(it->first, it->second.generation);
        it = runs_.erase(it);
      } else {
        if (it->second.end >= 0) wake = std::min(wake, it->second.end);
        ++it;
      }
    }
    lock.unlock();
    if (!beats.empty()) sink_.Heartbeats(beats);
    for (const auto& [job, gen] : done) sink_.JobDone(job, gen);
    lock.lock();
    if (stop_) break;
    const TimeUs wait = std::max<TimeUs>(1000, wake - SteadyUs());
    cv_.wait_for(lock, std::chrono::microseconds(std::min<TimeUs>(wait, heartbeat_interval_)));
  }
}

}  // namespace berth::server
