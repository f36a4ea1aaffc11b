// Virtual nodes: a node-agent simulator for demos and tests. Each node agent
// heartbeats to the service and "runs" the jobs placed on it for their
// declared duration divided by the speed-up, then reports them done. A node
// can be crashed (it stops heartbeating and loses its tasks) and restored; a
// run that lost a node is never reported done, unless an in-place repair
// moves it to healthy nodes first (Move).
//
// The agents run on their own thread and talk to the service only through
// the Sink (which posts to the scheduling thread), as remote agents would.
//
// Cost: the runs are kept ordered by end time, so a launch, a kill and a
// completion cost O(log runs); the agents' thread wakes only for the next
// heartbeat or the earliest end, and a launch wakes it only when it ends
// before that. (Scanning every run at each wake, and waking at each launch,
// made every launch wait for a scan of all runs under the lock: at 66,000
// runs, several milliseconds per job started, which stalled the scheduling
// thread for seconds when thousands of jobs started in one turn.)
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "berth/common/quantity.h"

namespace berth::server {

class VirtualNodes {
 public:
  // What the agents tell the service. Called on the agents' thread.
  class Sink {
   public:
    virtual ~Sink() = default;
    virtual void Heartbeats(const std::vector<int32_t>& nodes) = 0;  // these nodes are alive
    virtual void JobDone(int64_t job, int32_t generation) = 0;
  };

  // `heartbeat_interval` in real microseconds.
  VirtualNodes(int32_t num_nodes, TimeUs heartbeat_interval, Sink& sink);
  ~VirtualNodes();
  void Start();
  void Stop();

  // Runs job `job` (its `generation`-th start) on `nodes` for `wall` real
  // microseconds (< 0: until killed). Reported done only if every node stays
  // up throughout.
  void Launch(int64_t job, int32_t generation, std::vector<int32_t> nodes, TimeUs wall);
  // Stops a job without reporting it (cancelled, preempted, requeued).
  void Kill(int64_t job);
  // An in-place repair: run `generation` of `job` now runs on `nodes` and
  // ends `delay` real microseconds later than it would have (its ranks go on
  // from where they were once repaired); a run that lost a node goes on if
  // every new node is up. False when there is no such run.
  bool Move(int64_t job, int32_t generation, std::vector<int32_t> nodes, TimeUs delay);
  // Failure injection: a crashed node stops heartbeating and loses its jobs.
  void Crash(int32_t node);
  void Restore(int32_t node);
  bool crashed(int32_t node) const;
  size_t running_jobs() const;  // runs on healthy nodes
  // Runs the agents' thread has looked at to find those due, since Start
  // (for tests: it grows with the runs that end, not with those running).
  uint64_t runs_examined() const;

 private:
  struct Run {
    int32_t generation = 0;
    std::vector<int32_t> nodes;
    TimeUs end = -1;  // steady-clock microseconds; -1 = never
    bool lost = false;  // a node of it crashed: not reported done unless moved
  };
  void Loop();

  const int32_t num_nodes_;
  const TimeUs heartbeat_interval_;
  Sink& sink_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<uint8_t> crashed_;
  // Removes `job`'s run (and its entry in ends_); false if none.
  bool EraseLocked(int64_t job);

  std::map<int64_t, Run> runs_;  // by job id
  std::set<std::pair<TimeUs, int64_t>> ends_;  // (end, job) of every run with an end
  TimeUs wake_at_ = 0;  // when the agents' thread wakes next (it is asleep until then)
  uint64_t examined_ = 0;
  std::thread thread_;
};

}  // namespace berth::server
