// fairshare: weighted fair share across the queue tree (dominant resource
// fairness with a decayed usage history), with an age boost against
// starvation.
//
// Key of a queue q (recomputed at each pass, in Prepare):
//
//   key(q) = DominantShare(q) + history(q) / weight(q)
//   DominantShare(q) = max over GPU dimensions of usage / capacity, / weight
//                      (the ledger's; usage = what q's running jobs hold now)
//   history(q) = decayed_usage(q) / (capacity x W)
//
// decayed_usage is the ledger's integral of q's milli-GPU over time with the
// half-life h (SchedulerOptions::usage_half_life); W = h / ln 2 is the weight
// of that integral for a constant usage, so history(q) is q's mean share of
// the cluster over its recent past (a queue that held a quarter of the fleet
// for many half-lives has history 0.25). With h = 0 (no decay) W is the time
// since the first pass and history is the mean share since then. Lower key =
// more deserving.
//
// Order: queues are compared where their paths from the root part: the two
// sibling queues there by (key, queue index); so every leaf has a place in one
// total order (a depth-first walk visiting children by key) and a job's place
// is its leaf's, then within the leaf higher priority first, then submission
// order (seq). The keys are fixed for a pass: jobs started during a pass raise
// their queue's key at the next pass.
//
// Age boost (arg `age_boost_after_s`, default 86400; 0 = off): a job that has
// waited (now - enqueue time) at least that long sorts ahead of every job not
// boosted, as if its queue had no usage; boosted jobs among themselves by
// priority, then seq (the oldest first).
//
// Reachable entitlement (queue file `entitlement: reachable`, tenancy/
// entitlement.h): the weight is replaced by the queue's entitled fraction of
// the cluster, computed over the capacity its jobs fit:
//
//   key(q) = (share(q) + history(q)) x capacity / entitled(q)
//
// with share(q) = DominantShare(q) x weight(q). With equal weights and every
// queue able to use every node, entitled(q) = capacity / n and the order is
// the flat one. A queue without entitlement (no demand) uses its flat
// fraction: the product over its path of weight / sum of siblings' weights.
//
// The order is bucketed (framework::BucketedOrder): the scheduler keeps each
// leaf's jobs sorted and per pass orders only the leaves.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <memory>

#include "berth/framework/bucketed_order.h"
#include "berth/plugins/builtin.h"
#include "berth/plugins/queue_sort/sort_util.h"

namespace berth::plugins::queue_sort {
namespace {

using framework::QueuedJob;

class FairShare final : public framework::QueueSortPlugin, public framework::BucketedOrder {
 public:
  static constexpr std::string_view kName = "fairshare";
  explicit FairShare(double age_boost_s) : age_boost_(SecondsToUs(age_boost_s)) {}
  std::string_view Name() const override { return kName; }

  bool Dynamic() const override { return true; }

  void Prepare(const tenancy::Ledger& ledger, TimeUs now) override {
    now_ = now;
    if (first_ < 0) first_ = now;
    const tenancy::QueueTree& tree = ledger.tree();
    const int32_t n = tree.size();
    key_.assign(n, 0.0);
    parent_.assign(n, -1);
    depth_.assign(n, 1);
    has_child_.assign(n, false);
    const double cap = static_cast<double>(ledger.capacity(ledger.all_types_dim()));
    const double window_s = ledger.half_life() > 0 ? UsToSeconds(ledger.half_life()) / std::log(2.0)
                                                   : UsToSeconds(now - first_);
    for (int32_t q = 0; q < n; ++q) {
      const tenancy::QueueNode& node = tree.node(q);
      parent_[q] = node.parent;
      if (node.parent >= 0) has_child_[node.parent] = true;
      // Parents come before their children in index order only when the
      // specs list them so: walk up instead.
      int32_t d = 1;
      for (int32_t p = node.parent; p >= 0; p = tree.node(p).parent) ++d;
      depth_[q] = d;
      const double history = cap > 0 && window_s > 0 ? ledger.decayed_usage(q) / (cap * window_s) : 0.0;
      key_[q] = ledger.DominantShare(q) + history / node.weight;
    }
    if (!ledger.reachable_entitlement() || cap <= 0) return;
    std::vector<double> sibling_sum(n + 1, 0.0);  // by parent (n: the root)
    for (int32_t q = 0; q < n; ++q) sibling_sum[parent_[q] < 0 ? n : parent_[q]] += tree.node(q).weight;
    for (int32_t q = 0; q < n; ++q) {
      double fraction = ledger.entitled(q) / cap;
      if (fraction <= 0) {
        fraction = 1;
        for (int32_t a = q; a >= 0; a = parent_[a]) {
          const double sum = sibling_sum[parent_[a] < 0 ? n : parent_[a]];
          fraction *= sum > 0 ? tree.node(a).weight / sum : 0.0;
        }
      }
      key_[q] = fraction > 0 ? key_[q] * tree.node(q).weight / fraction : std::numeric_limits<double>::max();
    }
  }

