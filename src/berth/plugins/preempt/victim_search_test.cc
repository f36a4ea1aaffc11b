// The greedy victim search against an exhaustive search on small random
// clusters: same feasibility, a minimal set every time, and its cost against
// the optimum.
#include <gtest/gtest.h>

#include <algorithm>
#include <unordered_map>

#include "berth/common/rng.h"
#include "berth/plugins/preempt/preempt_test_util.h"
#include "berth/plugins/preempt/victim_search.h"

namespace berth::plugins::preempt {
namespace {

using testing::At;
using testing::kHour;
using testing::kMinute;
using testing::PreemptHarness;

struct Exact {
  bool found = false;
  double cost = 0;
  size_t size = 0;
};

// Every subset of the candidates: the least (cost, size) that fits.
Exact ExhaustiveSearch(const framework::PreemptContext& ctx, const GangNeed& need, Eligibility& elig) {
  Room room;
  room.Attach(ctx.view.state);
  const auto cands = elig.candidates();
  const int32_t nodes = ctx.view.state.cluster().num_nodes();
  Exact best;
  const uint32_t n = static_cast<uint32_t>(cands.size());
  for (uint32_t mask = 1; mask < (1u << n); ++mask) {
    double cost = 0;
    for (uint32_t i = 0; i < n; ++i)
      if (mask >> i & 1) cost += cands[i].cost;
    const size_t size = static_cast<size_t>(std::popcount(mask));
    if (best.found && (cost > best.cost || (cost == best.cost && size >= best.size))) continue;
    room.Clear();
    elig.Reset();
    bool ok = true;
    for (uint32_t i = 0; i < n && ok; ++i) {
      if (!(mask >> i & 1)) continue;
      ok = elig.CanTake(cands[i]);
      elig.Take(cands[i], +1);
      room.Evict(ctx.view.running[cands[i].run], +1, 0, nodes);
    }
    if (ok && room.Fits(need, 0, nodes)) best = {true, cost, size};
  }
  elig.Reset();
  return best;
}

// Whether the gang fits with these victims (running indexes).
bool FitsWith(const framework::PreemptContext& ctx, const GangNeed& need, const std::vector<int32_t>& victims) {
  Room room;
  room.Attach(ctx.view.state);
  const int32_t nodes = ctx.view.state.cluster().num_nodes();
  for (int32_t r : victims) room.Evict(ctx.view.running[r], +1, 0, nodes);
  return room.Fits(need, 0, nodes);
}

// Cuts each of `nodes` nodes' 8 GPUs into chunks of 1/2/4/8; leaves one chunk in
// `free_one_in` free and joins one in `gang_one_in` with an equal chunk of a
// later node (`skip_ahead`: a random number of chunks later), a 2-node gang.
// start_job(tasks) starts each job (drawing its priority, start and interval).
template <typename StartJob>
void FillChunks(Rng& rng, int nodes, uint64_t free_one_in, uint64_t gang_one_in, bool skip_ahead, StartJob start_job) {
  struct Chunk { int node, first, gpus; };
  std::vector<Chunk> chunks;
  for (int n = 0; n < nodes; ++n) {
    int g = 0;
    while (g < 8) {
      static const int kSizes[] = {1, 2, 4, 8};
      int size = kSizes[rng.Uniform(4)];
      while (g % size != 0 || g + size > 8) size /= 2;
      chunks.push_back({n, g, size});
      g += size;
    }
  }
  std::vector<bool> used(chunks.size(), false);
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (used[i]) continue;
    used[i] = true;
    if (rng.Uniform(free_one_in) == 0) continue;  // left free
    std::vector<At> tasks{{"node-" + std::to_string(chunks[i].node), chunks[i].gpus, chunks[i].first}};
    if (rng.Uniform(gang_one_in) == 0) {
      for (size_t k = i + 1 + (skip_ahead ? rng.Uniform(8) : 0); k < chunks.size(); ++k) {
        if (!used[k] && chunks[k].node != chunks[i].node && chunks[k].gpus == chunks[i].gpus) {
          used[k] = true;
          tasks.push_back({"node-" + std::to_string(chunks[k].node), chunks[k].gpus, chunks[k].first});
          break;
        }
      }
    }
    start_job(std::move(tasks));
  }
}

const TimeUs kIntervals[] = {-1, 30 * kMinute, kHour, 2 * kHour};

class RandomCases : public PreemptHarness, public ::testing::Test {
 protected:
  // Fills 4 nodes x 8 GPUs with random jobs (FillChunks: a few GPUs stay
  // free, some 2-node gangs). Start times and checkpoint intervals vary.
  void Fill(Rng& rng) {
    Build("4x8:H100");
    clock_.Set(10 * kHour);
    int jobs = 0;
    FillChunks(rng, 4, 10, 5, false, [&](std::vector<At> tasks) {
      const int32_t priority = rng.Uniform(6) == 0 ? 20 : 0;
      const TimeUs start = static_cast<TimeUs>(rng.Uniform(9 * 60)) * kMinute;
      Start({"r" + std::to_string(jobs++), tasks, priority, "t", start, kIntervals[rng.Uniform(4)]});
    });
  }
};

TEST_F(RandomCases, GreedyIsMinimalAndNearTheOptimum) {
  Rng rng(7);
  int cases = 0, optimal = 0, feasible = 0;
  double worst = 1;
  for (int trial = 0; trial < 300; ++trial) {
    Fill(rng);
    static const int kGpus[] = {1, 2, 4, 8};
    const int32_t gpus = kGpus[rng.Uniform(4)];
    const int32_t tasks = 1 + static_cast<int32_t>(rng.Uniform(gpus == 8 ? 3 : 4));
    JobId j = Submit("j", tasks, gpus, 10);
    const scheduler::JobRecord* rec = sched_->Find(j);
    const framework::SchedulerView view = View();
    const framework::Verdict verdict = framework::Verdict::Unschedulable("test", "no room");
    framework::PreemptContext ctx{rec->spec, rec->queue, verdict, view, JobId()};
    auto need = GangNeed::From(rec->spec);
    ASSERT_TRUE(need.has_value());
    Eligibility elig;
    if (!elig.Build(ctx, 600 * kUsPerSecond) || elig.candidates().size() > 14) continue;
    Room probe;
    probe.Attach(view.state);
    if (probe.Fits(*need, 0, cluster_->num_nodes())) continue;  // fits without preemption
    ++cases;
    VictimSearch search;
    std::optional<VictimSet> greedy = search.FindIn(ctx, *need, elig, 0, cluster_->num_nodes());
    const Exact exact = ExhaustiveSearch(ctx, *need, elig);
    ASSERT_EQ(greedy.has_value(), exact.found) << "trial " << trial;
    if (!greedy) continue;
    ++feasible;
    ASSERT_TRUE(FitsWith(ctx, *need, greedy->victims)) << "trial " << trial;
    for (size_t drop = 0; drop < greedy->victims.size(); ++drop) {
      std::vector<int32_t> fewer = greedy->victims;
      fewer.erase(fewer.begin() + static_cast<std::ptrdiff_t>(drop));
      EXPECT_FALSE(FitsWith(ctx, *need, fewer)) << "trial " << trial << ": not minimal";
    }
    EXPECT_GE(greedy->cost, exact.cost - 1e-6) << "trial " << trial;
    if (greedy->cost <= exact.cost + 1e-6) ++optimal;
    if (exact.cost > 0) worst = std::max(worst, greedy->cost / exact.cost);
  }
  std::printf("random cases: %d searched, %d feasible, %d at the optimum, worst cost ratio %.3f\n", cases, feasible,
              optimal, worst);
  EXPECT_GE(cases, 150);
  EXPECT_GE(optimal, feasible * 9 / 10);
  EXPECT_LE(worst, 2.0);
}

// Running jobs by id, from the view's array (as the scheduler's lookup answers).
class ArrayLookup final : public framework::RunningLookup {
 public:
  explicit ArrayLookup(std::span<const framework::RunningJob> running) {
    for (size_t i = 0; i < running.size(); ++i) slot_[running[i].id.value()] = static_cast<int32_t>(i);
  }
  int32_t SlotOf(JobId id) const override {
    const auto it = slot_.find(id.value());
    return it == slot_.end() ? -1 : it->second;
  }

