// A store in memory, for tests: the same contract as the embedded store
// (group commit, fencing) without a disk. Two MemoryStores made from one
// MemoryStore::Data share their records, as two processes share a file, so a
// test can "restart" a service on what the last one wrote.
#pragma once

#include <memory>
#include <mutex>

#include "berth/store/group_commit.h"

namespace berth::store {

class MemoryStore final : public GroupCommitStore {
 public:
  struct Data {
    std::mutex mu;
    std::vector<Record> records;
    int64_t term = 0;
    int64_t revision = 0;
    bool fail_writes = false;  // tests: make every commit fail (Unavailable)
  };

  explicit MemoryStore(std::shared_ptr<Data> data = std::make_shared<Data>(), StoreOptions options = {});
  ~MemoryStore() override;

  std::string Describe() const override { return "memory:"; }
  StatusOr<Fence> Acquire() override;
  StatusOr<Loaded> Load() override;
  const std::shared_ptr<Data>& data() const { return data_; }

 private:
  Status WriteBatch(int64_t term, std::span<Record> records) override;
  std::shared_ptr<Data> data_;
};

}  // namespace berth::store
