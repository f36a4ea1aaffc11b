// Heterogeneity-aware (and -blind) allocation policies in the style of Gavel:
// given the active jobs and the GPUs of each type, decide the share of time
// each job should spend on each type (x[j][t], rows summing to <= 1). A
// round-based mechanism (src/berth/sim/gavel/) turns the shares into the jobs
// that run each round. Policies are chosen by name from a registry:
//
//   las            blind max-min fairness (LAS): equal GPU-time per job,
//                  spread over types in proportion to their GPUs
//   fifo           blind FIFO: in arrival order, a uniformly random type
//                  with room; a job keeps its type until it ends
//   gavel-las      Gavel's heterogeneity-aware LAS: max-min of throughput
//                  normalized by the job's throughput under `las`
//   gavel-maxmin   max-min of reference-equivalents (each job's GPUs valued
//                  in reference GPUs of its class)
//   gavel-tput     maximum total reference-equivalent throughput
//   gavel-fifo     FIFO, each job on the fastest type with room (re-decided
//                  every round)
//   gavel-makespan minimum makespan: max-min of throughput / remaining steps
// The LP policies use SolveAllocationLp (GLPK).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "berth/common/ids.h"
#include "berth/common/rng.h"
#include "berth/common/status.h"

namespace berth::hetero {

struct PolicyJob {
  JobId id;
  int32_t scale = 1;
  double weight = 1;
  std::vector<double> steps_per_s;  // per type, consolidated (0: cannot run there)
  std::vector<double> ref_factor;   // per type: reference GPUs per GPU for its class
  double remaining_steps = 0;
};

struct PolicyInput {
  std::span<const PolicyJob> jobs;  // in arrival order
  std::span<const double> capacity; // GPUs per type
};

struct Allocation {
  std::vector<std::vector<double>> x;  // per job (input order), per type
  int32_t lp_rows = 0;                 // rows of the LP solved (0: no LP)
};

class AllocationPolicy {
 public:
  virtual ~AllocationPolicy() = default;
  virtual std::string_view Name() const = 0;
  virtual StatusOr<Allocation> Allocate(const PolicyInput& in) = 0;
  // True when the allocation depends on jobs' remaining work (recomputed
  // every round, not only when the set of jobs changes).
  virtual bool NeedsProgress() const { return false; }
  // False for the heterogeneity-blind baselines (las, fifo): they treat every
  // type as equally fast, so a round-based mechanism must not favour a type
  // either (Gavel's visits the types in a random order each round for them,
  // fastest first for the aware policies).
  virtual bool HeterogeneityAware() const { return true; }
};

struct PolicyOptions {
  uint64_t seed = 0;
  bool aggregate_lp = true;  // merge identical jobs in the LP (same answer, smaller program)
};

class AllocationPolicyRegistry {
 public:
  using Factory = std::function<std::unique_ptr<AllocationPolicy>(const PolicyOptions&)>;
  Status Register(const std::string& name, Factory f, std::string description);
  StatusOr<std::unique_ptr<AllocationPolicy>> Create(const std::string& name, const PolicyOptions& o) const;
  bool Has(const std::string& name) const { return entries_.count(name) > 0; }
  std::vector<std::string> Names() const;
  // The description given at registration ("" for an unknown name).
  std::string Description(const std::string& name) const;

 private:
  std::map<std::string, std::pair<Factory, std::string>> entries_;
};

// Registers the policies listed above.
Status RegisterAllocationPolicies(AllocationPolicyRegistry& r);

// Blind max-min shares (the `las` allocation): per-job total share
// x_j = min(1, lambda * weight_j / scale_j) with sum_j scale_j x_j <= total
// GPUs, spread over types in proportion to their GPUs.
std::vector<double> BlindShares(std::span<const PolicyJob> jobs, double total_gpus);

}  // namespace berth::hetero
