// A service on an in-memory store and a small cluster, for the server tests.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <thread>

#include "berth/cluster/loaders.h"
#include "berth/server/service.h"
#include "berth/store/memory_store.h"

namespace berth::server::testing {

// Polls `pred` until true or a generous deadline (never a timing assertion:
// the deadline only stops a broken test from hanging).
inline bool WaitFor(const std::function<bool()>& pred, int seconds = 20) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

class ServiceHarness {
 public:
  explicit ServiceHarness(const std::string& spec = "4x8:H100/leaf=2", ServiceOptions options = {},
                          std::shared_ptr<store::MemoryStore::Data> data = nullptr)
      : cluster_(cluster::ParseClusterSpec(spec).value()),
        data_(data ? data : std::make_shared<store::MemoryStore::Data>()),
        devnull_(std::fopen("/dev/null", "w")),
        log_(devnull_),
        options_(options) {}
  ~ServiceHarness() {
    Stop();
    std::fclose(devnull_);
  }
  Status Start() {
    store_ = std::make_unique<store::MemoryStore>(data_);
    service_ = std::make_unique<Service>(cluster_, *store_, options_, log_, metrics_);
    return service_->Start();
  }
  void Stop() {
    if (service_) service_->Stop();
    service_.reset();
    store_.reset();
  }
  Service& service() { return *service_; }
  // Waits until the loop has run a pass over what was queued and the store
  // has written what that pass appended.
  void Quiesce() {
    for (int i = 0; i < 2; ++i) {
      service_->Sync();
      service_->Sync();
      store_->Flush();
    }
  }
  const std::shared_ptr<store::MemoryStore::Data>& data() { return data_; }
  size_t records() {
    std::lock_guard<std::mutex> lock(data_->mu);
    return data_->records.size();
  }
  Metrics& metrics() { return metrics_; }
  const cluster::Cluster& cluster() const { return cluster_; }

  // The state of job `id` ("" when unknown).
  std::string State(int64_t id) {
    ApiResult r = service_->GetJob(id);
    return r.code == 200 ? r.body["state"].get<std::string>() : "";
  }
  int64_t Submit(const std::string& body, int expect = 201) {
    ApiResult r = service_->SubmitJob(body);
    EXPECT_EQ(r.code, expect) << r.body.dump();
    return r.body.value("id", int64_t{-1});
  }

 private:
  cluster::Cluster cluster_;
  std::shared_ptr<store::MemoryStore::Data> data_;
  std::FILE* devnull_;
  Logger log_;
  Metrics metrics_;
  ServiceOptions options_;
  std::unique_ptr<store::MemoryStore> store_;
  std::unique_ptr<Service> service_;
};

}  // namespace berth::server::testing
