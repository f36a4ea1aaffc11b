// The federation fence of a member service (ServiceOptions and
// Service::GrantFederationLease in service.h; docs/federation.md,
// "Fencing"): a dispatcher's digest poll grants this member a lease; while
// it holds, the member schedules as usual; once it lapses (the dispatcher
// stopped hearing from us, or we from it) the member starts nothing, and
// after the hold the dispatcher gave, the jobs it sent that still run are
// requeued here. The dispatcher re-dispatches a member's jobs only after
// every lease it granted that member has lapsed, so a member that hung and
// comes back never runs a job that has moved elsewhere.
#include "berth/server/service.h"

namespace berth::server {

namespace {
// Jobs the federation dispatcher sent carry its keys "fed-<id>-<attempt>".
bool FromDispatcher(const std::string& key) { return key.rfind("fed-", 0) == 0; }
}  // namespace

void Service::GrantFederationLease(TimeUs until, TimeUs hold_running) {
  fed_hold_running_.store(std::max<TimeUs>(0, hold_running));
  fed_leased_.store(true);
  TimeUs cur = fed_lease_until_.load();
  while (until > cur && !fed_lease_until_.compare_exchange_weak(cur, until)) {
  }
}

bool Service::FederationFenced() {
  if (!fed_leased_.load()) return false;
  const TimeUs now = clock_.Now();
  const TimeUs until = fed_lease_until_.load();
  if (now <= until) {
    if (fed_fenced_) {
      fed_fenced_ = false;
      dirty_ = true;
      log_.Info("federation_lease_renewed", {{"until", UsToSeconds(until)}});
    }
    return false;
  }
  if (!fed_fenced_) {
    fed_fenced_ = true;
    log_.Warn("federation_fenced", {{"lease_until", UsToSeconds(until)}, {"late_s", UsToSeconds(now - until)}});
  }
  if (now - until > fed_hold_running_.load()) {
    std::vector<int64_t> ids;
    for (int64_t id : running_)
      if (FromDispatcher(jobs_.at(id).key)) ids.push_back(id);
    for (int64_t id : ids)
      Requeue(jobs_.at(id), "the federation dispatcher's lease lapsed " +
                                std::to_string(UsToSeconds(now - until)) + " s ago (fenced)");
  }
  return true;
}

}  // namespace berth::server
