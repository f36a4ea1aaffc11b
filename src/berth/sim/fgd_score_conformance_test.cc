// The `fgd` policy against the original simulator's reference run (seed 42):
// with the same pod order and node ranking, every pod must land on the same
// node. Also checks the typical pods of the default trace and, as a sanity
// check of the fragmentation measure, the final fragmentation of the exact
// BestFit and FGD runs against the published seed-42 figures.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "berth/cluster/loaders.h"
#include "berth/common/csv.h"
#include "berth/plugins/builtin.h"
#include "berth/plugins/fgd/typical_pods.h"
#include "berth/sim/fgd_protocol.h"
#include "berth/sim/readers/readers.h"
#include "berth/testing/openb.h"
#include "berth/testing/paths.h"

namespace berth::sim {
namespace {

// Column `column` of the published row (workload default, `policy`, `seed`).
double Published(const std::string& file, const std::string& policy, int seed, const std::string& column) {
  auto f = CsvFile::Open(testing::DataDir() + "/fgd-expected-results/" + file);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  if (!f.ok()) return NAN;
  while (f->Next()) {
    std::string workload, sc_policy;
    int64_t s = 0;
    if (!f->GetString("workload", workload).ok() || !f->GetString("sc_policy", sc_policy).ok() ||
        !f->GetInt("seed", s).ok())
      continue;
    if (workload != "openb_pod_list_default" || sc_policy != policy || s != seed) continue;
    double v = NAN;
    EXPECT_TRUE(f->GetDouble(column, v).ok());
    return v;
  }
  ADD_FAILURE() << "no row for " << policy << " seed " << seed << " in " << file;
  return NAN;
}

class FgdConformance : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto in = testing::OpenbDefault();
    ASSERT_TRUE(in.ok()) << in.status().ToString();
    cluster_ = &(*in)->cluster;
    trace_ = &(*in)->trace;
  }

  void SetUp() override {
    ASSERT_TRUE(plugins::RegisterBuiltinPlugins(plugins_).ok());
    ASSERT_TRUE(plugins::RegisterBuiltinPolicies(policies_).ok());
  }

  // Runs `policy` with the reference order and ranking.
  PolicyResult RunReference(const std::string& policy) {
    const std::string d = testing::DataDir() + "/fgd-reference-run/";
    FgdOptions o;
    o.seed = 42;
    o.arrival_order_file = d + "pod_order_seed42.csv";
    o.node_rank_file = d + "node_rank_seed42.csv";
    o.record_placements = true;
    auto in = BuildFgdInput(*cluster_, *trace_, o);
    EXPECT_TRUE(in.ok()) << in.status().ToString();
    auto profile = policies_.Find(policy);
    EXPECT_TRUE(profile.ok()) << profile.status().ToString();
    if (!in.ok() || !profile.ok()) return {};
    auto r = RunFgd(*cluster_, *in, *profile, plugins_, o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : PolicyResult{};
  }

  static const cluster::Cluster* cluster_;
  static const Trace* trace_;
  framework::PluginRegistry plugins_;
  framework::PolicyRegistry policies_;
};

const cluster::Cluster* FgdConformance::cluster_ = nullptr;
const Trace* FgdConformance::trace_ = nullptr;

TEST_F(FgdConformance, TypicalPodsOfTheDefaultTrace) {
  const plugins::fgd::TypicalPods t = plugins::fgd::ComputeTypicalPods(trace_->jobs);
  EXPECT_EQ(t.total_pods, 8152);
  EXPECT_EQ(t.pods.size(), 35u);
  EXPECT_NEAR(100.0 * t.coverage(), 95.26, 0.005);
  double sum = 0;
  for (size_t i = 0; i < t.pods.size(); ++i) {
    sum += t.pods[i].weight;
    EXPECT_LE(t.pods[i].shape.gpus, 1) << "a multi-GPU shape made the cut";
    if (i > 0) {
      EXPECT_GE(t.pods[i - 1].count, t.pods[i].count);
    }
  }
  EXPECT_NEAR(sum, 1.0, 1e-12);
}

TEST_F(FgdConformance, FgdPlacesEveryPodLikeTheOriginal) {
  const PolicyResult r = RunReference("fgd");
  auto ref = CsvFile::Open(testing::DataDir() + "/fgd-reference-run/placements_fgd_seed42.csv");
  ASSERT_TRUE(ref.ok());
  size_t i = 0, mismatches = 0;
  std::string first;
  int64_t failed = 0;
  while (ref->Next()) {
    std::string node;
    ASSERT_TRUE(ref->GetString("node", node).ok());
    ASSERT_LT(i, r.placements.size());
    if (node == "FAILED") ++failed;
    if (r.placements[i].node != node && mismatches++ == 0)
      first = "arrival " + std::to_string(i) + " (" + r.placements[i].pod + "): " + r.placements[i].node +
              " vs reference " + node;
    ++i;
  }
  EXPECT_EQ(i, r.placements.size());
  EXPECT_EQ(mismatches, 0u) << "first difference at " << first;
  EXPECT_EQ(r.allocated_milli_gpu, 5'919'410);
  EXPECT_EQ(r.jobs_failed, failed);
  EXPECT_EQ(failed, 2532);
}

// The published figures are per-event values rounded to 0.01 and averaged over
// the last events (column 130); the final state agrees within that rounding.
void ExpectPublishedFragmentation(const PolicyResult& r, const std::string& policy) {
  const double share = Published("analysis_frag_discrete.csv", policy, 42, "130");
  const double rate = Published("analysis_frag_ratio_discrete.csv", policy, 42, "130");
  EXPECT_NEAR(100.0 * r.fragmented_gpu_share, share, 0.011) << policy;
  EXPECT_NEAR(100.0 * r.fragmentation_ratio, rate, 0.011) << policy;
}

TEST_F(FgdConformance, BestFitFinalFragmentationMatchesPublishedSeed42) {
  const PolicyResult r = RunReference("bestfit");
  ASSERT_EQ(r.allocated_milli_gpu, 5'785'450);
  ExpectPublishedFragmentation(r, "05-BestFit");
}

TEST_F(FgdConformance, FgdFinalFragmentationMatchesPublishedSeed42) {
  const PolicyResult r = RunReference("fgd");
  ASSERT_EQ(r.allocated_milli_gpu, 5'919'410);
  ExpectPublishedFragmentation(r, "06-FGD");
}

TEST_F(FgdConformance, FgdNeedsAWorkload) {
  auto profile = policies_.Find("fgd");
  ASSERT_TRUE(profile.ok());
  auto fw = framework::Framework::Create(*profile, plugins_);
  ASSERT_FALSE(fw.ok());
  EXPECT_NE(fw.status().message().find("workload"), std::string::npos) << fw.status().ToString();
}

}  // namespace
}  // namespace berth::sim
