// The tree of queues that share a fleet between tenants (M7): per queue and
// per GPU type, a guaranteed quota, a limit, a borrowing limit and a lending
// limit, plus a fair-share weight. Jobs are charged to leaf queues; a tenant
// maps to a leaf. Quantities are milli-GPU, or milli-reference-GPU when the
// tree counts in normalized units (units.h). A quota "dimension" is one GPU
// type of the cluster, or all GPU types together (kAllTypes, written "*").
//
//   QueueSpec a{.name = "team-a", .parent = "", .weight = 2, .tenants = {"alice"}};
//   a.quotas["*"] = {.guarantee = 64 * kMilliPerGpu, .limit = 128 * kMilliPerGpu};
//   StatusOr<QueueTree> t = QueueTree::Create({a, ...}, cluster);
//   int32_t leaf = t->LeafFor(job);   // -1: no queue
//
// Semantics of a dimension's quota (unset fields: no constraint):
//   guarantee     capacity the queue may always use (reclaimed by preemption
//                 when others borrowed it); the sum of the children's
//                 guarantees should not exceed the parent's.
//   limit         the most the queue may use, borrowed or not.
//   borrow_limit  the most it may use beyond its guarantee.
//   lend_limit    the most of its idle guarantee that others may borrow.
// A queue with no quota in a dimension is not constrained in it (its usage
// still counts in its parent's). See ledger.h for how admission checks them.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/common/status.h"
#include "berth/job/job.h"
#include "berth/tenancy/budget.h"
#include "berth/tenancy/units.h"

namespace berth::tenancy {

inline constexpr int64_t kUnlimited = -1;

// How a queue's entitled amount is computed (fair-share keys, reports): a
// flat weighted share of the cluster, or the weighted max-min share of the
// capacity its jobs fit (entitlement.h). Queue file `entitlement:`.
enum class EntitlementMode { kFlat, kReachable };
// "flat" / "reachable".
const char* EntitlementModeName(EntitlementMode m);
StatusOr<EntitlementMode> ParseEntitlementMode(std::string_view text);
inline constexpr TimeUs kDefaultEntitlementRefresh = 60 * kUsPerSecond;

struct Quota {
  int64_t guarantee = 0;               // milli-GPU
  int64_t limit = kUnlimited;          // milli-GPU
  int64_t borrow_limit = kUnlimited;   // milli-GPU beyond the guarantee
  int64_t lend_limit = kUnlimited;     // milli-GPU of idle guarantee lendable
};

struct QueueSpec {
  std::string name;
  std::string parent;  // "" = under the root
  double weight = 1.0;
  // GPU type name (as the cluster spells it, or an alias the cluster resolves)
  // or "*" for all types together -> quota.
  std::map<std::string, Quota> quotas;
  std::vector<std::string> tenants;  // tenants charged to this (leaf) queue
  std::optional<BudgetSpec> budget;  // spend per period (budget.h)
};

// A GPU product name as Kubernetes labels carry it ("NVIDIA-H100-80GB-HBM3")
// to the one cluster GPU type among its words ("H100"); "" when none or
// several. Quota keys that name no cluster type resolve through it.
std::string GpuTypeOfProductName(const std::string& product, const cluster::Cluster& cluster);

// One queue as resolved against a cluster.
struct QueueNode {
  std::string name;
  int32_t parent = -1;  // -1 = the root
  std::vector<int32_t> children;
  double weight = 1.0;
  // Per dimension (GPU type id, then kAllTypes at index num_types): set or not.
  std::vector<Quota> quota;
  std::vector<bool> has_quota;
  std::optional<BudgetSpec> budget;
  bool is_leaf() const { return children.empty(); }
};

class QueueTree {
 public:
  // An empty tree: every tenant gets its own leaf under the root on first use
  // (AutoLeaf), unconstrained, weight 1.
  explicit QueueTree(int32_t num_types = 0) : num_types_(num_types) {}

