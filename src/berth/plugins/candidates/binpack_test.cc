// The binpack candidates choose what a full scan chooses.
//
// Property: on random clusters (mixed GPU types and node sizes, CPU-only and
// down nodes, with and without a custom tie-break rank) under a random stream
// of whole-GPU, shared-GPU, CPU-only and gang jobs with departures, a
// scheduler with the binpack candidates and one with the same filter and
// score but no candidates make the same decision every time (equal decision
// logs), and the state's indexes stay exact.
#include "berth/plugins/candidates/binpack.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <optional>
#include <span>

#include "berth/cluster/cluster.h"
#include "berth/common/clock.h"
#include "berth/common/rng.h"
#include "berth/framework/registry.h"
#include "berth/plugins/builtin.h"
#include "berth/plugins/filter/fit.h"
#include "berth/scheduler/scheduler.h"

namespace berth::plugins {
namespace {

using framework::Profile;
using scheduler::Scheduler;

struct Registries {
  framework::PluginRegistry plugins;
  framework::PolicyRegistry policies;
  Registries() {
    EXPECT_TRUE(RegisterBuiltinPlugins(plugins).ok());
    EXPECT_TRUE(RegisterBuiltinPolicies(policies).ok());
  }
  // The binpack policy; `limit` > 0 overrides how many candidates it takes.
  Profile Binpack(int limit = 0) const {
    Profile p = *policies.Find("binpack");
    if (limit > 0) p.candidates.front().args["limit"] = std::to_string(limit);
    return p;
  }
  Profile FullScan() const {
    Profile p = Binpack();
    p.candidates.clear();
    return p;
  }
};

cluster::Cluster RandomCluster(Rng& rng) {
  struct Shape { const char* type; int gpus; };
  static const Shape kShapes[] = {{"H100", 8}, {"A100", 8}, {"A100", 4}, {"T4", 2}, {"V100", 1}, {"", 0}};
  cluster::ClusterBuilder b;
  const int nodes = 8 + static_cast<int>(rng.Uniform(90));
  const bool one_type = rng.Uniform(3) == 0;
  for (int i = 0; i < nodes; ++i) {
    const Shape& s = one_type ? kShapes[0] : kShapes[rng.Uniform(rng.Uniform(5) == 0 ? 6 : 5)];
    cluster::NodeSpec n;
    n.name = "n" + std::to_string(i);
    n.cpu_milli = (16 + static_cast<int64_t>(rng.Uniform(113))) * 1000;
    n.memory_mib = (64 + static_cast<int64_t>(rng.Uniform(960))) * 1024;
    n.gpu_count = s.gpus;
    n.gpu_type = s.type;
    n.leaf = "leaf-" + std::to_string(i / 16);
    b.AddNode(std::move(n));
  }
  auto c = std::move(b).Build();
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(c).value();
}

// `share_heavy`: most jobs ask for a share of one GPU (many partly used GPUs).
job::JobSpec RandomJob(Rng& rng, int64_t id, bool share_heavy) {
  static const int kGpus[] = {1, 1, 1, 2, 4, 8};
  static const char* kTypes[] = {"", "", "", "", "H100", "A100", "H100|A100", "T4|V100", "B200"};
  job::JobSpec j;
  j.id = JobId(id);
  j.name = "j" + std::to_string(id);
  job::TaskGroup g;
  const uint64_t kind = share_heavy && rng.Uniform(4) != 0 ? 9 : rng.Uniform(20);
  if (kind < 9) {
    g.gpus = kGpus[rng.Uniform(6)];
  } else if (kind < 15) {
    g.gpus = 1;
    g.milli_per_gpu = rng.Uniform(2) ? static_cast<MilliGpu>(1 + rng.Uniform(999))
                                     : static_cast<MilliGpu>(50 * (1 + rng.Uniform(19)));
  } else if (kind < 17) {
    g.gpus = 0;
  } else {
    g.gpus = kGpus[rng.Uniform(6)];
    g.count = 2 + static_cast<int32_t>(rng.Uniform(3));
  }
  g.gpu_type_spec = kTypes[rng.Uniform(9)];
  g.cpu_milli = static_cast<MilliCpu>(rng.Uniform(rng.Uniform(4) == 0 ? 64 : 12) * 1000);
  g.memory_mib = static_cast<MiB>(rng.Uniform(128) * 1024);
  j.groups.push_back(std::move(g));
  return j;
}

cluster::NodeSpec Node(std::string name, int gpus, std::string type) {
  cluster::NodeSpec n;
  n.name = std::move(name);
  n.cpu_milli = 128000;
  n.memory_mib = 1 << 20;
  n.gpu_count = gpus;
  n.gpu_type = std::move(type);
  return n;
}

// Runs both schedulers in lockstep over a random stream; returns how many
// decisions the candidates alone settled (a candidate passed the filter).
int64_t RunLockstep(uint64_t seed, int steps) {
  Registries reg;
  Rng rng(seed);
  const cluster::Cluster cluster = RandomCluster(rng);
  scheduler::SchedulerOptions opts;
  opts.seed = seed;
  opts.check_indexes = true;
  if (rng.Uniform(2)) {
    opts.node_rank.resize(cluster.num_nodes());
    std::iota(opts.node_rank.begin(), opts.node_rank.end(), 0);
    rng.Shuffle(opts.node_rank);
  }
  ManualClock clock(0);
  // Small limits make tiers split often, which is where order mistakes show.
  static const int kLimits[] = {1, 2, 3, 8};
  auto fast_fw = framework::Framework::Create(reg.Binpack(kLimits[seed % 4]), reg.plugins);
  auto scan_fw = framework::Framework::Create(reg.FullScan(), reg.plugins);
  EXPECT_TRUE(fast_fw.ok() && scan_fw.ok());
  Scheduler fast(cluster, std::move(fast_fw).value(), opts, clock);
  Scheduler scan(cluster, std::move(scan_fw).value(), opts, clock);
  const auto* candidates = fast.framework().candidates().front();

  const bool share_heavy = seed % 3 == 0;
  std::vector<JobId> running;
  int64_t settled = 0;
  std::vector<NodeId> proposed;
  for (int step = 0; step < steps; ++step) {
    clock.Advance(1);
    const uint64_t op = rng.Uniform(20);
    if (op < 11) {
      job::JobSpec j = RandomJob(rng, step, share_heavy);
      // Before placing: would the candidates alone settle the first task?
      job::JobSpec resolved = j;
      job::ResolveGpuTypes(resolved, cluster);
      const auto req = framework::TaskRequest::FromGroup(resolved.groups[0]);
      Rng unused(0);
      framework::CycleContext ctx{fast.state(), resolved, 0, 0, unused, clock.Now(), opts.node_rank};
      proposed.clear();
      candidates->Candidates(ctx, req, proposed);
      for (NodeId n : proposed)
        if (fast.state().up(n) && TaskFitsNode(fast.state(), req, n)) { ++settled; break; }

      EXPECT_TRUE(fast.Submit(j).ok());
      EXPECT_TRUE(scan.Submit(j).ok());
      std::vector<JobId> a = fast.Schedule();
      std::vector<JobId> b = scan.Schedule();
      EXPECT_EQ(a, b) << "seed " << seed << " step " << step;
      running.insert(running.end(), a.begin(), a.end());
    } else if (op < 19) {
      if (running.empty()) continue;
      const size_t k = rng.Uniform(running.size());
      EXPECT_TRUE(fast.Finish(running[k], job::JobState::kSucceeded).ok());
      EXPECT_TRUE(scan.Finish(running[k], job::JobState::kSucceeded).ok());
      running[k] = running.back();
      running.pop_back();
    } else {
      const NodeId n(static_cast<int32_t>(rng.Uniform(cluster.num_nodes())));
      const bool up = !fast.state().up(n);
      EXPECT_TRUE(fast.SetNodeUp(n, up).ok());
      EXPECT_TRUE(scan.SetNodeUp(n, up).ok());
    }
    if (fast.log().hash() != scan.log().hash()) {
      ADD_FAILURE() << "seed " << seed << ": decisions differ at step " << step;
      return settled;
    }
  }
  EXPECT_TRUE(fast.state().CheckIndexes().ok()) << fast.state().CheckIndexes().ToString();
  EXPECT_EQ(fast.state().allocated_milli(), scan.state().allocated_milli());
  return settled;
}

TEST(BinpackCandidates, SameChoiceAsFullScanOnRandomStates) {
  int64_t settled = 0;
  for (uint64_t seed = 1; seed <= 120; ++seed) {
    settled += RunLockstep(seed, 300);
    if (HasFailure()) return;
  }
  // The fast path is taken, not only the fallback scan.
  EXPECT_GT(settled, 5000);
}

// A random fill applied to the state directly (random nodes, GPUs and
// shares, not the binpack order), so partly used GPUs are scattered.
void RandomFill(Rng& rng, state::ClusterState& s, int events) {
  const cluster::Cluster& c = s.cluster();
  std::vector<TaskKey> held;
  for (int e = 0; e < events; ++e) {
    const uint64_t op = rng.Uniform(10);
    if (op < 2 && !held.empty()) {
      const size_t k = rng.Uniform(held.size());
      ASSERT_TRUE(s.Apply(state::ReleaseTask{held[k]}).ok());
      held[k] = held.back();
      held.pop_back();
      continue;
    }
    const NodeId n(static_cast<int32_t>(rng.Uniform(c.num_nodes())));
    if (op == 2) {
      ASSERT_TRUE(s.Apply(state::SetNodeUp{n, rng.Uniform(4) != 0}).ok());
      continue;
    }
    const int gpus = c.node(n).gpu_count;
    if (gpus == 0 || !s.up(n)) continue;
    state::Allocation a;
    a.node = n;
    a.cpu_milli = std::min<MilliCpu>(s.free_cpu(n), static_cast<MilliCpu>(rng.Uniform(16) * 1000));
    a.memory_mib = std::min<MiB>(s.free_memory(n), static_cast<MiB>(rng.Uniform(64) * 1024));
    if (op < 6) {  // a share of one GPU that has room
      const int g = static_cast<int>(rng.Uniform(gpus));
      const MilliGpu free = s.gpu_free(n, g);
      if (free == 0) continue;
      a.gpu_mask = uint64_t{1} << g;
      a.milli_per_gpu = 1 + static_cast<MilliGpu>(rng.Uniform(free));
    } else {  // some of the fully free GPUs
      for (uint64_t m = s.full_free_mask(n); m; m &= m - 1)
        if (rng.Uniform(2)) a.gpu_mask |= m & (~m + 1);
      if (a.gpu_mask == 0) continue;
      a.milli_per_gpu = kMilliPerGpu;
    }
    const TaskKey key{JobId(e), 0};
    ASSERT_TRUE(s.Apply(state::PlaceTask{key, a}).ok());
    held.push_back(key);
  }
}

// The full scan's choice: the fitting up node with the smallest (key, rank).
std::optional<NodeId> BestOf(const framework::CycleContext& ctx, const framework::TaskRequest& req,
                             std::span<const NodeId> nodes) {
  std::optional<NodeId> best;
  std::pair<int64_t, int32_t> best_order{};
  for (NodeId n : nodes) {
    if (!ctx.state.up(n) || !TaskFitsNode(ctx.state, req, n)) continue;
    const std::pair<int64_t, int32_t> order{*BinpackKey(ctx.state, req, n), ctx.RankOf(n)};
    if (!best || order < best_order) {
      best = n;
      best_order = order;
    }
  }
  return best;
}

TEST(BinpackCandidates, BestCandidateIsTheFullScanBestOnRandomFills) {
  Registries reg;
  int64_t settled = 0, asked = 0;
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    Rng rng(seed * 7919);
    const cluster::Cluster cluster = RandomCluster(rng);
    state::ClusterState s(cluster);
    RandomFill(rng, s, 40 + static_cast<int>(rng.Uniform(400)));
    ASSERT_TRUE(s.CheckIndexes().ok()) << "seed " << seed << ": " << s.CheckIndexes().ToString();
    std::vector<int32_t> rank;
    if (rng.Uniform(2)) {
      rank.resize(cluster.num_nodes());
      std::iota(rank.begin(), rank.end(), 0);
      rng.Shuffle(rank);
    }
    std::vector<NodeId> all(cluster.num_nodes());
    for (int32_t i = 0; i < cluster.num_nodes(); ++i) all[i] = NodeId(i);
    for (int limit : {1, 2, 5, 8}) {
      auto plugin = reg.plugins.Create("binpack", {{"limit", std::to_string(limit)}});
      ASSERT_TRUE(plugin.ok());
      auto* c = dynamic_cast<framework::CandidatePlugin*>(plugin->get());
      for (int q = 0; q < 40; ++q) {
        job::JobSpec j = RandomJob(rng, q, q % 2 == 0);
        job::ResolveGpuTypes(j, cluster);
        const auto req = framework::TaskRequest::FromGroup(j.groups[0]);
        Rng unused(0);
        framework::CycleContext ctx{s, j, 0, 0, unused, 0, rank};
        std::vector<NodeId> out;
        c->Candidates(ctx, req, out);
        std::vector<NodeId> sorted = out;
        std::sort(sorted.begin(), sorted.end());
        ASSERT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "duplicate candidate";
        ++asked;
        const std::optional<NodeId> from_candidates = BestOf(ctx, req, out);
        if (!from_candidates) continue;  // the scheduler falls back to a full scan
        ++settled;
        EXPECT_EQ(from_candidates, BestOf(ctx, req, all))
            << "seed " << seed << " limit " << limit << " query " << q << ": gpus " << req.gpus << " milli "
            << req.milli_per_gpu;
        if (HasFailure()) return;
      }
    }
  }
  EXPECT_GT(settled, asked / 2);
}

// Builds a state directly and checks the candidate order on a worked example.
TEST(BinpackCandidates, TightestNodesFirstThenByRank) {
  Registries reg;
  cluster::ClusterBuilder b;
  for (int i = 0; i < 12; ++i)
    b.AddNode(Node("n" + std::to_string(i), 8, "H100"));
  auto cluster = std::move(b).Build();
  ASSERT_TRUE(cluster.ok());
  state::ClusterState s(*cluster);
  // Free GPUs per node: n7 -> 1, n3 and n9 -> 2, n5 -> 0, others 8.
  auto take = [&](int node, int gpus, int64_t job) {
    state::Allocation a{NodeId(node), (uint64_t{1} << gpus) - 1, kMilliPerGpu, 0, 0};
    ASSERT_TRUE(s.Apply(state::PlaceTask{TaskKey{JobId(job), 0}, a}).ok());
  };
  take(7, 7, 1);
  take(3, 6, 2);
  take(9, 6, 3);
  take(5, 8, 4);
  auto plugin = reg.plugins.Create("binpack", {{"limit", "4"}});
  ASSERT_TRUE(plugin.ok());
  auto* c = dynamic_cast<framework::CandidatePlugin*>(plugin->get());
  ASSERT_NE(c, nullptr);
  job::JobSpec j;
  Rng rng(0);
  framework::TaskRequest req;
  req.gpus = 1;
  std::vector<NodeId> out;
  framework::CycleContext ctx{s, j, 0, 0, rng, 0, {}};
  c->Candidates(ctx, req, out);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0], NodeId(7));
  EXPECT_EQ(out[1], NodeId(3));
  EXPECT_EQ(out[2], NodeId(9));
  EXPECT_EQ(out[3], NodeId(0));  // the lowest id among the nodes with 8 free

  // With a rank that puts n9 before n3 and n11 first among the empty nodes.
  std::vector<int32_t> rank = {5, 6, 7, 8, 9, 10, 11, 3, 4, 2, 1, 0};
  framework::CycleContext ranked{s, j, 0, 0, rng, 0, rank};
  out.clear();
  c->Candidates(ranked, req, out);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0], NodeId(7));
  EXPECT_EQ(out[1], NodeId(9));
  EXPECT_EQ(out[2], NodeId(3));
  EXPECT_EQ(out[3], NodeId(11));

  // A 4-GPU task: only the empty nodes fit.
  req.gpus = 4;
  out.clear();
  c->Candidates(ctx, req, out);
  EXPECT_EQ(out, (std::vector<NodeId>{NodeId(0), NodeId(1), NodeId(2), NodeId(4)}));
}

