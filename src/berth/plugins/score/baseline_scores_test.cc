// The FGD paper's baseline scores (and worstfit) on a tiny hand-built cluster,
// checked against numbers worked out by hand from the formulas in each
// plugin's header comment.
#include <map>

#include "berth/plugins/score/score_test_util.h"

namespace berth::plugins {
namespace {

// a: 64 cores, 8 GPUs; b: 32 cores, 4 GPUs; c: 96 cores, 2 GPUs;
// d: 64 cores, 4 GPUs; e: 64 cores, 8 GPUs.
class BaselineScores : public testing::ScoreScenario {
 protected:
  void SetUp() override {
    AddNode("a", 64000, 8);
    AddNode("b", 32000, 4);
    AddNode("c", 96000, 2);
    AddNode("d", 64000, 4);
    AddNode("e", 64000, 8);
    Build();
  }
};

TEST_F(BaselineScores, DotProd) {
  Hold("a", 0b1, 1000, 16000);  // a: 48 cores and 7000 milli-GPU free
  // share 500m, 8 cores:
  //   a: 1 - (0.375*0.0625 + 0.875*0.0625)/2 = 0.9609375 -> 96
  //   b: 1 - (0.25*0.0625 + 0.5*0.0625)/2    = 0.9765625 -> 97
  EXPECT_EQ(ScoreOf("dotprod", Share(500, 8000), "a"), 96);
  EXPECT_EQ(ScoreOf("dotprod", Share(500, 8000), "b"), 97);
  // 2 whole GPUs, no CPU: a: 1 - 0.875*0.25/2 -> 89; b: 1 - 0.5*0.25/2 -> 93.
  EXPECT_EQ(ScoreOf("dotprod", Whole(2, 0), "a"), 89);
  EXPECT_EQ(ScoreOf("dotprod", Whole(2, 0), "b"), 93);
  // Not enough CPU left: 0.
  EXPECT_EQ(ScoreOf("dotprod", Share(500, 40000), "b"), 0);
  // No normalization; the least aligned node wins; default GPU choice.
  EXPECT_EQ(Normalized("dotprod", Share(500, 8000), {"a", "b"}), (std::vector<int64_t>{96, 97}));
  EXPECT_EQ(Winner("dotprod", Share(500, 8000), {"a", "b"}), "b");
  EXPECT_FALSE(Plugin("dotprod")->SelectGpus(Ctx(), Share(500, 8000), N("a")).has_value());
}

TEST_F(BaselineScores, GpuPacking) {
  Hold("a", 0b01, 700);  // a: GPU0 300 free
  Hold("a", 0b10, 200);  // a: GPU1 800 free, GPUs 2..7 completely free
  Hold("c", 0b01, 1000); // c: GPU1 completely free, node in use
  // Share 250 on a: GPU0 (300 free) fits first: 100 - (300*100/1000)/10 = 97.
  EXPECT_EQ(ScoreOf("gpupacking", Share(250, 1000), "a"), 97);
  // Share 500 on a: GPU0 too small, GPU1 (800): 100 - 80/10 = 92.
  EXPECT_EQ(ScoreOf("gpupacking", Share(500, 1000), "a"), 92);
  // c must use a completely free GPU on a used node: max(50 - 1, 33) = 49.
  EXPECT_EQ(ScoreOf("gpupacking", Share(250, 1000), "c"), 49);
  // 2 whole GPUs on a: two completely free GPUs: 50 - 2 = 48.
  EXPECT_EQ(ScoreOf("gpupacking", Whole(2, 1000), "a"), 48);
  // Idle nodes: max(33 - free GPUs, free GPUs): b (4) 29, e (8) 25.
  EXPECT_EQ(ScoreOf("gpupacking", Share(250, 1000), "b"), 29);
  EXPECT_EQ(ScoreOf("gpupacking", Whole(2, 1000), "e"), 25);
  // No GPU asked: 0.
  EXPECT_EQ(ScoreOf("gpupacking", CpuOnly(1000), "a"), 0);
  EXPECT_EQ(Winner("gpupacking", Share(250, 1000), {"b", "c", "e", "a"}), "a");
  EXPECT_FALSE(Plugin("gpupacking")->SelectGpus(Ctx(), Share(250, 1000), N("a")).has_value());
}

TEST_F(BaselineScores, GpuClustering) {
  Hold("a", 0b1, 700);                 // a: {share}, 7300 free
  Hold("b", 0b01, 1000);               // b: {1-gpu, share}, 2700 free
  Hold("b", 0b10, 300);
  Hold("d", 0, 0, 4000);               // d: a CPU-only task: no tag, 4000 free
  Hold("e", 0b11, 1000);               // e: {2-gpu}, 6000 free
  // fullness = 25 * (8000 - free) / 8000: a 2, b 16, c 18, d 12, e 6.
  const auto share = Share(300, 1000);
  EXPECT_EQ(ScoreOf("gpuclustering", share, "a"), 75 + 2);   // only its own tag
  EXPECT_EQ(ScoreOf("gpuclustering", share, "b"), 50 + 16);  // its tag among others
  EXPECT_EQ(ScoreOf("gpuclustering", share, "c"), 25 + 18);  // no tagged task
  EXPECT_EQ(ScoreOf("gpuclustering", share, "d"), 25 + 12);  // CPU-only tasks do not count
  EXPECT_EQ(ScoreOf("gpuclustering", share, "e"), 0 + 6);    // only other tags
  const auto one = Whole(1, 1000);
  EXPECT_EQ(ScoreOf("gpuclustering", one, "a"), 0 + 2);
  EXPECT_EQ(ScoreOf("gpuclustering", one, "b"), 50 + 16);
  EXPECT_EQ(ScoreOf("gpuclustering", Whole(2, 1000), "e"), 75 + 6);
  EXPECT_EQ(ScoreOf("gpuclustering", CpuOnly(1000), "a"), 0);
  EXPECT_EQ(Winner("gpuclustering", share, {"b", "c", "d", "e", "a"}), "a");
  EXPECT_EQ(Winner("gpuclustering", Whole(2, 1000), {"a", "b", "c", "d", "e"}), "e");
  EXPECT_FALSE(Plugin("gpuclustering")->SelectGpus(Ctx(), share, N("a")).has_value());
}

TEST_F(BaselineScores, RandomPicksOneNodeUniformly) {
  const std::vector<std::string> nodes = {"a", "b", "c", "d", "e"};
  std::map<std::string, int> wins;
  const int draws = 5000;
  for (int i = 0; i < draws; ++i) {
    std::vector<int64_t> s = Normalized("random", Share(300, 1000), nodes);
    int hundreds = 0;
    for (size_t k = 0; k < s.size(); ++k) {
      EXPECT_TRUE(s[k] == 0 || s[k] == 100);
      if (s[k] == 100) ++hundreds, ++wins[nodes[k]];
    }
    EXPECT_EQ(hundreds, 1);
  }
  for (const auto& n : nodes) {  // 1000 expected each; sd ~28
    EXPECT_GT(wins[n], 850) << n;
    EXPECT_LT(wins[n], 1150) << n;
  }
}

TEST_F(BaselineScores, RandomPicksAFittingGpuUniformly) {
  Hold("a", 0b00000001, 900);  // GPU0: 100 free (too small for 300)
  Hold("a", 0b00000010, 500);  // GPU1: 500 free
  Hold("a", 0b11111100, 1000); // GPUs 2..7 full
  Hold("b", 0b0001, 800);      // b: GPU0 200 free; GPUs 1..3 free
  auto p = Plugin("random");
  std::map<uint64_t, int> picks;
  for (int i = 0; i < 3000; ++i) {
    auto g = p->SelectGpus(Ctx(), Share(300, 1000), N("b"));
    ASSERT_TRUE(g.has_value());
    ++picks[*g];
  }
  EXPECT_EQ(picks.size(), 3u);  // GPUs 1, 2, 3; never GPU0
  for (uint64_t m : {0b0010u, 0b0100u, 0b1000u}) {
    EXPECT_GT(picks[m], 850);
    EXPECT_LT(picks[m], 1150);
  }
  // The only fitting GPU of a.
  EXPECT_EQ(p->SelectGpus(Ctx(), Share(300, 1000), N("a")), std::optional<uint64_t>(0b10));
  // Whole GPUs: the default (lowest-index completely free).
  EXPECT_FALSE(p->SelectGpus(Ctx(), Whole(2, 1000), N("b")).has_value());
}

TEST_F(BaselineScores, WorstFitSpreads) {
  Hold("a", 0b001, 1000, 16000);  // a: 48 cores, GPU0 used
  Hold("a", 0b010, 200, 0);       // a: GPU1 800 free -> 6800 free
  // share 500, 8 cores, raw = trunc(100 * (0.5 cpu_left/128000 + 0.5 gpu_left/8000)):
  //   a: 0.5*40000/128000 + 0.5*6300/8000 = 0.15625 + 0.39375  -> 55
  //   b: 0.5*24000/128000 + 0.5*3500/8000 = 0.09375 + 0.21875  -> 31
  //   c: 0.5*88000/128000 + 0.5*1500/8000 = 0.34375 + 0.09375  -> 43
  EXPECT_EQ(ScoreOf("worstfit", Share(500, 8000), "a"), 55);
  EXPECT_EQ(ScoreOf("worstfit", Share(500, 8000), "b"), 31);
  EXPECT_EQ(ScoreOf("worstfit", Share(500, 8000), "c"), 43);
  // Min-max normalized: (s - 31) * 100 / 24.
  EXPECT_EQ(Normalized("worstfit", Share(500, 8000), {"a", "b", "c"}), (std::vector<int64_t>{100, 0, 50}));
  EXPECT_EQ(Winner("worstfit", Share(500, 8000), {"b", "c", "a"}), "a");
  // A share takes the emptiest fitting GPU (lowest index on ties): GPU2.
  EXPECT_EQ(Plugin("worstfit")->SelectGpus(Ctx(), Share(500, 8000), N("a")), std::optional<uint64_t>(0b100));
  EXPECT_FALSE(Plugin("worstfit")->SelectGpus(Ctx(), Whole(1, 1000), N("a")).has_value());
}

TEST_F(BaselineScores, PoliciesAreRegistered) {
  for (const char* name : {"dotprod", "gpupacking", "gpuclustering", "random", "worstfit"}) {
    auto p = policies_.Find(name);
    ASSERT_TRUE(p.ok()) << name;
    ASSERT_EQ(p->score.size(), 1u);
    EXPECT_EQ(p->score[0].name, name);
  }
}

}  // namespace
}  // namespace berth::plugins
