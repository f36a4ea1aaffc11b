// A small client for etcd's v3 JSON gateway (etcd 3.4 serves it at /v3/...):
// range, txn, lease grant/keepalive/revoke. Keys and values are bytes (base64
// on the wire, done here); int64 fields travel as JSON strings.
//
// One EtcdClient holds one keep-alive connection and is used by one thread at
// a time (the store gives each of its threads its own). With several
// endpoints it sends to the current one and moves to the next when a request
// gets no answer or etcd answers "unavailable".
//
//   EtcdClient c(ParseEtcdEndpoints("http://127.0.0.1:2379").value());
//   auto r = c.Range("/berth/leader", {});
//
// Errors: kUnavailable when no endpoint answered or etcd could not serve the
// request (its outcome may be unknown: a write may still have applied);
// kInvalidArgument / kNotFound / kFailedPrecondition / kOutOfRange when etcd
// refused the request (nothing applied).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "berth/common/quantity.h"
#include "berth/common/status.h"

namespace httplib { class Client; }

namespace berth::store {

// "http://h1:2379,http://h2:2379" -> {"http://h1:2379", "http://h2:2379"}.
// Only http:// (the gateway on loopback or a private network); no TLS yet.
StatusOr<std::vector<std::string>> ParseEtcdEndpoints(const std::string& list);

std::string Base64Encode(std::string_view bytes);
StatusOr<std::string> Base64Decode(std::string_view text);

// The first key after every key that starts with `prefix` (etcd's range_end
// for a prefix scan): "/a/" -> "/a0".
std::string PrefixEnd(std::string prefix);

struct EtcdKv {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t lease = 0;
};

// One comparison of a txn; the result is always EQUAL.
struct EtcdCompare {
  enum class Target { kCreate, kValue };
  std::string key;
  Target target = Target::kCreate;
  int64_t create_revision = 0;  // kCreate: 0 means "the key does not exist"
  std::string value;            // kValue
};

struct EtcdOp {
  enum class Type { kPut, kRange, kDelete };
  Type type = Type::kPut;
  std::string key;
  std::string value;  // kPut
  int64_t lease = 0;  // kPut: attach to this lease (0: none)

  static EtcdOp Put(std::string key, std::string value, int64_t lease = 0) {
    return {Type::kPut, std::move(key), std::move(value), lease};
  }
  static EtcdOp Get(std::string key) { return {Type::kRange, std::move(key), {}, 0}; }
  static EtcdOp Delete(std::string key) { return {Type::kDelete, std::move(key), {}, 0}; }
};

struct EtcdTxnResult {
  bool succeeded = false;
  int64_t revision = 0;                    // the store's revision after the txn
  std::vector<std::vector<EtcdKv>> ranges;  // the keys each range op of the branch taken found, in op order
};

struct EtcdRangeOptions {
  std::string range_end;  // "" = the key alone
  int64_t limit = 0;      // 0 = no limit
  int64_t revision = 0;   // read at this revision (0 = newest)
  bool keys_only = false;
  bool descend = false;   // sort by key, descending
};

struct EtcdRange {
  std::vector<EtcdKv> kvs;
  bool more = false;     // the limit cut the answer short
  int64_t revision = 0;  // the store's revision the answer reflects
  int64_t raft_term = 0; // the answering member's raft term
};

// One lease renewal's answer.
struct EtcdRenewal {
  int64_t ttl = 0;        // seconds left (0: the lease has expired)
  int64_t raft_term = 0;  // the answering member's raft term
};

struct EtcdClientOptions {
  TimeUs connect_timeout = 1'000'000;
  TimeUs request_timeout = 5'000'000;  // longest wait for one answer
};

class EtcdClient {
 public:
  explicit EtcdClient(std::vector<std::string> endpoints, EtcdClientOptions options = {});
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  StatusOr<EtcdRange> Range(const std::string& key, const EtcdRangeOptions& options);
  StatusOr<EtcdTxnResult> Txn(const std::vector<EtcdCompare>& compare, const std::vector<EtcdOp>& success,
                              const std::vector<EtcdOp>& failure);
  // A lease of `ttl_s` seconds; its id.
  StatusOr<int64_t> Grant(int64_t ttl_s);
  // Renews the lease once; the seconds it has left (0: it has expired).
  StatusOr<int64_t> KeepAlive(int64_t lease);
  // The same, with the answering member's raft term.
  StatusOr<EtcdRenewal> Renew(int64_t lease);
  // Ends the lease and deletes its keys (NotFound if it had already expired).
  Status Revoke(int64_t lease);

  const std::string& endpoint() const { return endpoints_[current_]; }
  // Sends the next requests to the next endpoint: the current member answered
  // but its answer could not be trusted (e.g. a renewal it could not confirm).
  void NextEndpoint() { current_ = (current_ + 1) % endpoints_.size(); }
  // The longest wait for one answer from one member, from the next request
  // on (the store shortens it for writes, see EtcdStore::WriteChunk).
  void set_request_timeout(TimeUs timeout);
  TimeUs request_timeout() const { return options_.request_timeout; }

 private:
  // POSTs `body` (JSON text) to `path` on the current endpoint, moving on to
  // the others when there is no answer. The answer's JSON text.
  StatusOr<std::string> Post(const std::string& path, const std::string& body);
  httplib::Client& Connection(size_t i);

  std::vector<std::string> endpoints_;
  EtcdClientOptions options_;
  std::vector<std::unique_ptr<httplib::Client>> clients_;
  size_t current_ = 0;
};

}  // namespace berth::store
