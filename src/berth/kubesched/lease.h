// Leader election over a coordination.k8s.io/v1 Lease, the way kube-scheduler
// and client-go's leaderelection do it: the holder renews the Lease every
// `retry`; a candidate takes it over once the record it observed has not
// changed for `lease_duration` (local time of observation, so clocks need not
// agree); every write carries the resourceVersion it read, so of two writers
// only one wins. A leader that cannot renew within `renew_deadline` stops
// leading (the callback), before any candidate may take over.
//
//   LeaseElector e(client, {.ns = "berth-system", .name = "berth-scheduler", .identity = "host_123"});
//   e.Campaign(stop);                   // blocks until leading (or stop)
//   e.KeepLeading([] { /* lost */ });   // renews on a thread
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "berth/common/status.h"
#include "berth/kubesched/client.h"

namespace berth::kube {

struct LeaseOptions {
  std::string ns = "default";
  std::string name = "berth-scheduler";
  std::string identity;  // unique per process (host_pid)
  std::chrono::milliseconds lease_duration{15000};
  std::chrono::milliseconds renew_deadline{10000};
  std::chrono::milliseconds retry{2000};
};

class LeaseElector {
 public:
  LeaseElector(KubeClient& client, LeaseOptions options);
  ~LeaseElector();
  // Tries until this process holds the Lease or `stop` turns true (then
  // kUnavailable). Other errors are retried.
  Status Campaign(const std::atomic<bool>& stop);
  // Renews on a thread; calls `on_lost` once if a renewal fails for longer
  // than the renew deadline or another holder is seen.
  void KeepLeading(std::function<void(const std::string& why)> on_lost);
  // Gives the Lease up (holder cleared) so a standby takes over at once.
  void Resign();
  bool leading() const { return leading_.load(); }
  // The holder as last read ("" when unknown).
  std::string holder() const;

 private:
  // One attempt: acquire or renew. True when this process holds the Lease.
  StatusOr<bool> TryAcquireOrRenew();

  KubeClient& client_;
  LeaseOptions options_;
  std::atomic<bool> leading_{false};
  std::atomic<bool> stop_{false};
  std::thread renewer_;
  mutable std::mutex mu_;
  std::string observed_record_;  // holder + renewTime as last read
  std::string holder_;
  std::chrono::steady_clock::time_point observed_at_{};
};

}  // namespace berth::kube
