// A test double for a replicated store seen from a standby: a memory store
// whose Acquire() waits until the test grants the term (as etcd's does while
// another process leads), with the leader's announcement set by the test.
// Several may share one MemoryStore::Data, as processes share one etcd.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "berth/store/memory_store.h"

namespace berth::store {

class StandbyStore final : public Store {
 public:
  explicit StandbyStore(std::shared_ptr<MemoryStore::Data> data = std::make_shared<MemoryStore::Data>())
      : inner_(std::move(data)) {}
  std::string Describe() const override { return "standby:"; }
  StatusOr<Fence> Acquire() override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return granted_ || interrupted_; });
    if (interrupted_) return Unavailable("interrupted");
    return inner_.Acquire();
  }
  StatusOr<Loaded> Load() override { return inner_.Load(); }
  void Append(Fence f, std::vector<Record> r, AppendDone d) override { inner_.Append(f, std::move(r), std::move(d)); }
  void Flush() override { inner_.Flush(); }
  std::string Leader() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return leader_;
  }
  void Interrupt() override {
    std::lock_guard<std::mutex> lock(mu_);
    interrupted_ = true;
    cv_.notify_all();
  }
  // Grants the term: the blocked Acquire() returns, and `me` is the leader.
  void Grant(const std::string& me) {
    std::lock_guard<std::mutex> lock(mu_);
    granted_ = true;
    leader_ = me;
    cv_.notify_all();
  }
  void SetLeader(const std::string& l) {
    std::lock_guard<std::mutex> lock(mu_);
    leader_ = l;
  }

 private:
  MemoryStore inner_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool granted_ = false, interrupted_ = false;
  std::string leader_;
};

}  // namespace berth::store
