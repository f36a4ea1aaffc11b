// Time-based replay: hand-computed schedules on tiny clusters (FIFO vs SJF,
// head-of-line blocking, gangs, jobs without a duration, partitions), bounded
// series, determinism, index checks, and the openb trace.
#include "berth/sim/replay.h"

#include <gtest/gtest.h>

#include <cmath>

#include "berth/cluster/loaders.h"
#include "berth/common/csv.h"
#include "berth/common/rng.h"
#include "berth/plugins/builtin.h"
#include "berth/sim/readers/readers.h"
#include "berth/testing/openb.h"
#include "berth/testing/paths.h"

namespace berth::sim {
namespace {

// A job of `tasks` tasks of `gpus` whole GPUs each (one gang), submitted at
// `submit_s`, running `dur_s` seconds (< 0: no duration).
job::JobSpec Job(int64_t id, double submit_s, double dur_s, int32_t gpus, int32_t tasks = 1,
                 std::string tenant = "") {
  job::JobSpec j;
  j.id = JobId(id);
  j.name = "j" + std::to_string(id);
  j.tenant = std::move(tenant);
  j.submit_time = SecondsToUs(submit_s);
  j.duration = dur_s < 0 ? -1 : SecondsToUs(dur_s);
  job::TaskGroup g;
  g.count = tasks;
  g.gpus = gpus;
  g.cpu_milli = 1000;
  j.groups.push_back(g);
  return j;
}

class Replay : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(plugins::RegisterBuiltinPlugins(plugins_).ok());
    ASSERT_TRUE(plugins::RegisterBuiltinPolicies(policies_).ok());
  }

