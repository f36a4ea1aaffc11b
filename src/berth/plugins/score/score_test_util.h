// Test helpers for score plugins: a tiny hand-built cluster whose state a test
// sets up task by task, and a way to ask one plugin for its scores, its
// normalized scores, the node it would pick and its GPU choice.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/framework/registry.h"
#include "berth/job/job.h"
#include "berth/plugins/builtin.h"
#include "berth/state/cluster_state.h"

namespace berth::plugins::testing {

// A one-task job ("pod"): `gpus` GPUs with `milli` of each, CPU, memory and an
// optional accepted-type list.
inline job::JobSpec Pod(MilliCpu cpu, int32_t gpus, MilliGpu milli, std::string spec = "", MiB mem = 1024) {
  job::JobSpec j;
  j.name = "p";
  job::TaskGroup g;
  g.cpu_milli = cpu;
  g.memory_mib = mem;
  g.gpus = gpus;
  g.milli_per_gpu = milli;
  g.gpu_type_spec = std::move(spec);
  j.groups.push_back(g);
  return j;
}

class ScoreScenario : public ::testing::Test {
 protected:
  // Adds a node; call before Build().
  void AddNode(const std::string& name, MilliCpu cpu, int32_t gpus, const std::string& type = "T4") {
    builder_.AddNode({.name = name, .cpu_milli = cpu, .memory_mib = 1 << 20, .gpu_count = gpus,
                      .gpu_type = gpus > 0 ? type : ""});
  }
  void Build() {
    auto c = std::move(builder_).Build();
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    cluster_ = std::make_unique<cluster::Cluster>(std::move(c).value());
    state_ = std::make_unique<state::ClusterState>(*cluster_);
    ASSERT_TRUE(RegisterBuiltinPlugins(plugins_).ok());
    ASSERT_TRUE(RegisterBuiltinPolicies(policies_).ok());
  }
  NodeId N(const std::string& name) const { return *cluster_->FindNode(name); }

  // Places a task holding `milli` of each GPU in `gpu_mask` and `cpu` on node `name`.
  void Hold(const std::string& name, uint64_t gpu_mask, MilliGpu milli, MilliCpu cpu = 1000) {
    state::Allocation a{.node = N(name), .gpu_mask = gpu_mask, .milli_per_gpu = gpu_mask ? milli : 0,
                        .cpu_milli = cpu, .memory_mib = 0};
    Status s = state_->Apply(state::PlaceTask{TaskKey{JobId(next_job_++), 0}, a});
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  static framework::TaskRequest Share(MilliGpu milli, MilliCpu cpu) { return {1, milli, cpu, 0, {}, false}; }
  static framework::TaskRequest Whole(int32_t gpus, MilliCpu cpu) { return {gpus, kMilliPerGpu, cpu, 0, {}, false}; }
  static framework::TaskRequest CpuOnly(MilliCpu cpu) { return {0, kMilliPerGpu, cpu, 0, {}, false}; }

  std::unique_ptr<framework::ScorePlugin> Plugin(const std::string& name) {
    auto p = plugins_.Create(name, {});
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    auto* score = dynamic_cast<framework::ScorePlugin*>(p->get());
    EXPECT_NE(score, nullptr);
    p->release();
    return std::unique_ptr<framework::ScorePlugin>(score);
  }
  framework::CycleContext Ctx() { return framework::CycleContext{*state_, job_, 0, 0, rng_, 0, {}}; }

  int64_t ScoreOf(const std::string& plugin, const framework::TaskRequest& req, const std::string& node) {
    return Plugin(plugin)->Score(Ctx(), req, N(node));
  }
  // Raw scores then Normalize over `nodes`.
  std::vector<int64_t> Normalized(const std::string& plugin, const framework::TaskRequest& req,
                                  const std::vector<std::string>& nodes) {
    auto p = Plugin(plugin);
    std::vector<NodeId> ids;
    std::vector<int64_t> scores;
    for (const auto& n : nodes) {
      ids.push_back(N(n));
      scores.push_back(p->Score(Ctx(), req, N(n)));
    }
    p->Normalize(Ctx(), req, ids, scores);
    return scores;
  }

  // The node the scheduler would pick among `nodes` (all feasible): the
  // highest normalized score, ties to the first listed.
  std::string Winner(const std::string& plugin, const framework::TaskRequest& req,
                     const std::vector<std::string>& nodes) {
    std::vector<int64_t> s = Normalized(plugin, req, nodes);
    size_t best = 0;
    for (size_t i = 1; i < s.size(); ++i)
      if (s[i] > s[best]) best = i;
    return nodes[best];
  }

  cluster::ClusterBuilder builder_;
  std::unique_ptr<cluster::Cluster> cluster_;
  std::unique_ptr<state::ClusterState> state_;
  framework::PluginRegistry plugins_;
  framework::PolicyRegistry policies_;
  job::JobSpec job_;
  Rng rng_{1};
  int64_t next_job_ = 1000;
};

}  // namespace berth::plugins::testing
