// The etcd store: record encoding, fenced txns, load.
#include "berth/common/clock.h"
#include "berth/store/etcd_store.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <thread>

namespace berth::store {
namespace {

constexpr int kSeqDigits = 20;

bool ParseInt(std::string_view s, int64_t& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

std::string DefaultCandidate() {
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::to_string(::getpid()) + "@" + host;
}

// Bytes a put adds to the txn's JSON (base64 grows 4/3; keys and framing).
int64_t PutBytes(const std::string& value) { return static_cast<int64_t>(value.size() + 2) / 3 * 4 + 128; }

}  // namespace

std::string EncodeEtcdRecord(const Record& r) {
  std::string out = std::to_string(static_cast<int>(r.kind)) + " " + std::to_string(r.job) + " " +
                    std::to_string(r.time) + " " + std::to_string(r.term) + " " + std::to_string(r.key.size()) + "\n";
  out.reserve(out.size() + r.key.size() + r.body.size());
  out += r.key;
  out += r.body;
  return out;
}

StatusOr<Record> DecodeEtcdRecord(std::string_view value) {
  const size_t nl = value.find('\n');
  if (nl == std::string_view::npos) return InvalidArgument("record without a header line");
  std::string_view head = value.substr(0, nl);
  int64_t fields[5];
  for (int i = 0; i < 5; ++i) {
    const size_t sp = head.find(' ');
    std::string_view f = i < 4 ? head.substr(0, sp) : head;
    if ((i < 4 && sp == std::string_view::npos) || !ParseInt(f, fields[i]))
      return InvalidArgument("bad record header '" + std::string(value.substr(0, nl)) + "'");
    if (i < 4) head.remove_prefix(sp + 1);
  }
  if (!IsValidRecordKind(static_cast<int>(fields[0]))) return InvalidArgument("unknown record kind " + std::to_string(fields[0]));
  const std::string_view rest = value.substr(nl + 1);
  if (fields[4] < 0 || static_cast<uint64_t>(fields[4]) > rest.size()) return InvalidArgument("record key longer than the record");
  Record r;
  r.kind = static_cast<RecordKind>(fields[0]);
  r.job = fields[1];
  r.time = fields[2];
  r.term = fields[3];
  r.key = std::string(rest.substr(0, static_cast<size_t>(fields[4])));
  r.body = std::string(rest.substr(static_cast<size_t>(fields[4])));
  return r;
}

StatusOr<std::unique_ptr<EtcdStore>> EtcdStore::Open(const std::string& endpoints, StoreOptions options,
                                                     EtcdStoreOptions etcd) {
  BERTH_ASSIGN_OR_RETURN(std::vector<std::string> list, ParseEtcdEndpoints(endpoints));
  if (etcd.prefix.empty() || etcd.prefix[0] != '/' || etcd.prefix.back() == '/')
    return InvalidArgument("etcd store: key prefix '" + etcd.prefix + "' must start with '/' and not end with it");
  if (etcd.lease_ttl_s < 2) return InvalidArgument("etcd store: the lease TTL must be at least 2 s");
  if (etcd.max_txn_ops < 1 || etcd.max_txn_bytes < 1024 || etcd.load_page < 1 || etcd.write_deadline <= 0 || etcd.poll_interval <= 0)
    return InvalidArgument("etcd store: txn limits, write deadline and poll interval must be positive");
  if (etcd.write_attempt_timeout <= 0 || etcd.write_attempt_timeout_max < etcd.write_attempt_timeout)
    return InvalidArgument("etcd store: the write attempt timeout must be positive and at most its maximum");
  // One group commit is one txn unless its bytes need more.
  options.max_batch_records = std::min(options.max_batch_records, etcd.max_txn_ops);
  std::unique_ptr<EtcdStore> store(new EtcdStore(endpoints, std::move(list), std::move(options), std::move(etcd)));
  {
    std::lock_guard<std::mutex> lock(store->reader_mu_);
    StatusOr<EtcdRange> probe = store->reader_.Range(store->leader_key_, {});
    if (!probe.ok()) return Unavailable("etcd store " + endpoints + ": " + probe.status().message());
  }
  store->Start();
  return store;
}

EtcdStore::EtcdStore(std::string endpoints_text, std::vector<std::string> endpoints, StoreOptions options,
                     EtcdStoreOptions etcd)
    : GroupCommitStore(options),
      endpoints_text_(std::move(endpoints_text)),
      endpoints_(std::move(endpoints)),
      etcd_(std::move(etcd)),
      leader_key_(etcd_.prefix + "/leader"),
      log_prefix_(etcd_.prefix + "/log/"),
      reader_(endpoints_, {1'000'000, 10'000'000}),
      writer_(endpoints_, {500'000, etcd_.write_attempt_timeout}) {
  ElectionOptions eo;
  eo.key = leader_key_;
  eo.value = etcd_.candidate.empty() ? DefaultCandidate() : etcd_.candidate;
  eo.ttl_s = etcd_.lease_ttl_s;
  eo.poll_interval = etcd_.poll_interval;
  election_ = std::make_unique<LeaderElection>(endpoints_, std::move(eo), std::move(options.on_lost));
}

EtcdStore::~EtcdStore() {
  Stop();  // the committer, before the clients and the election go
}

void EtcdStore::Announce(std::string candidate) {
  if (!candidate.empty()) election_->SetValue(std::move(candidate));
}

std::string EtcdStore::LogKey(int64_t seq) const {
  char digits[kSeqDigits + 1];
  std::snprintf(digits, sizeof digits, "%020lld", static_cast<long long>(seq));
  return log_prefix_ + digits;
}

StatusOr<Fence> EtcdStore::Acquire() {
  if (election_->term() != 0) election_->Resign();  // a newer term than the one held
  BERTH_ASSIGN_OR_RETURN(int64_t term, election_->Campaign());
  // The last record's number. Writes under earlier terms are all visible now
  // (they committed before the leader key was created) or will be refused.
  StatusOr<EtcdRange> last = Unavailable("not read");
  for (int attempt = 0; attempt < 20 && !last.ok(); ++attempt) {
    if (attempt) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::lock_guard<std::mutex> lock(reader_mu_);
    EtcdRangeOptions o;
    o.range_end = PrefixEnd(log_prefix_);
    o.limit = 1;
    o.keys_only = true;
    o.descend = true;
    last = reader_.Range(log_prefix_, o);
  }
  if (!last.ok()) {
    election_->Resign();
    return last.status();
  }
  int64_t next = 1;
  if (!last->kvs.empty()) {
    int64_t seq = 0;
    if (!ParseInt(std::string_view(last->kvs[0].key).substr(log_prefix_.size()), seq)) {
      election_->Resign();
      return Internal("etcd store: unexpected log key '" + last->kvs[0].key + "'");
    }
    next = seq + 1;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    next_seq_ = next;
  }
  return Fence{term};
}

StatusOr<Loaded> EtcdStore::Load() {
  std::lock_guard<std::mutex> lock(reader_mu_);
  Loaded out;
  EtcdRangeOptions o;
  o.range_end = PrefixEnd(log_prefix_);
  o.limit = etcd_.load_page;
  std::string from = log_prefix_;
  for (;;) {
    BERTH_ASSIGN_OR_RETURN(EtcdRange page, reader_.Range(from, o));
    if (o.revision == 0) o.revision = page.revision;  // every page from one snapshot
    for (EtcdKv& kv : page.kvs) {
      int64_t seq = 0;
      if (!ParseInt(std::string_view(kv.key).substr(log_prefix_.size()), seq) || seq <= out.revision)
        return Internal("etcd store: unexpected log key '" + kv.key + "'");
      StatusOr<Record> r = DecodeEtcdRecord(kv.value);
      if (!r.ok()) return Internal("etcd store: " + kv.key + ": " + r.status().message());
      r->revision = seq;
      out.revision = seq;
      out.records.push_back(std::move(r).value());
    }
    if (!page.more || page.kvs.empty()) break;
    from = page.kvs.back().key + '\0';
  }
  return out;
}

Status EtcdStore::WriteBatch(int64_t term, std::span<Record> records) {
  int64_t seq;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (term == broken_term_)
      return FailedPrecondition("etcd store: a write under term " + std::to_string(term) +
                                " failed; this process writes no more under it");
    seq = next_seq_;
  }
  std::vector<std::string> values;
  values.reserve(records.size());
  for (Record& r : records) {
    r.term = term;
    values.push_back(EncodeEtcdRecord(r));
  }
  Status s;
  size_t i = 0;
  while (i < records.size()) {
    size_t j = i;
    int64_t bytes = 0;
    while (j < records.size() && static_cast<int64_t>(j - i) < etcd_.max_txn_ops) {
      const int64_t b = PutBytes(values[j]);
      if (j > i && bytes + b > etcd_.max_txn_bytes) break;
      bytes += b;
      ++j;
    }
    s = WriteChunk(term, seq, records.subspan(i, j - i), std::span<const std::string>(values).subspan(i, j - i));
    if (!s.ok()) break;
    for (size_t k = i; k < j; ++k) records[k].revision = seq + static_cast<int64_t>(k - i);
    seq += static_cast<int64_t>(j - i);
    i = j;
  }
  if (!s.ok()) {
    // The batch is not acknowledged, yet part of it may be in etcd, and the
    // writer's state has moved on: this term ends here, and the next leader
    // rebuilds from what etcd holds.
    {
      std::lock_guard<std::mutex> lock(mu_);
      broken_term_ = term;
    }
    election_->Lost(term, s);
    return s;
  }
  std::lock_guard<std::mutex> lock(mu_);
  next_seq_ = std::max(next_seq_, seq);
  return Status::Ok();
}

Status EtcdStore::WriteChunk(int64_t term, int64_t first, std::span<Record> records,
                             std::span<const std::string> values) {
  const std::string me = election_->value();
  const std::string first_key = LogKey(first);
  const std::vector<EtcdCompare> compare = {{leader_key_, EtcdCompare::Target::kCreate, term, {}},
                                            {leader_key_, EtcdCompare::Target::kValue, 0, me},
                                            {first_key, EtcdCompare::Target::kCreate, 0, {}}};
  std::vector<EtcdOp> puts;
  puts.reserve(records.size());
  for (size_t k = 0; k < records.size(); ++k) puts.push_back(EtcdOp::Put(LogKey(first + static_cast<int64_t>(k)), values[k]));
  const std::vector<EtcdOp> check = {EtcdOp::Get(leader_key_), EtcdOp::Get(first_key)};
  const TimeUs deadline = SteadyNowUs() + etcd_.write_deadline;
  TimeUs backoff = 20'000;
  // Each attempt waits this long for one member, then moves to the next: a
  // member that follows a dead leader holds a write until etcd's request
  // timeout, and the write is safe to resend (it lands once, see above).
  TimeUs wait = etcd_.write_attempt_timeout;
  Status last;
  for (;;) {
    writer_.set_request_timeout(wait);
    const TimeUs sent = SteadyNowUs();
    StatusOr<EtcdTxnResult> r = writer_.Txn(compare, puts, check);
    if (r.ok()) {
      if (r->succeeded) return Status::Ok();
      static const std::vector<EtcdKv> kNone;
      const std::vector<EtcdKv>& leader = r->ranges.size() > 0 ? r->ranges[0] : kNone;
      const std::vector<EtcdKv>& log = r->ranges.size() > 1 ? r->ranges[1] : kNone;
      if (leader.empty() || leader[0].create_revision != term || leader[0].value != me)
        return FailedPrecondition(
            "fenced: this writer holds term " + std::to_string(term) + " but " +
            (leader.empty() ? std::string("no process leads")
                            : "the leader key is term " + std::to_string(leader[0].create_revision) + " of " +
                                  leader[0].value));
      if (!log.empty()) {
        // An earlier send of this write whose answer was lost applied: done. That
        // send may be an earlier attempt here or the same attempt sent to the
        // member before (the client moves on to the next member when one does
        // not answer), so the attempt count does not matter; the value does (it
        // holds this term, and only this writer writes under it).
        if (log[0].value == values[0]) return Status::Ok();
        return Internal("etcd store: " + first_key + " is already written");
      }
      last = Unavailable("txn refused with no compare failing");  // changed in between: retry
    } else {
      last = r.status();
      // etcd refused the request itself (too large, ...): nothing applied, and a retry would be refused too.
      if (last.code() != StatusCode::kUnavailable) return last;
    }
    const TimeUs now = SteadyNowUs();
    if (now + backoff > deadline)
      return Unavailable("etcd store: no answer to a write for " + std::to_string(etcd_.write_deadline / 1'000'000) +
                         " s, its outcome is unknown: " + last.message());
    if (now - sent >= wait) {
      // A member held the attempt until its timeout: try again at once, and
      // give the next round longer in case etcd is only slow.
      wait = std::min(wait * 3 / 2, etcd_.write_attempt_timeout_max);
      continue;
    }
    // Refused at once (no leader yet, connection refused): back off a little.
    std::this_thread::sleep_for(std::chrono::microseconds(backoff));
    backoff = std::min<TimeUs>(backoff * 2, 200'000);  // retries soon after etcd elects a new leader
  }
}

}  // namespace berth::store
