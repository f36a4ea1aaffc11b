// The bucketed pending queue: per-bucket sorted lists, promotion by age.
#include "berth/scheduler/bucket_queue.h"

#include <algorithm>
#include <cassert>

namespace berth::scheduler {

void BucketQueue::Grow(int32_t index) {
  if (index < static_cast<int32_t>(where_.size())) return;
  const size_t n = std::max<size_t>(static_cast<size_t>(index) + 1, where_.size() * 3 / 2);
  where_.resize(n, kNone);
  bucket_of_.resize(n, 0);
  enqueued_.resize(n, 0);
  mark_.resize(n, 0);
}

void BucketQueue::InsertSorted(Bucket& bucket, int32_t index, const Less& less) {
  std::vector<int32_t>& list = bucket.list;
  // New jobs usually go last (the latest seq of their priority).
  if (bucket.empty() || less(list.back(), index)) {
    list.push_back(index);
    return;
  }
  list.insert(std::upper_bound(list.begin() + static_cast<std::ptrdiff_t>(bucket.head), list.end(), index, less), index);
}

void BucketQueue::EraseMarked(Bucket& bucket, size_t marked) {
  std::vector<int32_t>& list = bucket.list;
  while (marked > 0 && bucket.head < list.size() && mark_[list[bucket.head]]) {
    ++bucket.head;
    --marked;
  }
  if (marked > 0) {
    const auto from = list.begin() + static_cast<std::ptrdiff_t>(bucket.head);
    list.erase(std::remove_if(from, list.end(), [this](int32_t i) { return mark_[i] != 0; }), list.end());
  }
  if (bucket.head == list.size()) {
    list.clear();
    bucket.head = 0;
  } else if (bucket.head > 64 && bucket.head * 2 > list.size()) {
    list.erase(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(bucket.head));
    bucket.head = 0;
  }
}

void BucketQueue::Add(int32_t index, int32_t bucket, TimeUs enqueue_time, bool aged, const Less& less) {
  assert(bucket >= 0);
  Grow(index);
  if (where_[index] != kNone) Remove(index);
  if (bucket >= static_cast<int32_t>(buckets_.size())) buckets_.resize(static_cast<size_t>(bucket) + 1);
  InsertSorted(buckets_[bucket], index, less);
  where_[index] = kBucket;
  bucket_of_[index] = bucket;
  enqueued_[index] = enqueue_time;
  if (aged) {
    if (!aged_.empty() && enqueue_time < aged_.back().time) usable_ = false;
    aged_.push_back({enqueue_time, index});
  }
  ++size_;
}

void BucketQueue::Remove(int32_t index) {
  if (index >= static_cast<int32_t>(where_.size()) || where_[index] == kNone) return;
  if (where_[index] == kBucket) {
    Bucket& bucket = buckets_[bucket_of_[index]];
    mark_[index] = 1;
    EraseMarked(bucket, 1);
    mark_[index] = 0;
  } else {
    auto it = std::find(promoted_.begin(), promoted_.end(), index);
    assert(it != promoted_.end());
    promoted_.erase(it);
  }
  where_[index] = kNone;
  --size_;
}

void BucketQueue::RemoveAll(std::span<const int32_t> indexes) {
  bool promoted = false;
  nonempty_.clear();  // scratch: the buckets touched
  marked_in_.resize(buckets_.size(), 0);
  for (int32_t i : indexes) {
    if (i >= static_cast<int32_t>(where_.size()) || where_[i] == kNone || mark_[i]) continue;
    mark_[i] = 1;
    if (where_[i] == kPromoted) {
      promoted = true;
    } else if (marked_in_[bucket_of_[i]]++ == 0) {
      nonempty_.push_back(bucket_of_[i]);
    }
  }
  for (int32_t b : nonempty_) {
    EraseMarked(buckets_[b], marked_in_[b]);
    marked_in_[b] = 0;
  }
  if (promoted) std::erase_if(promoted_, [this](int32_t i) { return mark_[i] != 0; });
  for (int32_t i : indexes) {
    if (i >= static_cast<int32_t>(where_.size()) || !mark_[i]) continue;
    mark_[i] = 0;
    where_[i] = kNone;
    --size_;
  }
}

bool BucketQueue::Order(const framework::BucketedOrder& plugin, TimeUs now, const Less& less,
                        std::vector<int32_t>& out) {
  if (now < last_now_) usable_ = false;
  last_now_ = now;
  if (!usable_) return false;
  const TimeUs promote_after = plugin.PromoteAfter();
  if (promote_after > 0) {
    std::vector<int32_t> fresh;
    while (!aged_.empty() && now - aged_.front().time >= promote_after) {
      const Aged a = aged_.front();
      aged_.pop_front();
      // Stale entries: the job left, or was queued again later.
      if (where_[a.index] == kBucket && enqueued_[a.index] == a.time && !mark_[a.index]) {
        mark_[a.index] = 1;
        fresh.push_back(a.index);
      }
    }
    if (!fresh.empty()) {
      nonempty_.clear();
      marked_in_.resize(buckets_.size(), 0);
      for (int32_t i : fresh)
        if (marked_in_[bucket_of_[i]]++ == 0) nonempty_.push_back(bucket_of_[i]);
      for (int32_t b : nonempty_) {
        EraseMarked(buckets_[b], marked_in_[b]);
        marked_in_[b] = 0;
      }
      for (int32_t i : fresh) {
        mark_[i] = 0;
        where_[i] = kPromoted;
      }
      std::sort(fresh.begin(), fresh.end(), less);
      const size_t mid = promoted_.size();
      promoted_.insert(promoted_.end(), fresh.begin(), fresh.end());
      std::inplace_merge(promoted_.begin(), promoted_.begin() + static_cast<std::ptrdiff_t>(mid), promoted_.end(),
                         less);
    }
  }
  nonempty_.clear();
  for (size_t b = 0; b < buckets_.size(); ++b)
    if (!buckets_[b].empty()) nonempty_.push_back(static_cast<int32_t>(b));
  if (!plugin.OrderBuckets(nonempty_)) return false;
  out.clear();
  out.reserve(size_);
  segments_.clear();
  out.insert(out.end(), promoted_.begin(), promoted_.end());
  if (!promoted_.empty()) segments_.push_back({-1, 0, out.size()});
  for (int32_t b : nonempty_) {
    const size_t begin = out.size();
    out.insert(out.end(), buckets_[b].begin(), buckets_[b].end());
    segments_.push_back({b, begin, out.size()});
  }
  return true;
}

}  // namespace berth::scheduler
