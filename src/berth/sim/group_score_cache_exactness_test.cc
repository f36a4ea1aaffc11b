// The group score cache makes the full scan's decisions: on random traces of
// large gangs of identical tasks (CPU-only, whole GPUs, GPU shares, elastic
// groups) on mixed clusters, every policy gives the same decision-log hash
// and placements as with --full-scan (SchedulerOptions::full_scan).
#include <gtest/gtest.h>

#include "berth/cluster/loaders.h"
#include "berth/common/rng.h"
#include "berth/plugins/builtin.h"
#include "berth/sim/replay.h"

namespace berth::sim {
namespace {

Trace RandomGangTrace(uint64_t seed, int32_t jobs) {
  Rng rng(seed);
  Trace t;
  TimeUs at = 0;
  for (int32_t j = 0; j < jobs; ++j) {
    job::JobSpec s;
    s.name = "j" + std::to_string(j);
    s.tenant = "t" + std::to_string(rng.Uniform(3));
    s.priority = static_cast<int32_t>(rng.Uniform(3));
    at += SecondsToUs(static_cast<double>(rng.Uniform(60)));
    s.submit_time = at;
    s.duration = SecondsToUs(static_cast<double>(30 + rng.Uniform(600)));
    const int32_t groups = 1 + static_cast<int32_t>(rng.Uniform(2));
    for (int32_t g = 0; g < groups; ++g) {
      job::TaskGroup tg;
      tg.name = "g" + std::to_string(g);
      tg.count = 1 + static_cast<int32_t>(rng.Uniform(rng.Uniform(2) ? 80 : 8));
      switch (rng.Uniform(4)) {
        case 0: tg.gpus = 0; break;
        case 1: tg.gpus = 1; break;
        case 2: tg.gpus = 1 + static_cast<int32_t>(rng.Uniform(4)); break;
        default: tg.gpus = 1; tg.milli_per_gpu = 250 * (1 + static_cast<int32_t>(rng.Uniform(3))); break;
      }
      tg.cpu_milli = 1000 * (1 + static_cast<int32_t>(rng.Uniform(12)));
      tg.memory_mib = 1024 * (1 + static_cast<int32_t>(rng.Uniform(32)));
      if (rng.Uniform(4) == 0) tg.min_count = 1 + static_cast<int32_t>(rng.Uniform(tg.count));
      s.groups.push_back(tg);
    }
    t.jobs.push_back(std::move(s));
  }
  return t;
}

TEST(GroupScoreCacheExactness, RandomGangsMatchFullScan) {
  framework::PluginRegistry plugins;
  framework::PolicyRegistry policies;
  ASSERT_TRUE(plugins::RegisterBuiltinPlugins(plugins).ok());
  ASSERT_TRUE(plugins::RegisterBuiltinPolicies(policies).ok());
  auto c = cluster::ParseClusterSpec("12x8:V100/leaf=4/cpu=64+10x4:T4/cpu=48/mem=256+6x2:A100/cpu=32");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  for (uint64_t seed : {1, 2, 3}) {
    const Trace t = RandomGangTrace(seed, 150);
    for (const char* policy : {"bestfit", "firstfit", "worstfit", "dotprod", "gpupacking", "topology", "priority", "sjf"}) {
      auto profile = policies.Find(policy);
      ASSERT_TRUE(profile.ok()) << policy;
      ReplayOptions fast;
      ReplayOptions scan;
      scan.full_scan = true;
      auto a = RunReplay(*c, t, *profile, plugins, fast);
      auto b = RunReplay(*c, t, *profile, plugins, scan);
      ASSERT_TRUE(a.ok()) << policy << ": " << a.status().ToString();
      ASSERT_TRUE(b.ok()) << policy << ": " << b.status().ToString();
      EXPECT_EQ(a->decision_log_hash, b->decision_log_hash) << policy << " seed " << seed;
      EXPECT_EQ(a->jobs_placed, b->jobs_placed) << policy << " seed " << seed;
      EXPECT_GT(a->jobs_placed, 0) << policy;
    }
  }
}

}  // namespace
}  // namespace berth::sim
