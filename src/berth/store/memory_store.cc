// MemoryStore, and OpenStore (which picks an implementation by URL).
#include "berth/store/memory_store.h"

#include "berth/store/etcd_store.h"
#include "berth/store/sqlite_store.h"

namespace berth::store {

const char* RecordKindName(RecordKind kind) {
  switch (kind) {
    case RecordKind::kJobAccepted: return "job_accepted";
    case RecordKind::kJobStarted: return "job_started";
    case RecordKind::kJobRequeued: return "job_requeued";
    case RecordKind::kJobFinished: return "job_finished";
    case RecordKind::kNodeState: return "node_state";
    case RecordKind::kClusterInfo: return "cluster_info";
    case RecordKind::kJobAssigned: return "job_assigned";
    case RecordKind::kNodeRegistered: return "node_registered";
    case RecordKind::kWorkflowAccepted: return "workflow_accepted";
    case RecordKind::kTaskRepaired: return "task_repaired";
    case RecordKind::kNodeFailed: return "node_failed";
  }
  return "unknown";
}

bool IsValidRecordKind(int value) { return value >= 1 && value <= 11; }

MemoryStore::MemoryStore(std::shared_ptr<Data> data, StoreOptions options)
    : GroupCommitStore(std::move(options)), data_(std::move(data)) {
  Start();
}

MemoryStore::~MemoryStore() { Stop(); }

StatusOr<Fence> MemoryStore::Acquire() {
  std::lock_guard<std::mutex> lock(data_->mu);
  return Fence{++data_->term};
}

StatusOr<Loaded> MemoryStore::Load() {
  std::lock_guard<std::mutex> lock(data_->mu);
  return Loaded{data_->records, data_->revision};
}

Status MemoryStore::WriteBatch(int64_t term, std::span<Record> records) {
  std::lock_guard<std::mutex> lock(data_->mu);
  if (data_->fail_writes) return Unavailable("memory store: writes are failing");
  if (term != data_->term)
    return FailedPrecondition("fenced: the store's term is " + std::to_string(data_->term) + ", this writer holds " +
                              std::to_string(term));
  for (Record& r : records) {
    r.revision = ++data_->revision;
    r.term = term;
    data_->records.push_back(r);
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<Store>> OpenStore(const std::string& url, StoreOptions options) {
  if (url.rfind("sqlite:", 0) == 0) {
    BERTH_ASSIGN_OR_RETURN(std::unique_ptr<SqliteStore> s, SqliteStore::Open(url.substr(7), std::move(options)));
    return std::unique_ptr<Store>(std::move(s));
  }
  if (url == "memory:") return std::unique_ptr<Store>(std::make_unique<MemoryStore>(std::make_shared<MemoryStore::Data>(), std::move(options)));
  if (url.rfind("etcd:", 0) == 0) {
    BERTH_ASSIGN_OR_RETURN(std::unique_ptr<EtcdStore> s, EtcdStore::Open(url.substr(5), std::move(options)));
    return std::unique_ptr<Store>(std::move(s));
  }
  return InvalidArgument("store '" + url + "': expected sqlite:PATH or etcd:http://HOST:PORT,...");
}

}  // namespace berth::store
