// The embedded store: one SQLite file in WAL mode, synchronous=FULL, so a
// commit is on disk when its callback runs. The term lives in the same file
// (table meta), and every batch checks it inside its write transaction, so
// two processes pointed at one file cannot both write.
//
// One process at a time: Open takes an exclusive flock on PATH.lock (which
// holds the owner's pid) and keeps it until the store is destroyed; a second
// Open of the same file, from any process, fails with kFailedPrecondition
// naming the lock and its holder. The kernel drops the lock when the holder
// dies (SIGKILL included), so a restart never has to clean up. Should a
// writer be fenced all the same (the lock file removed by hand, a file system
// without flock), the first refused write calls StoreOptions::on_lost.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "berth/store/group_commit.h"

struct sqlite3;
struct sqlite3_stmt;

namespace berth::store {

class SqliteStore final : public GroupCommitStore {
 public:
  // Opens (creating if needed, with its parent folder) the database at `path`.
  static StatusOr<std::unique_ptr<SqliteStore>> Open(const std::string& path, StoreOptions options);
  ~SqliteStore() override;

  std::string Describe() const override { return "sqlite:" + path_; }
  StatusOr<Fence> Acquire() override;
  StatusOr<Loaded> Load() override;

 private:
  SqliteStore(std::string path, StoreOptions options)
      : GroupCommitStore(options), path_(std::move(path)), on_lost_(std::move(options.on_lost)) {}
  Status Lock();
  Status Init();
  Status Exec(const char* sql);
  Status Error(const std::string& what) const;
  Status WriteBatch(int64_t term, std::span<Record> records) override;
  StatusOr<int64_t> ReadTerm();

  std::string path_;
  std::mutex db_mu_;  // one statement at a time on the connection
  sqlite3* db_ = nullptr;
  sqlite3_stmt* insert_ = nullptr;
  StoreOptions::LostFn on_lost_;
  bool lost_reported_ = false;  // under db_mu_
  int lock_fd_ = -1;            // PATH.lock, flocked while open
};

}  // namespace berth::store
