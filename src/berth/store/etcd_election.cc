// Leader election: campaign, lease keepalive, resignation.
#include "berth/common/clock.h"
#include "berth/store/etcd_election.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace berth::store {
namespace {

std::string FormatSeconds(TimeUs us) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f s", static_cast<double>(us) / 1e6);
  return text;
}

}  // namespace

LeaderElection::LeaderElection(std::vector<std::string> endpoints, ElectionOptions options, LostFn on_lost)
    : options_(std::move(options)),
      on_lost_(std::move(on_lost)),
      campaign_client_(endpoints, options_.client),
      keepalive_client_(endpoints, options_.client) {
  keepalive_ = std::thread([this] { KeepAliveLoop(); });
}

LeaderElection::~LeaderElection() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (keepalive_.joinable()) keepalive_.join();
  Resign();
}

int64_t LeaderElection::term() const {
  std::lock_guard<std::mutex> lock(mu_);
  return term_;
}

std::string LeaderElection::leader() const {
  std::lock_guard<std::mutex> lock(mu_);
  return leader_;
}

std::string LeaderElection::value() const {
  std::lock_guard<std::mutex> lock(mu_);
  return options_.value;
}

void LeaderElection::SetValue(std::string value) {
  std::lock_guard<std::mutex> campaign(campaign_mu_);
  std::lock_guard<std::mutex> lock(mu_);
  options_.value = std::move(value);
}

void LeaderElection::Interrupt() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    interrupted_ = true;
  }
  cv_.notify_all();
}

bool LeaderElection::DropLeaseLocked(int64_t lease) {
  if (lease_ != lease) return false;  // already replaced
  lease_ = 0;
  lease_valid_until_ = 0;
  last_renewed_ = 0;
  if (term_ == 0) return false;
  term_ = 0;
  leader_.clear();  // not this process any more; who leads now is unknown
  return true;
}

void LeaderElection::Lost(int64_t term, const Status& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (term == 0 || term_ != term) return;
    term_ = 0;
    leader_.clear();
  }
  if (on_lost_) on_lost_(why);
}

StatusOr<int64_t> LeaderElection::Campaign() {
  std::lock_guard<std::mutex> campaign(campaign_mu_);
  const TimeUs ttl_us = options_.ttl_s * 1'000'000;
  for (;;) {
    int64_t lease;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (interrupted_ || stopping_) return Unavailable("leader election interrupted");
      if (term_ != 0) return term_;
      lease = lease_;
    }
    Status failure;
    if (lease == 0) {
      const TimeUs asked = SteadyNowUs();
      StatusOr<int64_t> granted = campaign_client_.Grant(options_.ttl_s);
      if (granted.ok()) {
        std::lock_guard<std::mutex> lock(mu_);
        lease = lease_ = *granted;
        lease_valid_until_ = asked + ttl_us;
        last_renewed_ = asked;
        cv_.notify_all();  // the keepalive thread has a lease to renew
      } else {
        failure = granted.status();
      }
    }
    if (failure.ok()) {
      StatusOr<EtcdTxnResult> r = campaign_client_.Txn(
          {{options_.key, EtcdCompare::Target::kCreate, 0, {}}},
          {EtcdOp::Put(options_.key, options_.value, lease)}, {EtcdOp::Get(options_.key)});
      if (r.ok()) {
        std::lock_guard<std::mutex> lock(mu_);
        if (r->succeeded) {
          // The key was created by this txn: its create_revision is the txn's revision.
          if (lease_ == lease) {
            term_ = r->revision;
            leader_ = options_.value;
            return term_;
          }
        } else if (!r->ranges.empty() && !r->ranges[0].empty()) {
          const EtcdKv& holder = r->ranges[0][0];
          leader_ = holder.value;
          // An earlier attempt whose answer was lost may have created it: the
          // key on this candidate's lease is this candidate's.
          if (holder.lease == lease && lease_ == lease && holder.value == options_.value) {
            term_ = holder.create_revision;
            return term_;
          }
        } else {
          leader_.clear();  // deleted in between: try again at once
          continue;
        }
      } else if (r.status().code() == StatusCode::kNotFound) {
        std::lock_guard<std::mutex> lock(mu_);
        DropLeaseLocked(lease);  // the lease expired (e.g. this process was stopped): grant another
        continue;
      }
    }
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::microseconds(options_.poll_interval), [&] { return interrupted_ || stopping_; });
  }
}

