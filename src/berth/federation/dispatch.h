// Dispatch policies of the global layer: which member cluster a job goes to.
//
//   global           Berth's: the earliest estimated finish (estimator.h);
//                    within a budget when the job has one; promises free
//                    capacity (a lease) when the job can start on arrival
//   global-cost      the cheapest member whose estimated finish meets the job's
//                    deadline (the earliest finish when none does, or when
//                    the job has no deadline)
//   multikueue       a copy to every allowed member; the first to admit wins,
//                    the others are withdrawn (MultiKueue)
//   karmada-weights  static shares (smooth weighted round robin; weights
//                    default to the members' GPU counts) (Karmada)
//   round-robin      the allowed members in turn
//   least-loaded     the most free GPUs in the last digest
//   data-local       a member in a region holding the dataset (most free
//                    GPUs among them); least-loaded when there is none
//   cheapest         the lowest estimated cost (GPU price x run time on the
//                    best type + egress), wait ignored
//   fastest          the shortest run time (the best card type), wait and
//                    data ignored
//
// Every policy honours region pins and exclusions and sends a job only where
// it could ever run.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "berth/federation/estimator.h"

namespace berth::federation {

enum class Policy { kGlobal, kGlobalCost, kMultiKueue, kKarmadaWeights, kRoundRobin, kLeastLoaded, kDataLocal,
                    kCheapest, kFastest };

std::optional<Policy> ParsePolicy(const std::string& name);
const char* PolicyName(Policy p);
// The names ParsePolicy accepts, comma-separated (for errors and help).
std::string PolicyNames();

struct Request {
  const job::JobSpec* spec = nullptr;
  int32_t dataset = -1;
  int64_t key = 0;                 // the job's trace index (stable tie-breaks)
  std::vector<int32_t> excluded;   // members that refused it as never fitting
  Checkpoint checkpoint;           // resumed after a member failure: its checkpoint moves with it
};

struct Choice {
  int32_t member = -1;   // -1: no member may run it
  bool promise = false;  // dispatched against free capacity, under a lease
  Estimate estimate;     // for the member chosen (global policies; others fill what they read)
};

class Dispatcher {
 public:
  Dispatcher(Policy policy, const Federation& fed) : policy_(policy), fed_(fed), credit_(fed.members.size(), 0) {}

  Policy policy() const { return policy_; }
  // One job: the member to send it to (multikueue: use Allowed()).
  Choice ChooseOne(const EstimateContext& ctx, const Request& r);
  // The members that may take the job (allowed, not excluded, not marked
  // down, able to run it).
  std::vector<int32_t> Allowed(const EstimateContext& ctx, const Request& r) const;
  // A batch (global only): members for the jobs that can start on arrival,
  // as an assignment problem (LP relaxation through GLPK, rounded by the
  // largest shares first). Returns (request index, member) pairs in the order
  // to apply them; the caller re-checks each against its ledger and sends the
  // rest one by one.
  StatusOr<std::vector<std::pair<int32_t, int32_t>>> AssignBatch(const EstimateContext& ctx,
                                                                 std::span<const Request> batch);

 private:
  Policy policy_;
  const Federation& fed_;
  int64_t cursor_ = 0;           // round-robin
  std::vector<double> credit_;   // karmada-weights: smooth weighted round robin
};

// Decides jobs that arrived together, the same way in the simulator and the
// live dispatcher (not for multikueue, whose copies the caller sends): for
// the global policies a batch of at least `batch_min` first goes through
// AssignBatch, each pick re-checked against the ledger as the picks before
// it left it (it must start on arrival, its data in place within half a
// lease, within its budget) and sent as a promise; the rest one by one
// through ChooseOne. `context()` gives the context as it stands now: the
// caller's `send(i, choice)` adds each decision to its ledger before the
// next is made. `send` is called once per request (member -1: no member may
// run it). Returns whether a batch was solved as an LP.
bool DispatchBatch(Dispatcher& d, const std::function<EstimateContext()>& context, std::span<const Request> reqs,
                   int32_t batch_min, const std::function<void(size_t i, const Choice& c)>& send);

}  // namespace berth::federation