  bool Less(const QueuedJob& a, const QueuedJob& b) const override {
    const bool ba = Boosted(a), bb = Boosted(b);
    if (ba != bb) return ba;
    if (!ba && a.queue != b.queue) {
      const int c = CompareQueues(a.queue, b.queue);
      if (c != 0) return c < 0;
    }
    if (a.spec->priority != b.spec->priority) return a.spec->priority > b.spec->priority;
    return a.seq < b.seq;
  }

  // The incremental form of Less (framework::BucketedOrder): buckets are
  // leaf queues, promotion is the age boost.
  int32_t Bucket(const QueuedJob& j) const override { return j.queue; }
  bool WithinLess(const QueuedJob& a, const QueuedJob& b) const override {
    if (a.spec->priority != b.spec->priority) return a.spec->priority > b.spec->priority;
    return a.seq < b.seq;
  }
  TimeUs PromoteAfter() const override { return age_boost_; }
  bool BucketIsQueue() const override { return true; }
  bool OrderBuckets(std::vector<int32_t>& buckets) const override {
    // CompareQueues is a total order of distinct leaves; a queue with
    // children compares equal to its descendants, which buckets cannot express.
    for (int32_t b : buckets)
      if (b < 0 || (b < static_cast<int32_t>(has_child_.size()) && has_child_[b])) return false;
    std::sort(buckets.begin(), buckets.end(), [&](int32_t a, int32_t b) { return CompareQueues(a, b) < 0; });
    return true;
  }

  // The key of a queue at the last Prepare (0 for a queue added since).
  double key(int32_t q) const { return q >= 0 && q < static_cast<int32_t>(key_.size()) ? key_[q] : 0.0; }

 private:
  bool Boosted(const QueuedJob& q) const { return age_boost_ > 0 && now_ - q.enqueue_time >= age_boost_; }

  // Queues added after the last Prepare (auto leaves) sit under the root.
  int32_t Parent(int32_t q) const { return q < static_cast<int32_t>(parent_.size()) ? parent_[q] : -1; }
  int32_t Depth(int32_t q) const { return q < static_cast<int32_t>(depth_.size()) ? depth_[q] : 1; }

  // <0: queue a goes first; >0: b first; 0: same queue.
  int CompareQueues(int32_t a, int32_t b) const {
    int32_t da = Depth(a), db = Depth(b);
    while (da > db) { a = Parent(a); --da; }
    while (db > da) { b = Parent(b); --db; }
    if (a == b) return 0;  // one is an ancestor of the other (jobs sit in leaves: not expected)
    while (Parent(a) != Parent(b)) {
      a = Parent(a);
      b = Parent(b);
    }
    const double ka = key(a), kb = key(b);
    if (ka != kb) return ka < kb ? -1 : 1;
    return a < b ? -1 : 1;
  }

  TimeUs age_boost_ = 0;
  TimeUs now_ = 0;
  TimeUs first_ = -1;
  std::vector<double> key_;       // per queue
  std::vector<int32_t> parent_;   // per queue
  std::vector<int32_t> depth_;    // per queue: 1 under the root
  std::vector<bool> has_child_;   // per queue
};

}  // namespace

Status RegisterFairShare(framework::PluginRegistry& r) {
  return r.Register(std::string(FairShare::kName),
                    [](const framework::PluginArgs& args) -> StatusOr<std::unique_ptr<framework::Plugin>> {
                      static constexpr std::array<std::string_view, 1> kKnown = {"age_boost_after_s"};
                      BERTH_RETURN_IF_ERROR(CheckArgs(args, FairShare::kName, kKnown));
                      BERTH_ASSIGN_OR_RETURN(double boost, ArgNumber(args, FairShare::kName, "age_boost_after_s", 86400));
                      return std::unique_ptr<framework::Plugin>(std::make_unique<FairShare>(boost));
                    });
}

}  // namespace berth::plugins::queue_sort
