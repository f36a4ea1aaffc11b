// The committer thread of GroupCommitStore.
#include "berth/common/clock.h"
#include "berth/store/group_commit.h"

#include <chrono>

namespace berth::store {
GroupCommitStore::GroupCommitStore(StoreOptions options) : options_(std::move(options)) {}

GroupCommitStore::~GroupCommitStore() { Stop(); }

void GroupCommitStore::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!thread_.joinable() && !stopping_) thread_ = std::thread([this] { Run(); });
}

void GroupCommitStore::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Anything still queued (never started) fails.
  std::deque<Pending> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    left.swap(queue_);
    done_seq_ += static_cast<int64_t>(left.size());
  }
  for (auto& p : left)
    if (p.done) p.done(Unavailable("store closed"), 0);
  idle_cv_.notify_all();
}

void GroupCommitStore::Append(Fence fence, std::vector<Record> records, AppendDone done) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_ || !thread_.joinable()) {
    lock.unlock();
    if (done) done(Unavailable("store closed"), 0);
    return;
  }
  queue_.push_back(Pending{fence, std::move(records), std::move(done), SteadyNowUs()});
  ++queued_seq_;
  lock.unlock();
  cv_.notify_one();
}

void GroupCommitStore::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  const int64_t target = queued_seq_;
  idle_cv_.wait(lock, [&] { return done_seq_ >= target || (stopping_ && !thread_.joinable()); });
}

void GroupCommitStore::Run() {
  std::vector<Pending> group;
  std::vector<Record> records;
  std::vector<size_t> sizes;
  for (;;) {
    group.clear();
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      // Take consecutive batches of one term, up to the record limit (at least one batch).
      int64_t n = 0;
      const int64_t term = queue_.front().fence.term;
      while (!queue_.empty() && queue_.front().fence.term == term &&
             (group.empty() || n + static_cast<int64_t>(queue_.front().records.size()) <= options_.max_batch_records)) {
        n += static_cast<int64_t>(queue_.front().records.size());
        group.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    records.clear();
    sizes.clear();
    for (auto& p : group) {
      sizes.push_back(p.records.size());
      for (auto& r : p.records) records.push_back(std::move(r));
    }
    Status s = records.empty() ? Status::Ok() : WriteBatch(group.front().fence.term, records);
    if (s.ok() && options_.on_commit) {
      CommitInfo info;
      info.records = static_cast<int64_t>(records.size());
      info.batches = static_cast<int64_t>(group.size());
      info.latency = SteadyNowUs() - group.front().arrived;
      options_.on_commit(info);
    }
    // Callbacks: each batch learns the revision of its own last record.
    size_t offset = 0;
    for (size_t i = 0; i < group.size(); ++i) {
      auto& p = group[i];
      offset += sizes[i];
      int64_t rev = s.ok() && offset > 0 ? records[offset - 1].revision : 0;
      if (p.done) p.done(s, rev);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_seq_ += static_cast<int64_t>(group.size());
    }
    idle_cv_.notify_all();
  }
}

}  // namespace berth::store
