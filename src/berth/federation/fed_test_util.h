// Shared set-up of the federation simulator's failure and partition tests
// (fed_failures_test.cc, fed_partitions_test.cc): two regions of one 32-GPU
// cluster each, a dataset in the east, and builders for jobs and runs.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "berth/cluster/loaders.h"
#include "berth/federation/fed_sim.h"
#include "berth/plugins/builtin.h"

namespace berth::federation::testenv {

inline constexpr const char* kFed = R"(
name: t
dispatcher_region: east
member_timeout_s: 30
requeue_running_after_s: 60
checkpoint_gib_per_gpu: 2
regions:
  - name: east
    clusters:
      - {name: e1, cluster: "4x8:A100", default_price: 2, failure_domain: east-1}
  - name: west
    clusters:
      - {name: w1, cluster: "4x8:A100", default_price: 1, failure_domain: west-1}
links:
  - {from: east, to: west, bandwidth_gbps: 1, rtt_ms: 100, egress_usd_per_gb: 0.1}
datasets:
  - {name: big, size_gib: 100, regions: [east]}
)";

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct Env {
  Federation fed;
  SpeedTable speed;
  framework::PluginRegistry plugins;
  framework::Profile profile;
};

inline ClusterLoader Loader() {
  return [](const std::string& s) { return cluster::LoadCluster(s); };
}

// A federation from a whole file's text, best fit in every member.
inline Env MakeEnvFromText(const std::string& text) {
  Env e;
  StatusOr<Federation> f = ParseFederationYaml(text, "t.yaml", Loader());
  EXPECT_TRUE(f.ok()) << f.status().message();
  e.fed = std::move(f).value();
  for (const auto& m : e.fed.members) e.speed.push_back(std::vector<double>(m.cluster->gpu_types().size(), 1.0));
  EXPECT_TRUE(plugins::RegisterBuiltinPlugins(e.plugins).ok());
  framework::PolicyRegistry policies;
  EXPECT_TRUE(plugins::RegisterBuiltinPolicies(policies).ok());
  e.profile = *policies.Find("bestfit");
  return e;
}

// kFed with `failures` appended.
inline Env MakeEnv(const std::string& failures) { return MakeEnvFromText(std::string(kFed) + failures); }

inline job::JobSpec Job(int64_t i, TimeUs submit, int32_t gpus, double dur_s, std::string dataset, double ckpt_s) {
  job::JobSpec j;
  j.id = JobId(i);
  j.name = "j" + std::to_string(i);
  j.submit_time = submit;
  j.duration = SecondsToUs(dur_s);
  j.dataset = std::move(dataset);
  if (ckpt_s > 0) j.checkpoint_interval = SecondsToUs(ckpt_s);
  job::TaskGroup g;
  g.name = "w";
  g.count = 1;
  g.gpus = gpus;
  j.groups.push_back(g);
  return j;
}

inline FedResult Simulate(const Env& e, const sim::Trace& t, Policy p, FedSimOptions o = {}) {
  StatusOr<FedResult> r = RunFederation(e.fed, e.speed, t, e.profile, e.plugins, p, o);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : FedResult{};
}

// Eight 8-GPU jobs of an hour reading east's dataset, checkpointing every 10
// minutes: data-local sends all of them east, four run and four queue.
inline sim::Trace EastJobs() {
  sim::Trace t;
  for (int k = 0; k < 8; ++k) t.jobs.push_back(Job(k, 0, 8, 3600, "big", 600));
  return t;
}

}  // namespace berth::federation::testenv
