// An optional interface of a dynamic queue-sort plugin: its order is a fixed
// order within buckets (e.g. leaf queues) plus an order of the buckets that
// changes from pass to pass, so the scheduler can keep the pending queue
// incrementally (scheduler/bucket_queue.h) instead of sorting it every pass.
//
// The plugin promises that, after Prepare(ledger, now), its Less orders jobs
// as: first the promoted ones (PromoteAfter() > 0 and now - enqueue_time >=
// PromoteAfter()) by WithinLess; then the others by bucket, in the order
// OrderBuckets gives, and within a bucket by WithinLess. Bucket and
// WithinLess depend on the job alone (not on Prepare).
//
//   class FairShare : public QueueSortPlugin, public BucketedOrder { ... };
//   if (auto* b = dynamic_cast<const BucketedOrder*>(&plugin)) ...
#pragma once

#include <cstdint>
#include <vector>

#include "berth/framework/cycle.h"

namespace berth::framework {

class BucketedOrder {
 public:
  virtual ~BucketedOrder() = default;
  virtual int32_t Bucket(const QueuedJob& job) const = 0;
  virtual bool WithinLess(const QueuedJob& a, const QueuedJob& b) const = 0;
  virtual TimeUs PromoteAfter() const { return 0; }
  // Sorts `buckets` (distinct, each holding a pending job) into this pass's
  // order. False: they cannot be ordered so this pass (the scheduler sorts
  // the whole queue with Less instead).
  virtual bool OrderBuckets(std::vector<int32_t>& buckets) const = 0;
  // True when a job's bucket is its leaf queue (QueuedJob::queue): a pass
  // may then pass over the bucket of a queue whose jobs the post-filters
  // promise no plan (see Scheduler::Schedule).
  virtual bool BucketIsQueue() const { return false; }
};

}  // namespace berth::framework