  PolicyResult Run(const std::string& cluster_spec, std::vector<job::JobSpec> jobs, const std::string& policy,
                   ReplayOptions o = {}) {
    auto c = cluster::ParseClusterSpec(cluster_spec);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    Trace t;
    t.jobs = std::move(jobs);
    auto p = policies_.Find(policy);
    EXPECT_TRUE(p.ok());
    auto r = RunReplay(*c, t, *p, plugins_, o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : PolicyResult{};
  }

  framework::PluginRegistry plugins_;
  framework::PolicyRegistry policies_;
};

// One GPU; A (100 s) at 0, B (50 s) at 1, C (10 s) at 2.
//   FIFO: A 0-100, B 100-150, C 150-160: JCT 100, 149, 158; delay 0, 99, 148.
//   SJF:  A 0-100, C 100-110, B 110-160: JCT 100, 108, 159; delay 0, 98, 109.
std::vector<job::JobSpec> ThreeJobs() { return {Job(0, 0, 100, 1), Job(1, 1, 50, 1), Job(2, 2, 10, 1)}; }

TEST_F(Replay, FifoOnOneGpu) {
  PolicyResult r = Run("1x1:V100", ThreeJobs(), "fifo");
  EXPECT_EQ(r.mode, "replay");
  EXPECT_EQ(r.jobs_total, 3);
  EXPECT_EQ(r.jobs_placed, 3);
  EXPECT_EQ(r.jobs_unfinished, 0);
  EXPECT_EQ(r.jobs_failed, 0);
  EXPECT_DOUBLE_EQ(r.jct_s.mean, (100.0 + 149 + 158) / 3);
  EXPECT_DOUBLE_EQ(r.jct_s.p50, 149);
  EXPECT_DOUBLE_EQ(r.jct_s.max, 158);
  EXPECT_DOUBLE_EQ(r.queue_delay_s.mean, (0.0 + 99 + 148) / 3);
  EXPECT_DOUBLE_EQ(r.makespan_s, 160);
  EXPECT_DOUBLE_EQ(r.utilization, 1.0);
  EXPECT_DOUBLE_EQ(r.gpu_allocation_ratio, 1.0);
  EXPECT_EQ(r.allocated_milli_gpu, 0);
  EXPECT_EQ(r.jcts_s, (std::vector<double>{100, 149, 158}));
}

TEST_F(Replay, SjfOnOneGpu) {
  PolicyResult r = Run("1x1:V100", ThreeJobs(), "sjf");
  EXPECT_EQ(r.jobs_placed, 3);
  EXPECT_DOUBLE_EQ(r.jct_s.mean, (100.0 + 108 + 159) / 3);
  EXPECT_DOUBLE_EQ(r.queue_delay_s.mean, (0.0 + 98 + 109) / 3);
  EXPECT_DOUBLE_EQ(r.makespan_s, 160);
  EXPECT_LT(r.jct_s.mean, Run("1x1:V100", ThreeJobs(), "fifo").jct_s.mean);
}

// Two GPUs; A (1 GPU, 100 s) at 0, B (2 GPUs, 10 s) at 1, C (1 GPU, 10 s) at 2.
//   strict FIFO: B blocks C. A 0-100, B 100-110, C 110-120: JCT 100, 109, 118.
//   SJF (B and C tie on runtime; B is older but does not fit, C goes past it):
//                A 0-100, C 2-12, B 100-110: JCT 100, 109, 10.
TEST_F(Replay, HeadOfLineBlockingOnlyInStrictFifo) {
  std::vector<job::JobSpec> jobs = {Job(0, 0, 100, 1), Job(1, 1, 10, 2), Job(2, 2, 10, 1)};
  PolicyResult fifo = Run("1x2:V100", jobs, "fifo");
  EXPECT_DOUBLE_EQ(fifo.jct_s.mean, (100.0 + 109 + 118) / 3);
  EXPECT_DOUBLE_EQ(fifo.makespan_s, 120);
  PolicyResult sjf = Run("1x2:V100", jobs, "sjf");
  EXPECT_DOUBLE_EQ(sjf.jct_s.mean, (100.0 + 109 + 10) / 3);
  EXPECT_DOUBLE_EQ(sjf.queue_delay_s.max, 99);
  EXPECT_DOUBLE_EQ(sjf.makespan_s, 110);
  // Busy GPU-seconds: 100 + 20 + 10 = 130 of 2 x 110.
  EXPECT_DOUBLE_EQ(sjf.utilization, 130.0 / 220);
}

// Two nodes of 4 GPUs and 64 cores. A (1 GPU, 40 cores, 100 s) at 0 takes
// node 0. The gang G (2 tasks x (1 GPU, 40 cores), 10 s) at 1 fits its first
// task on node 1 only and its second nowhere: it is rolled back and waits
// whole, so S (4 GPUs, 10 s) at 2 starts at once on node 1. G starts at 100
// when A leaves: JCT A 100, G 109, S 10.
TEST_F(Replay, GangIsAllOrNothing) {
  std::vector<job::JobSpec> jobs = {Job(0, 0, 100, 1), Job(1, 1, 10, 1, /*tasks=*/2), Job(2, 2, 10, 4)};
  jobs[0].groups[0].cpu_milli = 40'000;
  jobs[1].groups[0].cpu_milli = 40'000;
  for (const char* policy : {"sjf", "bestfit"}) {
    PolicyResult r = Run("2x4:V100", jobs, policy);
    EXPECT_EQ(r.jobs_placed, 3) << policy;
    EXPECT_DOUBLE_EQ(r.jct_s.mean, (100.0 + 109 + 10) / 3) << policy;
    EXPECT_DOUBLE_EQ(r.queue_delay_s.max, 99) << policy;
    EXPECT_DOUBLE_EQ(r.makespan_s, 110) << policy;
    // GPU-seconds: 100 + 20 + 40 = 160 of 8 x 110.
    EXPECT_DOUBLE_EQ(r.utilization, 160.0 / 880) << policy;
  }
}

// A gang larger than the cluster and a task larger than any node can never
// fit: both fail at once (never fit); the other job runs.
TEST_F(Replay, NeverFit) {
  std::vector<job::JobSpec> jobs = {Job(0, 0, 10, 4, /*tasks=*/3), Job(1, 0, 10, 8), Job(2, 5, 10, 2)};
  PolicyResult r = Run("2x4:V100", jobs, "bestfit");
  EXPECT_EQ(r.jobs_placed, 1);
  EXPECT_EQ(r.jobs_failed, 2);
  EXPECT_EQ(r.jobs_never_fit, 2);
  EXPECT_EQ(r.jobs_unfinished, 0);
  EXPECT_EQ(r.jct_s.count, 1);
  EXPECT_DOUBLE_EQ(r.jct_s.mean, 10);
  EXPECT_DOUBLE_EQ(r.makespan_s, 15);
}

// A job without a duration holds its GPU to the end of the run; the job
// behind it never starts. The run ends at the last arrival.
TEST_F(Replay, JobWithoutDurationNeverCompletes) {
  std::vector<job::JobSpec> jobs = {Job(0, 0, -1, 1), Job(1, 1, 10, 1)};
  PolicyResult r = Run("1x1:V100", jobs, "fifo");
  EXPECT_EQ(r.jobs_placed, 1);
  EXPECT_EQ(r.jobs_unfinished, 2);
  EXPECT_EQ(r.jct_s.count, 0);
  EXPECT_DOUBLE_EQ(r.makespan_s, 1);
  EXPECT_EQ(r.allocated_milli_gpu, 1000);
  EXPECT_DOUBLE_EQ(r.gpu_allocation_ratio, 1.0);
  EXPECT_DOUBLE_EQ(r.utilization, 0);  // nothing completed
}

// Partitions: tenant "a" and "b" each own one single-GPU node. Two jobs of a
// queue on a's node while b's runs at once; tenant "c" has no partition.
TEST_F(Replay, PartitionsByTenant) {
  std::vector<job::JobSpec> jobs = {Job(0, 0, 100, 1, 1, "a"), Job(1, 1, 10, 1, 1, "a"),
                                    Job(2, 1, 10, 1, 1, "b"), Job(3, 1, 10, 1, 1, "c")};
  ReplayOptions o;
  o.partition_level = cluster::Level::kCluster;
  PolicyResult r = Run("1x1:V100/cluster=a+1x1:V100/cluster=b", jobs, "fifo", o);
  EXPECT_EQ(r.jobs_placed, 3);
  EXPECT_EQ(r.jobs_never_fit, 1);
  EXPECT_EQ(r.jobs_failed, 1);
  EXPECT_DOUBLE_EQ(r.jct_s.mean, (100.0 + 109 + 10) / 3);
  // Domains named with a prefix: "vc-" + tenant.
  o.partition_prefix = "vc-";
  PolicyResult prefixed = Run("1x1:V100/cluster=vc-a+1x1:V100/cluster=vc-b", jobs, "fifo", o);
  EXPECT_EQ(prefixed.jobs_never_fit, 1);
  EXPECT_DOUBLE_EQ(prefixed.jct_s.mean, r.jct_s.mean);
  // Pooled, job 1 takes the second node at once and job 2 waits for it.
  PolicyResult pooled = Run("1x1:V100/cluster=a+1x1:V100/cluster=b", {jobs[0], jobs[1], jobs[2]}, "fifo");
  EXPECT_DOUBLE_EQ(pooled.jct_s.mean, (100.0 + 10 + 20) / 3);
}

// A partitioned run equals separate runs of each partition's jobs alone.
TEST_F(Replay, PartitionedRunEqualsSeparateRuns) {
  Rng rng(11);
  std::vector<job::JobSpec> all, a, b;
  for (int i = 0; i < 200; ++i) {
    const bool in_a = rng.Uniform(3) != 0;
    job::JobSpec j = Job(i, static_cast<double>(rng.Uniform(2000)), 1 + static_cast<double>(rng.Uniform(300)),
                         1 << rng.Uniform(3), 1 + static_cast<int32_t>(rng.Uniform(2)), in_a ? "a" : "b");
    all.push_back(j);
    (in_a ? a : b).push_back(j);
  }
  ReplayOptions o;
  o.partition_level = cluster::Level::kCluster;
  PolicyResult whole = Run("3x4:V100/cluster=a+2x4:V100/cluster=b", all, "sjf", o);
  PolicyResult ra = Run("3x4:V100", a, "sjf");
  PolicyResult rb = Run("2x4:V100", b, "sjf");
  EXPECT_EQ(whole.jobs_placed, ra.jobs_placed + rb.jobs_placed);
  EXPECT_EQ(whole.jct_s.count, 200);
  EXPECT_NEAR(whole.jct_s.mean * 200, ra.jct_s.mean * ra.jct_s.count + rb.jct_s.mean * rb.jct_s.count, 1e-6);
  EXPECT_NEAR(whole.queue_delay_s.mean * 200,
              ra.queue_delay_s.mean * ra.queue_delay_s.count + rb.queue_delay_s.mean * rb.queue_delay_s.count, 1e-6);
  EXPECT_EQ(whole.decisions, ra.decisions + rb.decisions);
}

// A synthetic stream that queues: sizes 1..8 GPUs in gangs of 1..2 tasks.
std::vector<job::JobSpec> Synthetic(int n, uint64_t seed) {
  Rng rng(seed);
  std::vector<job::JobSpec> jobs;
  double t = 0;
  for (int i = 0; i < n; ++i) {
    t += rng.Exponential(20);
    jobs.push_back(Job(i, std::floor(t), 1 + std::floor(rng.Exponential(400)), 1 << rng.Uniform(4),
                       1 + static_cast<int32_t>(rng.Uniform(2))));
  }
  return jobs;
}

TEST_F(Replay, SameInputSameSeedSameDecisionLogHash) {
  const auto jobs = Synthetic(600, 5);
  for (const char* policy : {"fifo", "sjf", "bestfit", "firstfit"}) {
    PolicyResult r1 = Run("6x8:V100", jobs, policy);
    PolicyResult r2 = Run("6x8:V100", jobs, policy);
    EXPECT_EQ(r1.decision_log_hash, r2.decision_log_hash) << policy;
    EXPECT_EQ(r1.decisions, r2.decisions) << policy;
    EXPECT_DOUBLE_EQ(r1.jct_s.mean, r2.jct_s.mean) << policy;
    EXPECT_EQ(r1.allocation_over_time.size(), r2.allocation_over_time.size()) << policy;
    EXPECT_EQ(r1.jobs_placed, 600) << policy;
    EXPECT_GT(r1.queue_delay_s.mean, 0) << policy << ": the stream should queue";
  }
  EXPECT_NE(Run("6x8:V100", jobs, "fifo").decision_log_hash, Run("6x8:V100", jobs, "sjf").decision_log_hash);
}

// Ended jobs' records dropped (the default) or kept to the end: the same
// decisions and figures, overall and per tenant, with and without trace ids,
// with a policy that preempts (fairshare reclaims for tenants below their share).
TEST_F(Replay, DroppingEndedRecordsChangesNoFigure) {
  std::vector<job::JobSpec> jobs = Synthetic(500, 11);
  for (size_t i = 0; i < jobs.size(); ++i) jobs[i].tenant = "t" + std::to_string(i % 3);
  std::vector<job::JobSpec> no_ids = jobs;
  for (auto& j : no_ids) j.id = JobId();
  ReplayOptions keep;
  keep.keep_records = true;
  for (const char* policy : {"fifo", "topology", "fairshare", "backfill"}) {
    for (const auto* trace : {&jobs, &no_ids}) {
      PolicyResult a = Run("4x8:V100", *trace, policy);
      PolicyResult b = Run("4x8:V100", *trace, policy, keep);
      EXPECT_EQ(a.decision_log_hash, b.decision_log_hash) << policy;
      EXPECT_EQ(a.decisions, b.decisions) << policy;
      EXPECT_EQ(a.jobs_placed, b.jobs_placed) << policy;
      EXPECT_EQ(a.jobs_failed, b.jobs_failed) << policy;
      EXPECT_EQ(a.jobs_unfinished, b.jobs_unfinished) << policy;
      EXPECT_EQ(a.preemptions, b.preemptions) << policy;
      EXPECT_EQ(a.gpu_hours_lost, b.gpu_hours_lost) << policy;
      EXPECT_EQ(a.jct_s.mean, b.jct_s.mean) << policy;
      EXPECT_EQ(a.jct_s.p99, b.jct_s.p99) << policy;
      EXPECT_EQ(a.queue_delay_s.mean, b.queue_delay_s.mean) << policy;
      EXPECT_EQ(a.pending_s.mean, b.pending_s.mean) << policy;
      EXPECT_EQ(a.jcts_s, b.jcts_s) << policy;
      ASSERT_EQ(a.tenants.size(), 3u) << policy;
      ASSERT_EQ(b.tenants.size(), 3u) << policy;
      for (size_t k = 0; k < 3; ++k) {
        EXPECT_EQ(a.tenants[k].queue, b.tenants[k].queue) << policy;
        EXPECT_EQ(a.tenants[k].jobs_finished, b.tenants[k].jobs_finished) << policy;
        EXPECT_EQ(a.tenants[k].jct_s.mean, b.tenants[k].jct_s.mean) << policy;
        EXPECT_EQ(a.tenants[k].queue_delay_s.p50, b.tenants[k].queue_delay_s.p50) << policy;
        EXPECT_EQ(a.tenants[k].gpu_share, b.tenants[k].gpu_share) << policy;
        EXPECT_EQ(a.tenants[k].rho.mean, b.tenants[k].rho.mean) << policy;
        EXPECT_EQ(a.tenants[k].preemptions, b.tenants[k].preemptions) << policy;
      }
    }
  }
}

TEST_F(Replay, IndexesStayExactThroughARun) {
  const auto jobs = Synthetic(150, 9);
  ReplayOptions checked;
  checked.check_indexes = true;
  for (const char* policy : {"fifo", "sjf"}) {
    PolicyResult plain = Run("4x8:V100", jobs, policy);
    PolicyResult r = Run("4x8:V100", jobs, policy, checked);
    EXPECT_EQ(r.jobs_placed, 150) << policy;
    EXPECT_EQ(r.jobs_unfinished, 0) << policy;
    EXPECT_EQ(r.decision_log_hash, plain.decision_log_hash) << policy;
  }
}

TEST_F(Replay, SeriesStayWithinTheBoundAndProgressReachesTheEnd) {
  const auto jobs = Synthetic(800, 2);
  ReplayOptions o;
  o.max_samples = 16;
  int64_t calls = 0, last_done = -1, last_total = -1;
  o.progress = [&](int64_t done, int64_t total) {
    ++calls;
    EXPECT_GE(done, last_done);
    last_done = done;
    last_total = total;
  };
  o.progress_every = 100;
  PolicyResult r = Run("4x8:V100", jobs, "sjf", o);
  ASSERT_GE(r.allocation_over_time.size(), 2u);
  EXPECT_LE(r.allocation_over_time.size(), 16u);
  EXPECT_EQ(r.queue_length_over_time.size(), r.allocation_over_time.size());
  EXPECT_LE(r.jcts_s.size(), 16u);
  EXPECT_DOUBLE_EQ(r.jcts_s.back(), r.jct_s.max);
  for (size_t i = 1; i < r.allocation_over_time.size(); ++i)
    EXPECT_LT(r.allocation_over_time[i - 1].x, r.allocation_over_time[i].x);
  EXPECT_NEAR(r.allocation_over_time.back().x, r.makespan_s / 3600, 1e-9);
  for (const Point& p : r.allocation_over_time) EXPECT_TRUE(p.y >= 0 && p.y <= 100);
  EXPECT_GT(calls, 10);
  EXPECT_EQ(last_done, 1600);
  EXPECT_EQ(last_total, 1600);
}

// The Philly cluster of docs/results/philly-replay.md: the 11 VCs of Helios'
// philly_vc.csv, 8 GPUs per node, one `cluster` domain per VC.
constexpr const char* kPhillySpec =
    "64x8:P100/cluster=6214e9+32x8:P100/cluster=7f04ca+16x8:P100/cluster=11cb48+64x8:P100/cluster=b436b2+"
    "64x8:P100/cluster=ee9e8c+16x8:P100/cluster=e13805+32x8:P100/cluster=6c71a0+16x8:P100/cluster=2869ce+"
    "8x8:P100/cluster=ed69ec+8x8:P100/cluster=103959+32x8:P100/cluster=0e4a51";

// The VCs of a cluster at `level` whose names are `prefix` + VC, against
// philly_vc.csv (in its order): names and node counts, 8 GPUs per node.
void ExpectHeliosVcs(const cluster::Cluster& c, cluster::Level level, const std::string& prefix) {
  EXPECT_EQ(c.num_nodes(), 352);
  EXPECT_EQ(c.total_gpus(), 2816);
  auto vcs = CsvFile::Open(testing::DataDir() + "/helios/philly_vc.csv");
  ASSERT_TRUE(vcs.ok()) << vcs.status().ToString();
  size_t k = 0;
  const auto& domains = c.domains_at(level);
  while (vcs->Next()) {
    std::string vc;
    int64_t nodes = 0;
    ASSERT_TRUE(vcs->GetString("vc", vc).ok());
    ASSERT_TRUE(vcs->GetInt("node num", nodes).ok());
    ASSERT_LT(k, domains.size());
    const cluster::Domain& d = c.domain(domains[k++]);
    EXPECT_EQ(d.name, prefix + vc);
    EXPECT_EQ(d.end.value() - d.begin.value(), nodes) << vc;
    EXPECT_EQ(d.gpus, nodes * 8) << vc;
  }
  EXPECT_EQ(k, domains.size());
  EXPECT_EQ(k, 11u);
}

TEST(PhillyCluster, SpecMatchesTheHeliosVirtualClusters) {
  auto c = cluster::ParseClusterSpec(kPhillySpec);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ExpectHeliosVcs(*c, cluster::Level::kCluster, "");
}

// The shipped cluster file: one leaf per VC, named vc-<VC> (--partition leaf:vc-).
TEST(PhillyCluster, ShippedFileMatchesTheHeliosVirtualClusters) {
  auto c = cluster::LoadCluster(testing::SourceDir() + "/examples/clusters/helios-philly.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ExpectHeliosVcs(*c, cluster::Level::kLeaf, "vc-");
}

// The Philly experiment of docs/results/philly-replay.md: the Helios window,
// one scheduler per VC. Every job runs; SJF waits less than strict FIFO.
TEST_F(Replay, PhillyHeliosWindowPerVirtualCluster) {
  auto c = cluster::LoadCluster(testing::SourceDir() + "/examples/clusters/helios-philly.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ReadOptions ro;
  ro.window_from = "2017-10-01";
  ro.window_to = "2017-11-30";
  ro.tenants = {"6214e9", "7f04ca", "11cb48", "b436b2", "ee9e8c", "e13805",
                "6c71a0", "2869ce", "ed69ec", "103959", "0e4a51"};
  auto t = ReadTrace(testing::DataDir() + "/pollux-philly/philly.csv", "philly", ro);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 68'503u);
  ReplayOptions o;
  o.partition_level = cluster::Level::kLeaf;
  o.partition_prefix = "vc-";
  auto fifo = RunReplay(*c, *t, *policies_.Find("fifo"), plugins_, o);
  auto sjf = RunReplay(*c, *t, *policies_.Find("sjf"), plugins_, o);
  ASSERT_TRUE(fifo.ok() && sjf.ok());
  for (const PolicyResult* r : {&*fifo, &*sjf}) {
    EXPECT_EQ(r->jobs_placed, 68'503) << r->policy;
    EXPECT_EQ(r->jobs_unfinished, 0) << r->policy;
    EXPECT_EQ(r->jct_s.count, 68'503) << r->policy;
    EXPECT_LE(r->allocation_over_time.size(), 2000u) << r->policy;
  }
  EXPECT_GT(fifo->jct_s.mean, sjf->jct_s.mean);
  EXPECT_GT(fifo->queue_delay_s.mean, sjf->queue_delay_s.mean);
  // The jobs' own run time is a floor for the mean JCT: 11,480.7 s.
  EXPECT_GT(sjf->jct_s.mean, 11'480);
}

TEST_F(Replay, DuplicateJobIdsAreAnError) {
  auto c = cluster::ParseClusterSpec("1x1:V100");
  ASSERT_TRUE(c.ok());
  Trace t;
  t.jobs = {Job(0, 0, 1, 1), Job(0, 1, 1, 1)};
  auto r = RunReplay(*c, t, *policies_.Find("fifo"), plugins_, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("job id 0"), std::string::npos);
}

// openb pods at their creation times for their lifetimes: the cluster is far
// from full, so no pod waits and every JCT is the pod's lifetime.
TEST_F(Replay, OpenbTraceAtItsOwnPace) {
  auto in = testing::OpenbDefault();
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  auto r = RunReplay((*in)->cluster, (*in)->trace, *policies_.Find("sjf"), plugins_, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->jobs_total, 8152);
  EXPECT_EQ(r->jobs_placed, 8152);
  EXPECT_EQ(r->jobs_unfinished, 0);
  EXPECT_DOUBLE_EQ(r->queue_delay_s.max, 0);
  double lifetimes = 0;
  for (const auto& j : (*in)->trace.jobs) lifetimes += UsToSeconds(j.duration);
  EXPECT_NEAR(r->jct_s.mean, lifetimes / 8152, 1e-6);
  EXPECT_LE(r->allocation_over_time.size(), 2000u);
}

}  // namespace
}  // namespace berth::sim
