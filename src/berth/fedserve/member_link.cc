// HTTP calls to a member (member_link.h), on cpp-httplib's client.
#include "berth/fedserve/member_link.h"

#include <httplib.h>

namespace berth::fedserve {

MemberLink::MemberLink(std::string endpoint, LinkOptions options)
    : endpoint_(std::move(endpoint)), options_(std::move(options)), client_(std::make_unique<httplib::Client>(endpoint_)) {
  const time_t sec = static_cast<time_t>(options_.timeout / kUsPerSecond);
  const time_t usec = static_cast<time_t>(options_.timeout % kUsPerSecond);
  client_->set_connection_timeout(sec, usec);
  client_->set_read_timeout(sec, usec);
  client_->set_write_timeout(sec, usec);
  client_->set_keep_alive(true);
  client_->set_tcp_nodelay(true);
  if (!options_.ca_cert.empty()) client_->set_ca_cert_path(options_.ca_cert.c_str());
  client_->enable_server_certificate_verification(true);
}

MemberLink::~MemberLink() = default;

MemberReply MemberLink::Call(const std::string& method, const std::string& path, const std::string& body) {
  httplib::Headers headers;
  if (!options_.token.empty()) headers.emplace("Authorization", "Bearer " + options_.token);
  httplib::Result res = method == "GET"    ? client_->Get(path, headers)
                        : method == "POST" ? client_->Post(path, headers, body, "application/json")
                                           : client_->Delete(path, headers);
  MemberReply r;
  if (!res) {
    r.error = endpoint_ + ": " + httplib::to_string(res.error());
    return r;
  }
  r.status = res->status;
  r.body = nlohmann::json::parse(res->body, nullptr, false);
  if (r.body.is_discarded()) r.body = nullptr;
  if (r.body.is_object() && r.body.contains("error") && r.body["error"].is_string())
    r.error = r.body["error"].get<std::string>();
  return r;
}

}  // namespace berth::fedserve