 private:
  std::unordered_map<int64_t, int32_t> slot_;
};

class NodeSearchCases : public PreemptHarness, public ::testing::Test {
 protected:
  // 32 nodes x 8 GPUs in leaves of 4 (FillChunks: some free, some gangs), at
  // random priorities, start times and checkpoint intervals.
  void Fill(Rng& rng) {
    Build("32x8:H100/leaf=4/spine=4");
    clock_.Set(10 * kHour);
    int jobs = 0;
    FillChunks(rng, 32, 12, 6, true, [&](std::vector<At> tasks) {
      const int32_t priority = static_cast<int32_t>(rng.Uniform(3)) * 10;
      // Some start times share a value: equal costs, so ties are decided by the rules.
      const bool round = rng.Uniform(2) == 0;
      const TimeUs start = static_cast<TimeUs>(round ? 60 * rng.Uniform(9) : rng.Uniform(9 * 60)) * kMinute;
      Start({"r" + std::to_string(jobs++), tasks, priority, "t", start, kIntervals[rng.Uniform(4)]});
    });
  }
};

// With the view's lookup, the NVLink level of a one-shape job is decided from
// the nodes of the cheapest candidates (VictimSearch::FindOnNodes); without
// it, from every domain. Same set, domain and level, case by case.
TEST_F(NodeSearchCases, SameSetFromTheCheapestNodesAsFromEveryDomain) {
  Rng rng(11);
  int compared = 0, found = 0;
  int64_t decided = 0;
  for (int trial = 0; trial < 400; ++trial) {
    Fill(rng);
    static const int kGpus[] = {1, 1, 2, 4, 8};
    const int32_t gpus = kGpus[rng.Uniform(5)];
    const int32_t tasks = gpus == 8 ? 1 + static_cast<int32_t>(rng.Uniform(2)) : 1 + static_cast<int32_t>(rng.Uniform(3));
    JobId j = Submit("j", tasks, gpus, 10 + 10 * static_cast<int32_t>(rng.Uniform(2)));
    const scheduler::JobRecord* rec = sched_->Find(j);
    const framework::SchedulerView view = View();
    ArrayLookup lookup(view.running);
    const framework::SchedulerView with_lookup{view.state, view.ledger, view.running, view.now, view.node_rank,
                                               0, &lookup};
    const framework::Verdict verdict = framework::Verdict::Unschedulable("test", "no room");
    framework::PreemptContext ctx{rec->spec, rec->queue, verdict, view, JobId()};
    framework::PreemptContext fast_ctx{rec->spec, rec->queue, verdict, with_lookup, JobId()};
    auto need = GangNeed::From(rec->spec);
    ASSERT_TRUE(need.has_value());
    const TimeUs guard = rng.Uniform(3) == 0 ? 0 : 600 * kUsPerSecond;
    Eligibility elig, fast_elig;
    const bool any = elig.Build(ctx, guard);
    ASSERT_EQ(fast_elig.Build(fast_ctx, guard), any);
    if (!any) continue;
    ++compared;
    VictimSearch search, fast_search;
    const std::optional<VictimSet> want = search.Find(ctx, *need, elig);
    const std::optional<VictimSet> got = fast_search.Find(fast_ctx, *need, fast_elig);
    decided += fast_search.decided_on_nodes();
    ASSERT_EQ(got.has_value(), want.has_value()) << "trial " << trial;
    if (!want) continue;
    ++found;
    EXPECT_EQ(got->domain, want->domain) << "trial " << trial;
    EXPECT_EQ(got->level, want->level) << "trial " << trial;
    EXPECT_EQ(got->victims, want->victims) << "trial " << trial;
    EXPECT_EQ(got->cost, want->cost) << "trial " << trial;
  }
  std::printf("node search: %d compared, %d with a set, %lld decided from the cheapest nodes\n", compared, found,
              static_cast<long long>(decided));
  EXPECT_GE(found, 150);
  EXPECT_GE(decided, 100);
}

}  // namespace
}  // namespace berth::plugins::preempt
