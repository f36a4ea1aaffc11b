// For tests: a member in front of a real etcd that forwards every request to
// it, unless `intercept` answers the request itself (returns true). Tests
// build misbehaving members on it: one that holds writes, one that answers
// renewals as a deposed leader.
//
//   EtcdProxy p(etcd->endpoint(), [](const httplib::Request& req, httplib::Response& res) { return false; });
//   EtcdStore::Open(p.endpoint() + "," + etcd->endpoint(), ...);
#pragma once

#include <httplib.h>

#include <functional>
#include <string>
#include <thread>

namespace berth::store {

class EtcdProxy {
 public:
  using Intercept = std::function<bool(const httplib::Request&, httplib::Response&)>;
  EtcdProxy(const std::string& etcd, Intercept intercept) : upstream_(etcd), intercept_(std::move(intercept)) {
    server_.Post(R"(/v3/.*)", [this](const httplib::Request& req, httplib::Response& res) {
      if (intercept_(req, res)) return;
      auto up = upstream_.Post(req.path, req.body, "application/json");
      if (!up) {
        res.status = 502;
        return;
      }
      res.status = up->status;
      res.set_content(up->body, "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~EtcdProxy() { Stop(); }
  // Stops serving (waits for the handlers that run); idempotent.
  void Stop() {
    if (!thread_.joinable()) return;
    server_.stop();
    thread_.join();
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Client upstream_;
  Intercept intercept_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace berth::store
