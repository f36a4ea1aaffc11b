// The live dispatcher's HTTP link to one member `berth serve`: its digest,
// job submissions (with the dispatcher's idempotency keys), a job's state,
// cancellation. Authenticated with the member's bearer token; https members
// are verified against a CA file. One link per member, used by one thread
// (the dispatcher's loop); every call is bounded by the link's timeout.
//
//   MemberLink link("http://127.0.0.1:7451", {.token = "s3cret", .timeout = 2'000'000});
//   MemberReply r = link.Call("GET", "/v1/digest");
//   if (r.reached() && r.status == 200) ... r.body ...
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "berth/common/quantity.h"

namespace httplib { class Client; }

namespace berth::fedserve {

struct LinkOptions {
  std::string token;    // bearer token the member's --token-file holds ("" = none)
  std::string ca_cert;  // CA (PEM) an https member's certificate is checked against ("" = the system's)
  TimeUs timeout = 2'000'000;  // connect, read and write, each
};

struct MemberReply {
  int status = 0;      // 0: the member was not reached (connection error, timeout)
  nlohmann::json body;  // parsed; null when not JSON
  std::string error;   // transport error, or the member's {"error": ...}
  bool reached() const { return status != 0; }
};

class MemberLink {
 public:
  MemberLink(std::string endpoint, LinkOptions options);
  ~MemberLink();
  MemberLink(const MemberLink&) = delete;
  MemberLink& operator=(const MemberLink&) = delete;

  const std::string& endpoint() const { return endpoint_; }
  // One request (GET, POST with a JSON body, DELETE); no retries.
  MemberReply Call(const std::string& method, const std::string& path, const std::string& body = "");

 private:
  std::string endpoint_;
  LinkOptions options_;
  std::unique_ptr<httplib::Client> client_;
};

}  // namespace berth::fedserve
