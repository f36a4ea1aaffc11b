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

void BucketQueue::InsertSorted(std::vector<int32_t>& list, int32_t index, const Less& less) {
  // New jobs usually go last (the latest seq of their priority).
  if (list.empty() || less(list.back(), index)) {
    list.push_back(index);
    return;
  }
  list.insert(std::upper_bound(list.begin(), list.end(), index, less), index);
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
  std::vector<int32_t>& list = where_[index] == kBucket ? buckets_[bucket_of_[index]] : promoted_;
  auto it = std::find(list.begin(), list.end(), index);
  assert(it != list.end());
  list.erase(it);
  where_[index] = kNone;
  --size_;
}

void BucketQueue::RemoveAll(std::span<const int32_t> indexes) {
  bool promoted = false;
  nonempty_.clear();  // scratch: the buckets touched
  for (int32_t i : indexes) {
    if (i >= static_cast<int32_t>(where_.size()) || where_[i] == kNone || mark_[i]) continue;
    mark_[i] = 1;
    if (where_[i] == kPromoted) promoted = true; else nonempty_.push_back(bucket_of_[i]);
  }
  std::sort(nonempty_.begin(), nonempty_.end());
  nonempty_.erase(std::unique(nonempty_.begin(), nonempty_.end()), nonempty_.end());
  auto marked = [this](int32_t i) { return mark_[i] != 0; };
  for (int32_t b : nonempty_) std::erase_if(buckets_[b], marked);
  if (promoted) std::erase_if(promoted_, marked);
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
      for (int32_t i : fresh) nonempty_.push_back(bucket_of_[i]);
      std::sort(nonempty_.begin(), nonempty_.end());
      nonempty_.erase(std::unique(nonempty_.begin(), nonempty_.end()), nonempty_.end());
      for (int32_t b : nonempty_) std::erase_if(buckets_[b], [this](int32_t i) { return mark_[i] != 0; });
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
