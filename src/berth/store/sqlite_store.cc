// SQLite store: schema, fencing, group-committed inserts, load.
#include "berth/store/sqlite_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace berth::store {
namespace {

constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS records ("
    "  rev INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  kind INTEGER NOT NULL, job INTEGER NOT NULL, time INTEGER NOT NULL,"
    "  key TEXT NOT NULL, body BLOB NOT NULL, term INTEGER NOT NULL);"
    "INSERT OR IGNORE INTO meta (k, v) VALUES ('term', 0);"
    "INSERT OR IGNORE INTO meta (k, v) VALUES ('schema', 1);";

// Finalizes a statement when it goes out of scope.
struct Stmt {
  sqlite3_stmt* s = nullptr;
  ~Stmt() { sqlite3_finalize(s); }
};

}  // namespace

StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& path, StoreOptions options) {
  if (path.empty()) return InvalidArgument("sqlite store: empty path");
  std::error_code ec;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) return Unavailable("sqlite store: cannot create folder " + parent.string() + ": " + ec.message());
  const bool exclusive = options.exclusive;
  std::unique_ptr<SqliteStore> store(new SqliteStore(path, std::move(options)));
  if (exclusive) BERTH_RETURN_IF_ERROR(store->Lock());
  BERTH_RETURN_IF_ERROR(store->Init());
  store->Start();
  return store;
}

SqliteStore::~SqliteStore() {
  Stop();
  sqlite3_finalize(insert_);
  if (db_) sqlite3_close(db_);
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

Status SqliteStore::Lock() {
  const std::string lock_path = path_ + ".lock";
  lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0)
    return Unavailable("sqlite store " + path_ + ": cannot open the lock file " + lock_path + ": " +
                       std::strerror(errno));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char holder[64] = {0};
    const ssize_t n = ::pread(lock_fd_, holder, sizeof holder - 1, 0);
    std::string who = n > 0 ? std::string(holder, static_cast<size_t>(n)) : "";
    while (!who.empty() && (who.back() == '\n' || who.back() == ' ')) who.pop_back();
    ::close(lock_fd_);
    lock_fd_ = -1;
    if (err == EWOULDBLOCK)
      return FailedPrecondition("sqlite store " + path_ + ": another process" +
                                (who.empty() ? std::string() : " (pid " + who + ")") + " holds " + lock_path +
                                "; only one berth serve may use a SQLite store at a time (stop it first, or "
                                "use --store etcd:... for replicas)");
    return Unavailable("sqlite store " + path_ + ": cannot lock " + lock_path + ": " + std::strerror(err));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(lock_fd_, 0) == 0) (void)!::pwrite(lock_fd_, pid.data(), pid.size(), 0);
  return Status::Ok();
}

Status SqliteStore::Error(const std::string& what) const {
  return Unavailable("sqlite store " + path_ + ": " + what + ": " + (db_ ? sqlite3_errmsg(db_) : "not open"));
}

Status SqliteStore::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = err ? err : "unknown error";
    sqlite3_free(err);
    return Unavailable("sqlite store " + path_ + ": " + m);
  }
  return Status::Ok();
}