  // Validates names (unique, non-empty), parents (exist, no cycles), types
  // (known to the cluster or "*"), quantities (non-negative; limit >=
  // guarantee) and tenants (each in one leaf). Errors name the queue and field.
  static StatusOr<QueueTree> Create(const std::vector<QueueSpec>& specs, const cluster::Cluster& cluster);
  // One leaf per tenant of the workload under the root, each guaranteed its
  // share of the trace's GPU demand (GPUs x duration; jobs without a duration
  // count one hour) of the cluster's GPUs, in the all-types dimension, with
  // weight = that share; no limits. Unknown tenants get unconstrained leaves.
  static QueueTree FromTenantShares(std::span<const job::JobSpec> jobs, const cluster::Cluster& cluster);
  // The same from each job's demand, for a workload not held as specs (a
  // streamed trace): `job(i)` for i in 0..n-1, in the workload's order.
  struct JobDemand {
    const std::string& tenant;
    int64_t milli_gpu = 0;  // JobSpec::total_milli_gpu()
    TimeUs duration = -1;
  };
  static QueueTree FromTenantShares(size_t n, const std::function<JobDemand(size_t)>& job,
                                    const cluster::Cluster& cluster);

  int32_t num_types() const { return num_types_; }
  int32_t num_dims() const { return num_types_ + 1; }
  int32_t all_types_dim() const { return num_types_; }
  int32_t size() const { return static_cast<int32_t>(nodes_.size()); }
  const QueueNode& node(int32_t q) const { return nodes_[q]; }
  // The queue named `name`, or -1.
  int32_t Find(const std::string& name) const;
  // The leaf a job is charged to: its `queue` if it names a leaf, else its
  // tenant's leaf, else the leaf named "default" if there is one, else -1.
  // With auto leaves, the last steps are: the leaf named after the job's
  // queue, else its tenant, else "default", if it exists yet; else -1.
  int32_t LeafFor(const job::JobSpec& job) const;
  // Whether unknown tenants get their own leaf (trees built by the default
  // constructor or by FromTenantShares).
  bool auto_leaves() const { return auto_leaves_; }
  void set_auto_leaves(bool on) { auto_leaves_ = on; }
  // Adds an unconstrained leaf named `tenant` ("default" when empty) under
  // the root (auto_leaves only); returns its index (the existing one if
  // already there). The ledger names auto leaves by a job's queue, if it
  // names one, else by its tenant.
  int32_t AutoLeaf(const std::string& tenant);
  // Leaves in index order.
  std::vector<int32_t> Leaves() const;
  // The unit every quota of the tree is written in (units.h): milli-GPU, or
  // milli-reference-GPU of `reference()` ("H100"). A tree in GPUs may name
  // a reference too: its quotas stay in GPUs; reports add reference-GPU figures.
  Unit unit() const { return unit_; }
  const std::string& reference() const { return reference_; }
  // Prices in milli-money per GPU-hour by GPU type name (as written: the
  // ledger resolves them against the cluster's types and aliases), for
  // budgets in money: the queue file's `prices`, then the catalog's.
  const std::map<std::string, int64_t>& prices() const { return prices_; }
  // Adds prices for names not priced yet.
  void AddPrices(const std::map<std::string, int64_t>& prices) {
    for (const auto& [name, p] : prices) prices_.emplace(name, p);
  }
  // The price of a cluster GPU type (its name, then any priced name that
  // resolves to it), or -1.
  int64_t PriceOf(GpuTypeId type, const cluster::Cluster& cluster) const;
  bool has_money_budget() const {
    for (const auto& n : nodes_)
      if (n.budget && n.budget->money) return true;
    return false;
  }
  // The entitlement mode, and how often (simulated or wall time) a reachable
  // entitlement is recomputed when the demand changed.
  EntitlementMode entitlement() const { return entitlement_; }
  TimeUs entitlement_refresh() const { return entitlement_refresh_; }
  void set_entitlement(EntitlementMode mode, TimeUs refresh = kDefaultEntitlementRefresh) {
    entitlement_ = mode;
    entitlement_refresh_ = refresh;
  }
  void set_unit(Unit unit, std::string reference) {
    unit_ = unit;
    reference_ = std::move(reference);
  }

 private:
  int32_t AddNode(QueueNode node);

  int32_t num_types_ = 0;
  bool auto_leaves_ = true;
  Unit unit_ = Unit::kGpus;
  std::string reference_;
  EntitlementMode entitlement_ = EntitlementMode::kFlat;
  TimeUs entitlement_refresh_ = kDefaultEntitlementRefresh;
  std::vector<QueueNode> nodes_;
  std::map<std::string, int64_t> prices_;
  std::unordered_map<std::string, int32_t> by_name_;    // looked up, never iterated
  std::unordered_map<std::string, int32_t> by_tenant_;  // looked up, never iterated
};

}  // namespace berth::tenancy
