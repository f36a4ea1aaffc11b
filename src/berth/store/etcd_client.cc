// The etcd v3 JSON-gateway client: request building, answers, failover.
#include "berth/store/etcd_client.h"

#include <httplib.h>

#include <charconv>
#include <nlohmann/json.hpp>

namespace berth::store {

using nlohmann::json;

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int Sextet(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

// An int64 field, which the gateway writes as a string; absent means 0.
int64_t Int(const json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    int64_t v = 0;
    std::from_chars(s.data(), s.data() + s.size(), v);
    return v;
  }
  return 0;
}

bool Bool(const json& j, const char* name) {
  auto it = j.find(name);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

// A bytes field (base64); absent means empty.
StatusOr<std::string> Bytes(const json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_string()) return std::string();
  return Base64Decode(it->get_ref<const std::string&>());
}

StatusOr<EtcdKv> ParseKv(const json& j) {
  EtcdKv kv;
  BERTH_ASSIGN_OR_RETURN(kv.key, Bytes(j, "key"));
  BERTH_ASSIGN_OR_RETURN(kv.value, Bytes(j, "value"));
  kv.create_revision = Int(j, "create_revision");
  kv.mod_revision = Int(j, "mod_revision");
  kv.lease = Int(j, "lease");
  return kv;
}

StatusOr<std::vector<EtcdKv>> ParseKvs(const json& j) {
  std::vector<EtcdKv> out;
  auto it = j.find("kvs");
  if (it == j.end() || !it->is_array()) return out;
  out.reserve(it->size());
  for (const json& e : *it) {
    BERTH_ASSIGN_OR_RETURN(EtcdKv kv, ParseKv(e));
    out.push_back(std::move(kv));
  }
  return out;
}

json OpJson(const EtcdOp& op) {
  switch (op.type) {
    case EtcdOp::Type::kPut: {
      json put = {{"key", Base64Encode(op.key)}, {"value", Base64Encode(op.value)}};
      if (op.lease) put["lease"] = std::to_string(op.lease);
      return {{"request_put", std::move(put)}};
    }
    case EtcdOp::Type::kRange:
      return {{"request_range", {{"key", Base64Encode(op.key)}}}};
    case EtcdOp::Type::kDelete:
      return {{"request_delete_range", {{"key", Base64Encode(op.key)}}}};
  }
  return {};
}

// Maps an etcd error answer ({"code": gRPC code, "message": ...}) to a Status.
Status ErrorStatus(const std::string& endpoint, int http_status, const std::string& body) {
  const json j = json::parse(body, nullptr, false);
  int code = 0;
  std::string message = body.substr(0, 200);
  if (j.is_object()) {
    code = static_cast<int>(Int(j, "code"));
    if (auto it = j.find("message"); it != j.end() && it->is_string()) message = it->get<std::string>();
  }
  const std::string what = "etcd " + endpoint + ": " + message + " (HTTP " + std::to_string(http_status) + ")";
  switch (code) {
    case 3: return InvalidArgument(what);
    case 5: return NotFound(what);
    case 9: return FailedPrecondition(what);
    case 11: return OutOfRange(what);
    default: return Unavailable(what);  // timeouts, no leader, ...: the outcome of a write is unknown
  }
}

StatusOr<json> ParseAnswer(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return Unavailable("etcd: answer is not a JSON object: " + text.substr(0, 200));
  return j;
}

}  // namespace

StatusOr<std::vector<std::string>> ParseEtcdEndpoints(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string e = list.substr(start, comma - start);
    while (!e.empty() && e.back() == '/') e.pop_back();
    if (e.rfind("http://", 0) != 0 || e.size() <= 7 || e.find('/', 7) != std::string::npos)
      return InvalidArgument("etcd endpoint '" + e + "': expected http://HOST:PORT (endpoints separated by commas)");
    out.push_back(std::move(e));
    start = comma + 1;
  }
  if (out.empty()) return InvalidArgument("no etcd endpoint given");
  return out;
}

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) | (static_cast<uint8_t>(bytes[i + 1]) << 8) |
                       static_cast<uint8_t>(bytes[i + 2]);
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i < bytes.size()) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