Status SqliteStore::Init() {
  if (sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK)
    return Error("open");
  sqlite3_busy_timeout(db_, 10000);
  BERTH_RETURN_IF_ERROR(Exec("PRAGMA journal_mode=WAL;"));
  BERTH_RETURN_IF_ERROR(Exec("PRAGMA synchronous=FULL;"));
  BERTH_RETURN_IF_ERROR(Exec(kSchema));
  if (sqlite3_prepare_v2(db_, "INSERT INTO records (kind, job, time, key, body, term) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                         -1, &insert_, nullptr) != SQLITE_OK)
    return Error("prepare insert");
  return Status::Ok();
}

StatusOr<int64_t> SqliteStore::ReadTerm() {
  Stmt st;
  if (sqlite3_prepare_v2(db_, "SELECT v FROM meta WHERE k = 'term'", -1, &st.s, nullptr) != SQLITE_OK)
    return Error("read term");
  if (sqlite3_step(st.s) != SQLITE_ROW) return Error("read term");
  return static_cast<int64_t>(sqlite3_column_int64(st.s, 0));
}

StatusOr<Fence> SqliteStore::Acquire() {
  std::lock_guard<std::mutex> lock(db_mu_);
  BERTH_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE;"));
  Status s = Exec("UPDATE meta SET v = v + 1 WHERE k = 'term';");
  StatusOr<int64_t> term = s.ok() ? ReadTerm() : StatusOr<int64_t>(s);
  if (!term.ok()) {
    (void)Exec("ROLLBACK;");
    return term.status();
  }
  BERTH_RETURN_IF_ERROR(Exec("COMMIT;"));
  return Fence{*term};
}

Status SqliteStore::WriteBatch(int64_t term, std::span<Record> records) {
  std::lock_guard<std::mutex> lock(db_mu_);
  BERTH_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE;"));
  auto fail = [&](Status s) {
    (void)Exec("ROLLBACK;");
    return s;
  };
  StatusOr<int64_t> current = ReadTerm();
  if (!current.ok()) return fail(current.status());
  if (*current != term) {
    Status fenced = FailedPrecondition("fenced: the store's term is " + std::to_string(*current) +
                                       ", this writer holds " + std::to_string(term) +
                                       " (another process took over " + path_ + ")");
    if (!lost_reported_ && on_lost_) {
      lost_reported_ = true;
      on_lost_(fenced);
    }
    return fail(fenced);
  }
  for (Record& r : records) {
    sqlite3_reset(insert_);
    sqlite3_bind_int(insert_, 1, static_cast<int>(r.kind));
    sqlite3_bind_int64(insert_, 2, r.job);
    sqlite3_bind_int64(insert_, 3, r.time);
    sqlite3_bind_text(insert_, 4, r.key.data(), static_cast<int>(r.key.size()), SQLITE_STATIC);
    sqlite3_bind_blob(insert_, 5, r.body.data(), static_cast<int>(r.body.size()), SQLITE_STATIC);
    sqlite3_bind_int64(insert_, 6, term);
    if (sqlite3_step(insert_) != SQLITE_DONE) {
      Status e = Error("insert");
      sqlite3_reset(insert_);
      return fail(e);
    }
    r.revision = sqlite3_last_insert_rowid(db_);
    r.term = term;
  }
  sqlite3_reset(insert_);
  if (sqlite3_exec(db_, "COMMIT;", nullptr, nullptr, nullptr) != SQLITE_OK) return fail(Error("commit"));
  return Status::Ok();
}

StatusOr<Loaded> SqliteStore::Load() {
  std::lock_guard<std::mutex> lock(db_mu_);
  Stmt st;
  if (sqlite3_prepare_v2(db_, "SELECT rev, kind, job, time, key, body, term FROM records ORDER BY rev", -1, &st.s,
                         nullptr) != SQLITE_OK)
    return Error("load");
  Loaded out;
  int rc;
  while ((rc = sqlite3_step(st.s)) == SQLITE_ROW) {
    Record r;
    r.revision = sqlite3_column_int64(st.s, 0);
    const int kind = sqlite3_column_int(st.s, 1);
    if (!IsValidRecordKind(kind))
      return Internal("sqlite store " + path_ + ": record " + std::to_string(r.revision) + " has unknown kind " +
                      std::to_string(kind));
    r.kind = static_cast<RecordKind>(kind);
    r.job = sqlite3_column_int64(st.s, 2);
    r.time = sqlite3_column_int64(st.s, 3);
    const auto* key = reinterpret_cast<const char*>(sqlite3_column_text(st.s, 4));
    r.key.assign(key ? key : "", static_cast<size_t>(sqlite3_column_bytes(st.s, 4)));
    const auto* body = static_cast<const char*>(sqlite3_column_blob(st.s, 5));
    r.body.assign(body ? body : "", static_cast<size_t>(sqlite3_column_bytes(st.s, 5)));
    r.term = sqlite3_column_int64(st.s, 6);
    out.revision = r.revision;
    out.records.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return Error("load");
  return out;
}

}  // namespace berth::store
