// A service whose cluster is the node agents that register, on an in-memory
// store, driven without HTTP: register, heartbeat and exit calls as agents
// make them (for the node API tests).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "berth/server/service.h"
#include "berth/store/memory_store.h"

namespace berth::server::testing {

using nlohmann::json;

class AgentHarness {
 public:
  explicit AgentHarness(std::shared_ptr<store::MemoryStore::Data> data = nullptr, TimeUs timeout = 60'000'000)
      : data_(data ? data : std::make_shared<store::MemoryStore::Data>()), devnull_(std::fopen("/dev/null", "w")),
        log_(devnull_) {
    options_.agent_nodes = true;
    options_.heartbeat_interval = 50'000;
    options_.heartbeat_timeout = timeout;
    options_.agent_log_dir = ::testing::TempDir() + "/berth-agent-logs-" + std::to_string(::getpid());
  }
  ~AgentHarness() {
    if (service_) service_->Stop();
    std::fclose(devnull_);
  }
  Status Start() {
    store_ = std::make_unique<store::MemoryStore>(data_);
    service_ = std::make_unique<Service>(cluster_, *store_, options_, log_, metrics_);
    return service_->Start();
  }
  Service& s() { return *service_; }
  ApiResult Register(const std::string& name, const std::string& id, int gpus = 4, const std::string& leaf = "") {
    json g = json::array();
    for (int i = 0; i < gpus; ++i) g.push_back({{"index", i}, {"type", "H100"}, {"memory_mib", 81920}});
    json body = {{"name", name}, {"agent_id", id}, {"cpu_milli", 64000}, {"memory_mib", 262144}, {"gpus", g}};
    if (!leaf.empty()) body["labels"] = {{"leaf", leaf}};
    return service_->AgentRegister(body.dump());
  }
  ApiResult Beat(const std::string& name, const std::string& id, json tasks = json::array()) {
    return service_->AgentHeartbeat(json{{"name", name}, {"agent_id", id}, {"tasks", tasks}}.dump());
  }
  ApiResult Exit(const std::string& name, const std::string& id, int64_t job, int gen, int task, int code,
                 int attempt = -1) {
    json body = {{"name", name}, {"agent_id", id}, {"job", job}, {"generation", gen},
                 {"task", task}, {"state", "exited"}, {"exit_code", code}};
    if (attempt >= 0) body["attempt"] = attempt;
    return service_->AgentTaskStatus(body.dump());
  }
  std::string State(int64_t id) {
    ApiResult r = service_->GetJob(id);
    return r.code == 200 ? r.body["state"].get<std::string>() : "";
  }
  ServiceOptions options_;

 private:
  cluster::Cluster cluster_;
  std::shared_ptr<store::MemoryStore::Data> data_;
  std::FILE* devnull_;
  Logger log_;
  Metrics metrics_;
  std::unique_ptr<store::MemoryStore> store_;
  std::unique_ptr<Service> service_;
};

}  // namespace berth::server::testing
