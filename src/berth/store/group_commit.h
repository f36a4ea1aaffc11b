// Group commit shared by the store implementations: Append() only queues; one
// background thread takes every queued batch (up to a record limit), writes
// them in one transaction through WriteBatch(), and then runs their callbacks.
// Many concurrent submissions thus share one fsync.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <span>
#include <thread>

#include "berth/store/store.h"

namespace berth::store {

class GroupCommitStore : public Store {
 public:
  explicit GroupCommitStore(StoreOptions options);
  ~GroupCommitStore() override;

  void Append(Fence fence, std::vector<Record> records, AppendDone done) final;
  void Flush() final;

 protected:
  // Writes `records` durably in one transaction if `term` is the newest term
  // granted, assigning each record's revision and term. All or nothing.
  // FailedPrecondition when fenced out; any other error fails the batch.
  virtual Status WriteBatch(int64_t term, std::span<Record> records) = 0;
  // Starts the committer; subclasses call it once they are ready to write.
  void Start();
  // Stops the committer after the queued batches are done; subclasses call it
  // in their destructor, before their own members go away.
  void Stop();

 private:
  struct Pending {
    Fence fence;
    std::vector<Record> records;
    AppendDone done;
    TimeUs arrived = 0;
  };
  void Run();

  StoreOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;       // work queued, or stopping
  std::condition_variable idle_cv_;  // a commit finished
  std::deque<Pending> queue_;
  int64_t queued_seq_ = 0;  // batches ever queued
  int64_t done_seq_ = 0;    // batches ever completed
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace berth::store