void LeaderElection::Resign() {
  std::lock_guard<std::mutex> campaign(campaign_mu_);
  int64_t lease;
  {
    std::lock_guard<std::mutex> lock(mu_);
    lease = lease_;
    lease_ = 0;
    lease_valid_until_ = 0;
    last_renewed_ = 0;
    term_ = 0;
    leader_.clear();
  }
  // Revoking deletes the key at once, so a standby takes over without
  // waiting for the TTL. Best effort: otherwise the lease expires.
  if (lease != 0) (void)campaign_client_.Revoke(lease);
}

void LeaderElection::KeepAliveLoop() {
  const TimeUs ttl_us = options_.ttl_s * 1'000'000;
  const TimeUs every = std::clamp<TimeUs>(options_.renew_interval, 50'000, std::max<TimeUs>(ttl_us / 3, 50'000));
  TimeUs wait = every;
  for (;;) {
    int64_t lease;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::microseconds(wait), [&] { return stopping_; });
      if (stopping_) return;
      lease = lease_;
      if (lease == 0) {
        // Nothing to renew until Campaign grants a lease.
        cv_.wait(lock, [&] { return stopping_ || lease_ != 0; });
        wait = every;
        continue;
      }
    }
    Status lost;
    const TimeUs asked = SteadyNowUs();
    // Renewing a lease that may already have lapsed here (the process was
    // stopped, or etcd was out of reach) would not bring the term back.
    bool expired_here = false;
    bool leading = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      expired_here = lease_ == lease && asked >= lease_valid_until_;
      leading = lease_ == lease && term_ != 0;
    }
    StatusOr<EtcdRenewal> renewal = expired_here ? StatusOr<EtcdRenewal>(EtcdRenewal{}) : keepalive_client_.Renew(lease);
    std::string untrusted;  // why an answer that renewed the lease is not counted
    bool key_gone = false;
    if (renewal.ok() && renewal->ttl > 0) {
      const std::string renewed_at = keepalive_client_.endpoint();
      StatusOr<EtcdRange> check = keepalive_client_.Range(options_.key, {});
      if (!check.ok()) {
        untrusted = "the renewal at " + renewed_at + " was not confirmed: " + check.status().message();
      } else if (check->raft_term != renewal->raft_term) {
        untrusted = "the renewal at " + renewed_at + " was answered in raft term " +
                    std::to_string(renewal->raft_term) + ", the read that confirms it in term " +
                    std::to_string(check->raft_term);
      } else if (leading && (check->kvs.empty() || check->kvs[0].lease != lease)) {
        key_gone = true;
      }
      // The member that renewed but could not confirm may be a deposed leader: ask another.
      if (!untrusted.empty() && keepalive_client_.endpoint() == renewed_at) keepalive_client_.NextEndpoint();
    }
    bool fire = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const TimeUs now = SteadyNowUs();
      const std::string since =
          last_renewed_ > 0 ? " (the last confirmed renewal was sent " + FormatSeconds(now - last_renewed_) + " ago)" : "";
      if (renewal.ok() && renewal->ttl > 0 && untrusted.empty() && !key_gone) {
        if (lease_ == lease) {
          lease_valid_until_ = asked + std::min<TimeUs>(ttl_us, renewal->ttl * 1'000'000);
          last_renewed_ = asked;
        }
        wait = every;
      } else if (key_gone) {
        fire = DropLeaseLocked(lease);
        lost = FailedPrecondition("the election key is no longer held under this candidate's lease" + since);
        wait = every;
      } else if (renewal.ok() && untrusted.empty()) {
        fire = DropLeaseLocked(lease);
        lost = FailedPrecondition(expired_here ? "no lease renewal for " + std::to_string(options_.ttl_s) +
                                                     " s (the process was stopped or etcd was out of reach)" + since
                                               : "the lease expired in etcd" + since);
        wait = every;
      } else {
        // No answer, or one not to be trusted: retry soon; the lease is lost
        // once its TTL has run out here.
        wait = std::min<TimeUs>(every, 200'000);
        if (lease_ == lease && now >= lease_valid_until_) {
          fire = DropLeaseLocked(lease);
          lost = Unavailable("no lease renewal for " + std::to_string(options_.ttl_s) + " s: " +
                             (renewal.ok() ? untrusted : renewal.status().message()) + since);
        }
      }
      if (!fire && lease_ == 0) cv_.notify_all();
    }
    if (fire && on_lost_) on_lost_(lost);
  }
}

}  // namespace berth::store
