// The pending queue of a bucketed queue order (framework::BucketedOrder,
// e.g. fairshare's leaf queues), kept incrementally: one list per bucket,
// sorted by the plugin's WithinLess, and the promoted jobs (waited at least
// PromoteAfter()) in one list of their own. A pass's order is then the
// promoted list followed by the buckets in the plugin's OrderBuckets order:
// O(pending + buckets x log buckets) per pass, with no comparison of jobs,
// instead of sorting every pending job with Less.
//
//   BucketQueue q;
//   q.Add(index, bucket, enqueue_time, aged, less);  // a job enters pending
//   q.Remove(index);                            // it leaves (started, failed, cancelled)
//   q.Order(plugin, now, less, out);            // the pass order into `out`
//
// `less(a, b)` compares job indexes by WithinLess (then seq): a total order.
// The enqueue times must not decrease from one Add to the next, nor `now`
// from one Order to the next (an injected clock that goes back makes Usable()
// false for good, and the scheduler sorts in full).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <vector>

#include "berth/common/quantity.h"
#include "berth/framework/bucketed_order.h"

namespace berth::scheduler {

class BucketQueue {
 public:
  using Less = std::function<bool(int32_t, int32_t)>;

  // `aged`: the order promotes jobs (PromoteAfter() > 0), so keep their times.
  void Add(int32_t index, int32_t bucket, TimeUs enqueue_time, bool aged, const Less& less);
  // Leaves the queue (no effect when not in it).
  void Remove(int32_t index);
  // Many leave at once (the end of a pass): one sweep per bucket touched.
  void RemoveAll(std::span<const int32_t> indexes);
  // Moves the jobs that have waited `promote_after` (> 0) by `now` to the
  // promoted list, asks `plugin` to order the buckets, and writes the pass
  // order. False (and `out` untouched) when the plugin cannot order them.
  bool Order(const framework::BucketedOrder& plugin, TimeUs now, const Less& less, std::vector<int32_t>& out);
  bool Usable() const { return usable_; }
  // The last Order's pass order in runs: the promoted jobs (bucket -1), then
  // each bucket's jobs, as [begin, end) positions in `out`.
  struct Segment {
    int32_t bucket = -1;
    size_t begin = 0;
    size_t end = 0;
  };
  const std::vector<Segment>& segments() const { return segments_; }
  size_t size() const { return size_; }

 private:
  enum : uint8_t { kNone = 0, kBucket = 1, kPromoted = 2 };
  struct Aged {
    TimeUs time = 0;
    int32_t index = 0;
  };
  // One bucket's jobs in order: list[head, end). The jobs a pass starts are
  // mostly a bucket's first ones, so removing them moves the head instead of
  // the whole list; the list is compacted once the head passes its half.
  struct Bucket {
    std::vector<int32_t> list;
    size_t head = 0;
    bool empty() const { return head == list.size(); }
    std::vector<int32_t>::const_iterator begin() const { return list.begin() + static_cast<std::ptrdiff_t>(head); }
    std::vector<int32_t>::const_iterator end() const { return list.end(); }
  };
  void Grow(int32_t index);
  static void InsertSorted(Bucket& bucket, int32_t index, const Less& less);
  // Drops the bucket's jobs marked in mark_ (`marked` of them).
  void EraseMarked(Bucket& bucket, size_t marked);

  std::vector<Bucket> buckets_;  // by bucket id
  std::vector<size_t> marked_in_;  // scratch: per bucket, jobs marked by RemoveAll
  std::vector<int32_t> nonempty_;              // scratch for Order
  std::vector<int32_t> promoted_;
  std::vector<Segment> segments_;
  std::vector<uint8_t> where_;                 // per job index
  std::vector<int32_t> bucket_of_;             // per job index
  std::vector<TimeUs> enqueued_;               // per job index: time of its last Add
  std::deque<Aged> aged_;                      // Adds in time order (for promotion; stale entries skipped)
  std::vector<uint8_t> mark_;                  // scratch for RemoveAll
  size_t size_ = 0;
  TimeUs last_now_ = INT64_MIN;
  bool usable_ = true;
};

}  // namespace berth::scheduler