TEST(BinpackCandidates, SharesGoToTheTightestPartlyUsedGpu) {
  Registries reg;
  cluster::ClusterBuilder b;
  for (int i = 0; i < 6; ++i)
    b.AddNode(Node("n" + std::to_string(i), 4, "T4"));
  auto cluster = std::move(b).Build();
  ASSERT_TRUE(cluster.ok());
  state::ClusterState s(*cluster);
  auto share = [&](int node, int gpu, MilliGpu milli, int64_t job) {
    state::Allocation a{NodeId(node), uint64_t{1} << gpu, milli, 0, 0};
    ASSERT_TRUE(s.Apply(state::PlaceTask{TaskKey{JobId(job), 0}, a}).ok());
  };
  share(1, 2, 700, 1);  // n1: a GPU with 300 free
  share(2, 0, 500, 2);  // n2: 500 free
  share(4, 3, 800, 3);  // n4: 200 free (too little for 250)
  ASSERT_TRUE(s.CheckIndexes().ok());
  EXPECT_TRUE(s.nodes_with_share_class(GpuTypeId(0), 300 / state::kShareClassWidth).Test(1));
  auto plugin = reg.plugins.Create("binpack", {{"limit", "3"}});
  ASSERT_TRUE(plugin.ok());
  auto* c = dynamic_cast<framework::CandidatePlugin*>(plugin->get());
  job::JobSpec j;
  Rng rng(0);
  framework::TaskRequest req;
  req.gpus = 1;
  req.milli_per_gpu = 250;
  std::vector<NodeId> out;
  framework::CycleContext ctx{s, j, 0, 0, rng, 0, {}};
  c->Candidates(ctx, req, out);
  // n1 (300 free), n2 (500), then a whole GPU on n4 (3 free GPUs left, fewer
  // than the empty nodes' 4).
  EXPECT_EQ(out, (std::vector<NodeId>{NodeId(1), NodeId(2), NodeId(4)}));
  EXPECT_EQ(BinpackKey(s, req, NodeId(1)), 50 * 128 + 3);
  EXPECT_EQ(BinpackKey(s, req, NodeId(4)), 750 * 128 + 2);
  req.milli_per_gpu = 400;
  out.clear();
  c->Candidates(ctx, req, out);
  EXPECT_EQ(out, (std::vector<NodeId>{NodeId(2), NodeId(1), NodeId(4)}));

  // Inside one share class the tightest GPU wins, not the lowest node id:
  // n0 has 336 free, n3 330 and n5 322, all in class 10 (320..351).
  share(0, 1, 664, 4);
  share(3, 1, 670, 5);
  share(5, 1, 678, 6);
  ASSERT_TRUE(s.CheckIndexes().ok());
  auto one = reg.plugins.Create("binpack", {{"limit", "1"}});
  ASSERT_TRUE(one.ok());
  req.milli_per_gpu = 321;
  out.clear();
  dynamic_cast<framework::CandidatePlugin*>(one->get())->Candidates(ctx, req, out);
  EXPECT_EQ(out, (std::vector<NodeId>{NodeId(5)}));
}

TEST(BinpackCandidates, RejectsBadLimit) {
  Registries reg;
  EXPECT_FALSE(reg.plugins.Create("binpack", {{"limit", "0"}}).ok());
  EXPECT_FALSE(reg.plugins.Create("binpack", {{"limit", "x"}}).ok());
  EXPECT_FALSE(reg.plugins.Create("binpack", {{"other", "1"}}).ok());
}

}  // namespace
}  // namespace berth::plugins
