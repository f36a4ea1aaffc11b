// The state store: the service's durable log of what it accepted and decided.
// The scheduler's state is rebuilt from it after a restart (or by a new
// leader), so a job acknowledged to a client is never lost or duplicated.
//
// Records are appended in batches; a batch is durable as a whole or not at
// all, and its `done` callback runs only once it is durable. Bodies are opaque
// bytes here: the server encodes them (JSON), so every implementation (the
// embedded SQLite store, an etcd store) stores the same bytes.
//
// Fencing: writing needs a term, granted by Acquire(). Each grant is larger
// than every earlier one, and a store refuses appends made under any term but
// the newest (kFailedPrecondition): a deposed leader, or a process left over
// from before a restart, cannot write after its successor took over. An etcd
// implementation maps the term to the leader key's revision and makes every
// write a transaction that compares it.
//
// Replicated stores (etcd) are shared by several processes of which one leads:
// there Acquire() blocks while another process holds the term, and
// StoreOptions::on_lost reports that this process lost the term it held.
//
//   auto store = OpenStore("sqlite:/var/lib/berth/berth.db", {});
//   Fence f = (*store)->Acquire().value();
//   Loaded all = (*store)->Load().value();      // rebuild state
//   (*store)->Append(f, {rec}, [](const Status& s, int64_t rev) { ... });
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "berth/common/quantity.h"
#include "berth/common/status.h"

namespace berth::store {

enum class RecordKind : uint8_t {
  kJobAccepted = 1,  // a submission was accepted (key: idempotency key; body: the job)
  kJobStarted = 2,   // the scheduler placed a job (body: placements)
  kJobRequeued = 3,  // a running job went back to the queue (node failure, preemption)
  kJobFinished = 4,  // a job ended: succeeded, failed, cancelled (body: final state)
  kNodeState = 5,    // a node's administrative state changed (key: node name)
  kClusterInfo = 6,  // the cluster the writer runs on (key: "cluster"; body: its fingerprint and summary)
  kJobAssigned = 7,  // a federation dispatcher sent a job to a member (key: member; body: attempt, outcome)
  kNodeRegistered = 8,  // a node agent registered (key: node name; body: its identity and resources)
  kWorkflowAccepted = 9,  // a workflow was accepted (job: its id; key: its idempotency key; body: its spec)
  kTaskRepaired = 10,     // one task of a running job restarted in place (body: run, task, attempt, placement)
  kNodeFailed = 11,       // a node went down or reported a failed GPU (key: node name; body: the failure's weight)
};

const char* RecordKindName(RecordKind kind);
bool IsValidRecordKind(int value);

struct Record {
  RecordKind kind = RecordKind::kJobAccepted;
  int64_t job = -1;      // job id, or -1 for records about no job
  TimeUs time = 0;       // when it happened (the writer's clock)
  std::string key;       // see RecordKind
  std::string body;      // the writer's encoding; opaque to the store
  int64_t revision = 0;  // set by the store: strictly increasing in append order
  int64_t term = 0;      // set by the store: the term it was written under
};

// Writing rights granted by Acquire().
struct Fence {
  int64_t term = 0;
};

struct Loaded {
  std::vector<Record> records;  // in revision order
  int64_t revision = 0;         // the last revision (0 when empty)
};

// Runs once a batch is durable (status OK, `revision` of its last record) or
// has failed (nothing of it was written): kFailedPrecondition when fenced out
// (stop writing: another writer holds a newer term), kUnavailable otherwise.
using AppendDone = std::function<void(const Status& status, int64_t revision)>;

// Figures of one commit, for metrics.
struct CommitInfo {
  int64_t records = 0;  // records made durable by the commit
  int64_t batches = 0;  // Append calls they came from
  TimeUs latency = 0;   // from the first batch's arrival to durable
};

struct StoreOptions {
  using LostFn = std::function<void(const Status& why)>;
  // Most records written in one transaction (group commit).
  int64_t max_batch_records = 4096;
  // Called on the store's thread after each successful commit.
  std::function<void(const CommitInfo&)> on_commit;
  // Replicated stores: called once, on a store thread, when this process
  // loses the term it holds (its lease lapsed, another process took over, or
  // a write failed so that its outcome is unknown). Stop writing and
  // deciding. The SQLite store calls it too, once, when a write finds that
  // another process took a newer term in the same file.
  LostFn on_lost;
  // SQLite: hold an exclusive lock (flock) on PATH.lock while the store is
  // open, so that a second process on the same file is refused at Open
  // (kFailedPrecondition). Off only in tests that play two processes.
  bool exclusive = true;
};

class Store {
 public:
  virtual ~Store() = default;
  // "sqlite:/path/berth.db", for logs.
  virtual std::string Describe() const = 0;
  // Grants this process a term newer than any granted before.
  virtual StatusOr<Fence> Acquire() = 0;
  // Every record appended so far, in revision order.
  virtual StatusOr<Loaded> Load() = 0;
  // Queues a batch for a durable append. Batches are made durable in call
  // order; `done` runs on a store thread (never inside Append). Records'
  // revision and term fields are ignored (the store assigns them).
  virtual void Append(Fence fence, std::vector<Record> records, AppendDone done) = 0;
  // Blocks until every batch queued before the call is done.
  virtual void Flush() = 0;

  // Replicated stores only (no-ops otherwise):
  // How this process announces itself while it holds the term (opaque
  // bytes, e.g. its id and address); call before Acquire().
  virtual void Announce(std::string candidate) {}
  // The announcement of the process holding the term, as last seen; "" when
  // unknown or when the store has a single writer.
  virtual std::string Leader() const { return ""; }
  // Makes a blocked Acquire() return (kUnavailable), e.g. on shutdown.
  virtual void Interrupt() {}
};

// Opens a store by URL: "sqlite:PATH" (created if missing; its folder too),
// "etcd:http://HOST:PORT,..." (replicated; kUnavailable when no endpoint
// answers) or "memory:" (for tests).
StatusOr<std::unique_ptr<Store>> OpenStore(const std::string& url, StoreOptions options);

}  // namespace berth::store