StatusOr<std::string> Base64Decode(std::string_view text) {
  std::string out;
  out.reserve(text.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=') break;
    const int v = Sextet(c);
    if (v < 0) return InvalidArgument("etcd: bad base64 character in an answer");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

std::string PrefixEnd(std::string prefix) {
  while (!prefix.empty()) {
    if (static_cast<uint8_t>(prefix.back()) < 0xff) {
      prefix.back() = static_cast<char>(static_cast<uint8_t>(prefix.back()) + 1);
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');  // every key
}

EtcdClient::EtcdClient(std::vector<std::string> endpoints, EtcdClientOptions options)
    : endpoints_(std::move(endpoints)), options_(options) {
  clients_.resize(endpoints_.size());
}

EtcdClient::~EtcdClient() = default;

httplib::Client& EtcdClient::Connection(size_t i) {
  if (!clients_[i]) {
    auto c = std::make_unique<httplib::Client>(endpoints_[i]);
    c->set_connection_timeout(options_.connect_timeout / 1'000'000, options_.connect_timeout % 1'000'000);
    c->set_read_timeout(options_.request_timeout / 1'000'000, options_.request_timeout % 1'000'000);
    c->set_write_timeout(options_.request_timeout / 1'000'000, options_.request_timeout % 1'000'000);
    c->set_keep_alive(true);
    c->set_tcp_nodelay(true);
    clients_[i] = std::move(c);
  }
  return *clients_[i];
}

void EtcdClient::set_request_timeout(TimeUs timeout) {
  if (timeout == options_.request_timeout) return;
  options_.request_timeout = timeout;
  for (auto& c : clients_) {
    if (!c) continue;
    c->set_read_timeout(timeout / 1'000'000, timeout % 1'000'000);
    c->set_write_timeout(timeout / 1'000'000, timeout % 1'000'000);
  }
}

StatusOr<std::string> EtcdClient::Post(const std::string& path, const std::string& body) {
  std::string errors;
  for (size_t attempt = 0; attempt < endpoints_.size(); ++attempt) {
    const size_t i = current_;
    httplib::Request req;
    req.method = "POST";
    req.path = path;
    req.body = body;
    req.headers.emplace("Content-Type", "application/json");
    // gRPC metadata "hasleader": a member that has lost its raft leader
    // refuses at once ("no leader") instead of holding the request until a
    // timeout, so the client moves on and retries while etcd elects.
    req.headers.emplace("Grpc-Metadata-hasleader", "true");
    httplib::Response res;
    httplib::Error error = httplib::Error::Success;
    const bool answered = Connection(i).send(req, res, error);
    if (answered && res.status == 200) return std::move(res.body);
    // etcd's gateway ends error answers with an HTTP trailer, which this
    // httplib cannot read (a Read error after the whole body): the status and
    // the JSON body are there all the same.
    const bool error_answer = res.status > 200 && (answered || (error == httplib::Error::Read &&
                                                                  json::accept(res.body)));
    Status s = error_answer ? ErrorStatus(endpoints_[i], res.status, res.body)
                            : Unavailable("etcd " + endpoints_[i] + ": " +
                                          (answered ? "HTTP " + std::to_string(res.status)
                                                    : httplib::to_string(error)));
    if (!answered) clients_[i].reset();  // reconnect next time
    // etcd refused the request itself: another member would refuse it too.
    if (s.code() != StatusCode::kUnavailable) return s;
    errors += (errors.empty() ? "" : "; ") + s.message();
    current_ = (current_ + 1) % endpoints_.size();
  }
  return Unavailable(errors);
}

StatusOr<EtcdRange> EtcdClient::Range(const std::string& key, const EtcdRangeOptions& options) {
  json req = {{"key", Base64Encode(key)}};
  if (!options.range_end.empty()) req["range_end"] = Base64Encode(options.range_end);
  if (options.limit > 0) req["limit"] = std::to_string(options.limit);
  if (options.revision > 0) req["revision"] = std::to_string(options.revision);
  if (options.keys_only) req["keys_only"] = true;
  if (options.descend) {
    req["sort_order"] = "DESCEND";
    req["sort_target"] = "KEY";
  }
  BERTH_ASSIGN_OR_RETURN(std::string text, Post("/v3/kv/range", req.dump()));
  BERTH_ASSIGN_OR_RETURN(json j, ParseAnswer(text));
  EtcdRange out;
  BERTH_ASSIGN_OR_RETURN(out.kvs, ParseKvs(j));
  out.more = Bool(j, "more");
  if (auto h = j.find("header"); h != j.end()) {
    out.revision = Int(*h, "revision");
    out.raft_term = Int(*h, "raft_term");
  }
  return out;
}

StatusOr<EtcdTxnResult> EtcdClient::Txn(const std::vector<EtcdCompare>& compare, const std::vector<EtcdOp>& success,
                                        const std::vector<EtcdOp>& failure) {
  json req = {{"compare", json::array()}, {"success", json::array()}, {"failure", json::array()}};
  for (const EtcdCompare& c : compare) {
    json cj = {{"key", Base64Encode(c.key)}, {"result", "EQUAL"}};
    if (c.target == EtcdCompare::Target::kCreate) {
      cj["target"] = "CREATE";
      cj["create_revision"] = std::to_string(c.create_revision);
    } else {
      cj["target"] = "VALUE";
      cj["value"] = Base64Encode(c.value);
    }
    req["compare"].push_back(std::move(cj));
  }
  for (const EtcdOp& op : success) req["success"].push_back(OpJson(op));
  for (const EtcdOp& op : failure) req["failure"].push_back(OpJson(op));
  BERTH_ASSIGN_OR_RETURN(std::string text, Post("/v3/kv/txn", req.dump()));
  BERTH_ASSIGN_OR_RETURN(json j, ParseAnswer(text));
  EtcdTxnResult out;
  out.succeeded = Bool(j, "succeeded");
  if (auto h = j.find("header"); h != j.end()) out.revision = Int(*h, "revision");
  if (auto r = j.find("responses"); r != j.end() && r->is_array()) {
    for (const json& op : *r) {
      if (auto rr = op.find("response_range"); rr != op.end()) {
        BERTH_ASSIGN_OR_RETURN(std::vector<EtcdKv> kvs, ParseKvs(*rr));
        out.ranges.push_back(std::move(kvs));
      }
    }
  }
  return out;
}

StatusOr<int64_t> EtcdClient::Grant(int64_t ttl_s) {
  BERTH_ASSIGN_OR_RETURN(std::string text, Post("/v3/lease/grant", json({{"TTL", std::to_string(ttl_s)}}).dump()));
  BERTH_ASSIGN_OR_RETURN(json j, ParseAnswer(text));
  if (auto e = j.find("error"); e != j.end() && !e->empty()) return Unavailable("etcd lease grant: " + e->dump());
  const int64_t id = Int(j, "ID");
  if (id == 0) return Unavailable("etcd lease grant: no lease id in " + text.substr(0, 200));
  return id;
}

StatusOr<int64_t> EtcdClient::KeepAlive(int64_t lease) {
  BERTH_ASSIGN_OR_RETURN(EtcdRenewal r, Renew(lease));
  return r.ttl;
}

StatusOr<EtcdRenewal> EtcdClient::Renew(int64_t lease) {
  // A stream in gRPC; through the gateway one request gets one {"result": ...}.
  BERTH_ASSIGN_OR_RETURN(std::string text, Post("/v3/lease/keepalive", json({{"ID", std::to_string(lease)}}).dump()));
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  BERTH_ASSIGN_OR_RETURN(json j, ParseAnswer(text));
  if (auto e = j.find("error"); e != j.end()) return Unavailable("etcd lease keepalive: " + e->dump());
  auto r = j.find("result");
  if (r == j.end() || !r->is_object()) return Unavailable("etcd lease keepalive: unexpected answer " + text.substr(0, 200));
  EtcdRenewal out;
  out.ttl = Int(*r, "TTL");  // absent (0) once the lease is gone
  if (auto h = r->find("header"); h != r->end() && h->is_object()) out.raft_term = Int(*h, "raft_term");
  return out;
}

Status EtcdClient::Revoke(int64_t lease) {
  return Post("/v3/lease/revoke", json({{"ID", std::to_string(lease)}}).dump()).status();
}

}  // namespace berth::store
