// Leader election over etcd, for replicas of `berth serve` that share one
// etcd store (docs/adr/0006-etcd-store-and-election.md).
//
// Each candidate holds a lease (TTL `ttl_s`), renewed by a background thread
// every `renew_interval`. To lead, it creates the election key under that lease in a txn
// that succeeds only if the key does not exist; the term is the key's
// create_revision, which etcd makes larger than any earlier one. The others
// retry every `poll_interval` until the key goes away: the leader resigned
// (its lease revoked) or died (its lease expired after the TTL).
//
// Leadership is lost when the lease expires (etcd says so, or no renewal
// succeeded for a whole TTL, e.g. after the process was stopped) or when a
// fenced write is refused (Lost()); `on_lost` then runs once for that term.
//
//
// A renewal counts only once it is confirmed: a linearizable read of the key
// at the same member, answered in the same raft term (and, while leading,
// finding the key still on this lease). etcd 3.4 lets a leader whose raft loop
// is stuck (a slow fsync, a starved CPU) go on renewing leases from its own
// lessor after the others have elected a new leader, which counts the TTL
// down and revokes the lease (etcd issue 15247); such a member cannot answer
// a linearizable read, so its renewals are not trusted and the client moves on.
//
// Timing: one etcd member's death must not cost the leader its lease. The
// renewals go to one member; when it dies, the client moves to the next one
// at once (a refused connection) or after `client.request_timeout` (no
// answer), and the surviving members answer once they have elected a new
// etcd leader (about 1-2 s with etcd's default 1 s election timeout). With
// TTL 4 s, a renewal every 0.5 s and 1 s per request, the lease has at least
// 3.5 s left when the member dies, and the renewals reach a live member
// within ~2 s of it (0.5 s to the next renewal, 1 s on an unanswered
// member, 0.2 s retry): the lease outlives etcd's own election with more
// than a second to spare. A dead Berth leader is replaced after the TTL.
//
//   LeaderElection e(endpoints, {.key = "/berth/leader", .value = "a"}, on_lost);
//   int64_t term = e.Campaign().value();   // blocks while another leads
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "berth/store/etcd_client.h"

namespace berth::store {

struct ElectionOptions {
  std::string key = "/berth/leader";
  std::string value;               // this candidate as the others see it; compared by fenced writes
  int64_t ttl_s = 4;               // lease TTL: a dead leader is replaced after about this long
  TimeUs renew_interval = 500'000; // the lease is renewed this often (retried every 0.2 s after a failure)
  TimeUs poll_interval = 200'000;  // a standby retries the key this often
  EtcdClientOptions client{500'000, 1'000'000};
};

class LeaderElection {
 public:
  using LostFn = std::function<void(const Status&)>;
  LeaderElection(std::vector<std::string> endpoints, ElectionOptions options, LostFn on_lost);
  // Resigns (revokes the lease, deleting the key if held).
  ~LeaderElection();

  // Blocks until this candidate holds the key; returns the term. kUnavailable
  // once Interrupt() was called.
  StatusOr<int64_t> Campaign();
  // Gives up the key (if held) by revoking the lease; the next Campaign grants a new one.
  void Resign();
  // Makes a blocked Campaign (and every later one) return.
  void Interrupt();
  // The term held, or 0.
  int64_t term() const;
  // The value of the key's holder as last seen ("" when none or unknown).
  std::string leader() const;
  // This candidate's value; SetValue only before Campaign.
  std::string value() const;
  void SetValue(std::string value);
  // Records that `term` is lost (e.g. a write under it was fenced); runs
  // on_lost if it was the term held.
  void Lost(int64_t term, const Status& why);

 private:
  void KeepAliveLoop();
  // Under mu_: drops the lease; if a term was held, clears it and returns true.
  bool DropLeaseLocked(int64_t lease);

  ElectionOptions options_;
  LostFn on_lost_;
  EtcdClient campaign_client_;   // Campaign and Resign (one caller at a time: campaign_mu_)
  EtcdClient keepalive_client_;  // the keepalive thread only
  std::mutex campaign_mu_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  int64_t lease_ = 0;           // 0: none
  TimeUs lease_valid_until_ = 0;  // steady clock: last confirmed renewal + TTL
  TimeUs last_renewed_ = 0;       // steady clock: when the last confirmed renewal was sent
  int64_t term_ = 0;            // held term, 0 if not leading
  std::string leader_;          // holder's value as last seen
  bool interrupted_ = false;
  bool stopping_ = false;
  std::thread keepalive_;
};

}  // namespace berth::store
