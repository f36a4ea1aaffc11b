// The expected-waste measure: the GPU waste table R, look-ahead
// fragmentation against FGD's, CPU stranding, and kappa.
#include "berth/plugins/frag/waste_model.h"

#include <gtest/gtest.h>

#include <vector>

#include "berth/plugins/fgd/fragmentation.h"

namespace berth::plugins::frag {
namespace {

cluster::NodeSpec Node(std::string name, MilliCpu cpu, int32_t gpus, std::string type) {
  cluster::NodeSpec n;
  n.name = std::move(name);
  n.cpu_milli = cpu;
  n.memory_mib = 1 << 20;
  n.gpu_count = gpus;
  n.gpu_type = std::move(type);
  return n;
}

cluster::Cluster TwoTypes() {
  cluster::ClusterBuilder b;
  b.AddNode(Node("g2", 64000, 8, "G2"));
  b.AddNode(Node("t4", 16000, 2, "T4"));
  auto c = std::move(b).Build();
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(c).value();
}

job::JobSpec Task(MilliCpu cpu, int32_t gpus, MilliGpu milli, std::string spec = "") {
  job::JobSpec j;
  j.name = "t";
  job::TaskGroup g;
  g.cpu_milli = cpu;
  g.memory_mib = 1024;
  g.gpus = gpus;
  g.milli_per_gpu = milli;
  g.gpu_type_spec = std::move(spec);
  j.groups.push_back(g);
  return j;
}

fgd::TypicalPods One(fgd::PodShape shape) { return {{fgd::TypicalPod{std::move(shape), 1, 1.0}}, 1, 1}; }

class WasteModelTest : public ::testing::Test {
 protected:
  cluster::Cluster cluster_ = TwoTypes();
  GpuTypeId g2_ = *cluster_.FindGpuType("G2");
  GpuTypeId t4_ = *cluster_.FindGpuType("T4");
  // kappa = 4000 / 500 = 8 CPU milli per milli-GPU.
  std::vector<job::JobSpec> workload_ = {Task(4000, 1, 500)};
  std::vector<MilliGpu> g700_ = {700, 1000, 1000, 1000, 1000, 1000, 1000, 1000};
};

TEST_F(WasteModelTest, WorkedExampleFromTheHeader) {
  const fgd::TypicalPods typical = One({4000, 500, 1, ""});
  const WasteModel m(typical, workload_, cluster_);
  EXPECT_DOUBLE_EQ(m.kappa(), 8.0);
  for (MilliGpu f : {0, 1, 300, 499, 500, 700, 999, 1000}) EXPECT_DOUBLE_EQ(m.GpuWaste(g2_, f), f % 500) << f;
  EXPECT_DOUBLE_EQ(m.Lookahead(g700_, 64000, g2_), 200);
  // FGD counts the 700 as usable: it fits a typical pod.
  EXPECT_DOUBLE_EQ(fgd::FragModel(typical, cluster_).NodeFrag(g700_, 64000, g2_), 0);
  EXPECT_DOUBLE_EQ(m.CpuStranded(g700_, 64000), 0);
  EXPECT_DOUBLE_EQ(m.NodeWaste(g700_, 64000, g2_), 200);
  EXPECT_DOUBLE_EQ(m.CpuStranded(g700_, 40000), 2700);
  EXPECT_DOUBLE_EQ(m.NodeWaste(g700_, 40000, g2_), 2900);
}

TEST_F(WasteModelTest, WasteTableMixesTheTypicalPods) {
  fgd::TypicalPods t;
  t.pods = {{{1000, 600, 1, ""}, 1, 0.5}, {{1000, 300, 1, ""}, 1, 0.5}};
  const WasteModel m(t, workload_, cluster_);
  // 200: nothing fits. 300: half the time a 300 fills it, else all wasted.
  EXPECT_DOUBLE_EQ(m.GpuWaste(g2_, 200), 200);
  EXPECT_DOUBLE_EQ(m.GpuWaste(g2_, 300), 0.5 * 300);
  // 1000: a 600 leaves 400 (R(400) = 0.5 * R(100) + 0.5 * 400 = 250), a 300
  // leaves 700 (R(700) = 0.5 * R(100) + 0.5 * R(400) = 175).
  EXPECT_DOUBLE_EQ(m.GpuWaste(g2_, 400), 0.5 * 100 + 0.5 * 400);
  EXPECT_DOUBLE_EQ(m.GpuWaste(g2_, 1000), 0.5 * 250 + 0.5 * 175);
}

TEST_F(WasteModelTest, WithoutLookaheadItIsFgdWithoutCpuOnlyPods) {
  fgd::TypicalPods t;
  t.pods = {{{4000, 500, 1, ""}, 5, 0.5},
            {{8000, 200, 1, "T4"}, 2, 0.2},
            {{16000, 1000, 2, ""}, 2, 0.2},
            {{40000, 1000, 1, ""}, 1, 0.1}};
  const WasteModel m(t, workload_, cluster_, {.lookahead = false, .cpu_weight = 0});
  const fgd::FragModel f(t, cluster_);
  const std::vector<std::vector<MilliGpu>> nodes = {
      g700_, {0, 100, 1000, 1000, 1000, 1000, 1000, 1000}, {150, 600, 0, 0, 0, 0, 0, 1000}, {0, 0, 0, 0, 0, 0, 0, 0}};
  for (const auto& g : nodes) {
    for (MilliCpu cpu : {64000, 20000, 6000, 1000}) {
      EXPECT_NEAR(m.NodeWaste(g, cpu, g2_), f.NodeFrag(g, cpu, g2_), 1e-9);
      const std::vector<MilliGpu> t4(g.begin(), g.begin() + 2);
      EXPECT_NEAR(m.NodeWaste(t4, cpu, t4_), f.NodeFrag(t4, cpu, t4_), 1e-9);
    }
  }
}

TEST_F(WasteModelTest, SpecExcludingTheTypeOrShortCpuWastesEverything) {
  const WasteModel m(One({4000, 500, 1, "T4"}), workload_, cluster_, {.cpu_weight = 0});
  EXPECT_DOUBLE_EQ(m.Lookahead(g700_, 64000, g2_), 7700);
  const std::vector<MilliGpu> t4 = {700, 1000};
  EXPECT_DOUBLE_EQ(m.Lookahead(t4, 16000, t4_), 200);
  EXPECT_DOUBLE_EQ(m.Lookahead(t4, 3999, t4_), 1700);
  // The table is per type: on G2 no typical pod may use the GPU.
  EXPECT_DOUBLE_EQ(m.GpuWaste(g2_, 1000), 1000);
  EXPECT_DOUBLE_EQ(m.GpuWaste(t4_, 1000), 0);
}

TEST_F(WasteModelTest, MultiGpuTypicalPodNeedsThatManyGpus) {
  const WasteModel m(One({1000, 1000, 2, ""}), workload_, cluster_, {.cpu_weight = 0});
  EXPECT_DOUBLE_EQ(m.Lookahead(std::vector<MilliGpu>{1000, 600, 1000}, 64000, g2_), 600);
  EXPECT_DOUBLE_EQ(m.Lookahead(std::vector<MilliGpu>{1000, 600, 999}, 64000, g2_), 2599);
  // No single-GPU typical pod: a partly free GPU is all waste.
  EXPECT_DOUBLE_EQ(m.GpuWaste(g2_, 999), 999);
}

TEST_F(WasteModelTest, KappaIsCpuPerGpuMilliOfTheGpuTasks) {
  std::vector<job::JobSpec> w = {Task(4000, 1, 500), Task(32000, 0, kMilliPerGpu), Task(16000, 2, 1000)};
  w[2].groups[0].count = 2;
  // (4000 + 2 * 16000) / (500 + 2 * 2 * 1000); the CPU-only task is left out.
  EXPECT_DOUBLE_EQ(CpuPerGpuMilli(w), 36000.0 / 4500.0);
  EXPECT_DOUBLE_EQ(CpuPerGpuMilli(std::vector<job::JobSpec>{Task(8000, 0, kMilliPerGpu)}), 0);
  const WasteModel m(One({4000, 500, 1, ""}), std::vector<job::JobSpec>{Task(8000, 0, kMilliPerGpu)}, cluster_);
  EXPECT_DOUBLE_EQ(m.CpuStranded(g700_, 0), 0);
}

TEST_F(WasteModelTest, ReadsTheNodeFromTheState) {
  const WasteModel m(One({4000, 500, 1, ""}), workload_, cluster_);
  state::ClusterState s(cluster_);
  ASSERT_TRUE(s.Apply(state::PlaceTask{{JobId(1), 0}, {NodeId(0), 1, 300, 24000, 1024}}).ok());
  EXPECT_DOUBLE_EQ(m.NodeWaste(s, NodeId(0)), m.NodeWaste(g700_, 40000, g2_));
}

}  // namespace
}  // namespace berth::plugins::frag
