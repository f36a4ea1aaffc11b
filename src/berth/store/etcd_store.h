// The replicated store: the log in etcd, for several `berth serve` replicas
// of which one leads (docs/adr/0006-etcd-store-and-election.md).
//
// Keys (prefix "/berth" by default):
//   <prefix>/leader           the election key, on the leader's lease; its create_revision is the term
//   <prefix>/log/<20 digits>  one record each, numbered 1, 2, ... in append order
// Acquire() campaigns (blocking while another replica leads) and finds the
// last record's number. Every write is one txn that compares the leader key
// (create_revision == term and value == this candidate) and that the first
// key it writes does not exist yet, so a deposed leader's write is refused
// and a retried write is never applied twice. Batches larger than etcd's
// limits (128 ops, 1.5 MiB per request) are written as several txns.
//
// A write whose outcome stays unknown (no answer within `write_deadline`), or
// that fails in any way under the term held, ends the term here: later writes
// under it are refused and StoreOptions::on_lost runs, so the process steps
// down and the next leader rebuilds from what etcd holds.
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "berth/store/etcd_client.h"
#include "berth/store/etcd_election.h"
#include "berth/store/group_commit.h"

namespace berth::store {

struct EtcdStoreOptions {
  std::string prefix = "/berth";
  int64_t lease_ttl_s = 4;  // see etcd_election.h on the timing
  TimeUs poll_interval = 200'000;
  TimeUs write_deadline = 5'000'000;  // longest a write retries an unanswered txn
  // How long one write attempt waits for one member's answer: the first
  // attempt waits `write_attempt_timeout`, each one after an unanswered
  // round 1.5 times longer, up to `write_attempt_timeout_max`. A member that
  // still follows a dead etcd leader holds a write until this runs out, so it
  // bounds what a member's death adds to etcd's own election; the growth
  // keeps a slow but healthy etcd writable.
  TimeUs write_attempt_timeout = 300'000;
  TimeUs write_attempt_timeout_max = 2'000'000;
  int64_t max_txn_ops = 128;          // etcd's --max-txn-ops default
  int64_t max_txn_bytes = 1'000'000;  // JSON bytes of one txn; etcd accepts 1.5 MiB by default
  int64_t load_page = 1000;           // records per range request of Load()
  std::string candidate;              // see Store::Announce; default "pid@host"
};

class EtcdStore final : public GroupCommitStore {
 public:
  // `endpoints`: "http://HOST:PORT,..." (the part after "etcd:"). Fails
  // (kUnavailable) when no endpoint answers.
  static StatusOr<std::unique_ptr<EtcdStore>> Open(const std::string& endpoints, StoreOptions options,
                                                   EtcdStoreOptions etcd = {});
  ~EtcdStore() override;

  std::string Describe() const override { return "etcd:" + endpoints_text_; }
  StatusOr<Fence> Acquire() override;
  StatusOr<Loaded> Load() override;
  void Interrupt() override { election_->Interrupt(); }
  std::string Leader() const override { return election_->leader(); }
  void Announce(std::string candidate) override;

 private:
  EtcdStore(std::string endpoints_text, std::vector<std::string> endpoints, StoreOptions options,
            EtcdStoreOptions etcd);
  Status WriteBatch(int64_t term, std::span<Record> records) override;
  // One txn of records numbered from `first`, retried until its outcome is known.
  Status WriteChunk(int64_t term, int64_t first, std::span<Record> records, std::span<const std::string> values);
  std::string LogKey(int64_t seq) const;

  std::string endpoints_text_;
  std::vector<std::string> endpoints_;
  EtcdStoreOptions etcd_;
  std::string leader_key_, log_prefix_;
  std::unique_ptr<LeaderElection> election_;
  std::mutex reader_mu_;       // reader_ is used by one caller at a time
  EtcdClient reader_;          // Acquire, Load
  EtcdClient writer_;          // the committer thread only
  std::mutex mu_;
  int64_t next_seq_ = 1;       // the number of the next record written under the term held
  int64_t broken_term_ = 0;    // a term whose writes are refused here (one failed)
};

// Encoding of one record as an etcd value: "kind job time term keylen\n" + key + body.
std::string EncodeEtcdRecord(const Record& r);
StatusOr<Record> DecodeEtcdRecord(std::string_view value);

}  // namespace berth::store
