// Streamed traces: a replay that reads each job from the file as it arrives
// gives the same report as one that holds the whole list (every JSON figure
// but the timings), with the per-job options of `berth simulate`; traces and
// policies that cannot stream are refused by `--stream-trace on` and replayed
// from memory by `auto`. Policies whose plugins read the workload up front
// stream with the first read's facts (framework::WorkloadFacts).
#include "berth/sim/trace_stream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "berth/common/rng.h"
#include "berth/framework/registry.h"
#include "berth/plugins/builtin.h"
#include "berth/sim/readers/native_writer.h"
#include "berth/sim/report_test_util.h"

namespace berth::sim {
namespace {

// `n` jobs in submit order, of 1-8 GPUs in one or two tasks, three tenants.
std::vector<job::JobSpec> Jobs(int n, uint64_t seed) {
  Rng rng(seed);
  std::vector<job::JobSpec> jobs;
  double t = 0;
  for (int i = 0; i < n; ++i) {
    t += rng.Exponential(20);
    job::JobSpec j;
    j.name = "j" + std::to_string(i);
    j.tenant = "t" + std::to_string(i % 3);
    j.submit_time = SecondsToUs(std::floor(t));
    j.duration = i % 97 == 5 ? -1 : SecondsToUs(1 + std::floor(rng.Exponential(400)));
    job::TaskGroup g;
    g.count = 1 + static_cast<int32_t>(rng.Uniform(2));
    g.gpus = 1 << rng.Uniform(4);
    g.cpu_milli = 1000;
    j.groups.push_back(g);
    jobs.push_back(std::move(j));
  }
  return jobs;
}

// The same jobs with the variety the up-front readers see: priorities from
// -2 to 2, shares of a GPU, CPU-only tasks, several CPU requests, a GPU type.
std::vector<job::JobSpec> MixedJobs(int n, uint64_t seed) {
  std::vector<job::JobSpec> jobs = Jobs(n, seed);
  for (size_t i = 0; i < jobs.size(); ++i) {
    job::JobSpec& j = jobs[i];
    job::TaskGroup& g = j.groups.front();
    j.priority = static_cast<int32_t>(i * 7 % 5) - 2;
    g.cpu_milli = 1000 * static_cast<MilliCpu>(1 + i % 3);
    if (i % 7 == 3) {
      g.gpus = 1;
      g.milli_per_gpu = 500;
    } else if (i % 11 == 4) {
      g.gpus = 0;
      g.cpu_milli = 4000;
    } else if (i % 13 == 6) {
      g.gpu_type_spec = "V100";
    }
  }
  return jobs;
}

std::string WriteTrace(const std::vector<job::JobSpec>& jobs, const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + name;
  EXPECT_TRUE(WriteNativeTrace(jobs, path).ok());
  return path;
}

// The JSON report without the timings (wall time, pass times).
StatusOr<std::string> Report(SimulateOptions o, const std::string& stream) {
  o.stream_trace = stream;
  return testing::ReportWithoutTimings(o);
}

SimulateOptions Options(const std::string& trace, std::vector<std::string> policies) {
  SimulateOptions o;
  o.cluster = "4x8:V100";
  o.trace = trace;
  o.mode = "replay";
  o.policies = std::move(policies);
  return o;
}

TEST(TraceStream, AStreamedReplayReportsWhatTheReplayFromMemoryReports) {
  const std::string path = WriteTrace(Jobs(600, 7), "stream-same.jsonl");
  SimulateOptions o = Options(path, {"fifo", "topology", "backfill", "sjf", "binpack"});
  auto memory = Report(o, "off");
  auto streamed = Report(o, "on");
  ASSERT_TRUE(memory.ok()) << memory.status().ToString();
  ASSERT_TRUE(streamed.ok()) << streamed.status().ToString();
  EXPECT_EQ(*memory, *streamed);
  EXPECT_NE(memory->find("\"tenants\""), std::string::npos);

  // The per-job options: tenants merged, checkpoints, priorities, best-effort
  // tenants, a faster arrival rate, a prefix of the file.
  o.tenants_from = "none";
  o.checkpoint_interval = SecondsToUs(600);
  o.high_priority_share = 0.2;
  o.best_effort_tenants = {"t1"};
  o.rate_scale = 3;
  o.max_jobs = 450;
  memory = Report(o, "off");
  streamed = Report(o, "on");
  ASSERT_TRUE(memory.ok()) << memory.status().ToString();
  ASSERT_TRUE(streamed.ok()) << streamed.status().ToString();
  EXPECT_EQ(*memory, *streamed);
  EXPECT_NE(memory->find("450"), std::string::npos);
}

TEST(TraceStream, BadLinesAreSkippedAlikeOnBothReads) {
  std::vector<job::JobSpec> jobs = Jobs(200, 3);
  const std::string path = WriteTrace(jobs, "stream-bad.jsonl");
  {
    std::ofstream out(path, std::ios::app);
    out << "{\"name\":\"broken\"\n";   // not JSON
    out << "{\"name\":\"j3\",\"submit_time_s\":99999,\"groups\":[{\"count\":1,\"gpus\":1}]}\n";  // duplicate name
  }
  SimulateOptions o = Options(path, {"fifo"});
  EXPECT_FALSE(Report(o, "on").ok());  // the first bad line is an error, streamed or not
  o.skip_bad_lines = true;
  auto memory = Report(o, "off");
  auto streamed = Report(o, "on");
  ASSERT_TRUE(memory.ok()) << memory.status().ToString();
  ASSERT_TRUE(streamed.ok()) << streamed.status().ToString();
  EXPECT_EQ(*memory, *streamed);
}

TEST(TraceStream, WhatCannotStreamIsRefusedByOnAndReadWholeByAuto) {
  std::vector<job::JobSpec> jobs = Jobs(300, 5);
  std::swap(jobs[10], jobs[200]);  // out of submit order
  const std::string unsorted = WriteTrace(jobs, "stream-unsorted.jsonl");
  SimulateOptions o = Options(unsorted, {"fifo"});
  auto on = Report(o, "on");
  ASSERT_FALSE(on.ok());
  EXPECT_NE(on.status().message().find("not in file order"), std::string::npos) << on.status().message();
  auto automatic = Report(o, "auto");
  auto memory = Report(o, "off");
  ASSERT_TRUE(automatic.ok()) << automatic.status().ToString();
  ASSERT_TRUE(memory.ok());
  EXPECT_EQ(*automatic, *memory);

  // Options a streamed read cannot serve (a time window).
  const std::string sorted = WriteTrace(Jobs(300, 5), "stream-window.jsonl");
  o = Options(sorted, {"fifo"});
  o.window_from = "2017-10-01";
  on = Report(o, "on");
  ASSERT_FALSE(on.ok());
  EXPECT_NE(on.status().message().find("--stream-trace on"), std::string::npos) << on.status().message();

  o.stream_trace = "sometimes";
  EXPECT_FALSE(o.Validate().ok());
}

// The policies whose plugins read the workload before the run (the
// preemption plugins' lowest priority, fgd's and berth-frag's typical pods and
// kappa) stream with the facts of the first read and decide as from memory.
TEST(TraceStream, PoliciesThatReadTheWorkloadUpFrontStreamWithTheSameDecisions) {
  const std::string path = WriteTrace(MixedJobs(600, 11), "stream-readers.jsonl");
  for (const char* policy :
       {"fairshare", "priority-preempt", "priority-preempt-lpf", "srtf", "tiresias", "fgd", "berth-frag"}) {
    SimulateOptions o = Options(path, {policy});
    auto memory = Report(o, "off");
    auto streamed = Report(o, "on");  // "on": an error if the run did not stream
    ASSERT_TRUE(memory.ok()) << policy << ": " << memory.status().ToString();
    ASSERT_TRUE(streamed.ok()) << policy << ": " << streamed.status().ToString();
    EXPECT_EQ(*memory, *streamed) << policy;
    EXPECT_NE(memory->find("\"decision_log_hash\""), std::string::npos) << policy;
  }
  // Priorities raised by --high-priority and a prefix: the facts are those of
  // the adjusted jobs that are kept.
  SimulateOptions o = Options(path, {"fairshare", "priority-preempt", "berth-frag"});
  o.high_priority_share = 0.3;
  o.max_jobs = 400;
  auto memory = Report(o, "off");
  auto streamed = Report(o, "on");
  ASSERT_TRUE(memory.ok()) << memory.status().ToString();
  ASSERT_TRUE(streamed.ok()) << streamed.status().ToString();
  EXPECT_EQ(*memory, *streamed);
}

// The first read's facts are those computed from the jobs read whole.
TEST(TraceStream, TheScanGathersTheWorkloadFactsOfTheJobsAsRead) {
  const std::string path = WriteTrace(MixedJobs(300, 13), "stream-workload-facts.jsonl");
  auto st = ScanNativeTrace(path, ReadOptions{}, nullptr);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  auto whole = ReadTrace(path, "native", ReadOptions{});
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  const framework::WorkloadFacts expected = framework::WorkloadFacts::Of(whole->jobs);
  ASSERT_NE(st->facts, nullptr);
  const framework::WorkloadFacts& got = *st->facts;
  EXPECT_EQ(got.jobs, 300);
  EXPECT_EQ(got.lowest_priority, -2);
  EXPECT_EQ(got.lowest_priority, expected.lowest_priority);
  EXPECT_EQ(got.shape_tasks, expected.shape_tasks);
  EXPECT_GT(got.shape_tasks.size(), 5u);
  EXPECT_EQ(got.total_tasks, expected.total_tasks);
  EXPECT_EQ(got.gpu_task_cpu, expected.gpu_task_cpu);  // the same sums, bit for bit
  EXPECT_EQ(got.gpu_task_milli, expected.gpu_task_milli);
}

TEST(TraceStream, ProfilesThatReadTheWorkloadAreKnown) {
  framework::PluginRegistry plugins;
  ASSERT_TRUE(plugins::RegisterBuiltinPlugins(plugins).ok());
  framework::PolicyRegistry policies;
  ASSERT_TRUE(plugins::RegisterBuiltinPolicies(policies).ok());
  for (const char* name : {"fifo", "topology", "binpack", "backfill"})
    EXPECT_FALSE(framework::ProfileReadsContext(*policies.Find(name), plugins)) << name;
  for (const char* name : {"fgd", "berth-frag", "fairshare"})
    EXPECT_TRUE(framework::ProfileReadsContext(*policies.Find(name), plugins)) << name;
}

TEST(TraceStream, TheScanKeepsTheFactsAndTheFeedTheSpecs) {
  const std::vector<job::JobSpec> jobs = Jobs(50, 9);
  const std::string path = WriteTrace(jobs, "stream-facts.jsonl");
  auto st = ScanNativeTrace(path, ReadOptions{}, nullptr);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  ASSERT_TRUE(st->Streamable().ok());
  ASSERT_EQ(st->table.jobs.size(), 50u);
  EXPECT_EQ(st->table.tenants.size(), 3u);
  EXPECT_EQ(st->table.tenant(4), "t1");
  EXPECT_EQ(st->table.jobs[4].submit_time, jobs[4].submit_time);
  EXPECT_EQ(st->table.jobs[4].milli_gpu, jobs[4].total_milli_gpu());
  auto feed = JobFeed::Open(*st);
  ASSERT_TRUE(feed.ok());
  auto j7 = (*feed)->Take(7);  // jobs 0-6 passed over
  ASSERT_TRUE(j7.ok()) << j7.status().ToString();
  EXPECT_EQ(j7->name, "j7");
  EXPECT_EQ(j7->id, JobId(7));
  EXPECT_FALSE((*feed)->Take(3).ok());  // no going back
}

// The read-ahead thread gives the same jobs as reading in Take, over several
// of its batches, with jobs passed over; the same errors at the end of the
// file and for a file changed after the scan; and a feed destroyed early
// stops its thread.
TEST(TraceStream, TheReadAheadFeedGivesTheJobsAndErrorsOfTheDirectOne) {
  const std::vector<job::JobSpec> jobs = Jobs(2000, 11);
  const std::string path = WriteTrace(jobs, "stream-ahead.jsonl");
  auto st = ScanNativeTrace(path, ReadOptions{}, nullptr);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  auto direct = JobFeed::Open(*st, /*read_ahead=*/false);
  auto ahead = JobFeed::Open(*st, /*read_ahead=*/true);
  ASSERT_TRUE(direct.ok() && ahead.ok());
  for (size_t i = 0; i < jobs.size(); i += 1 + i % 3) {
    auto a = (*direct)->Take(i);
    auto b = (*ahead)->Take(i);
    ASSERT_TRUE(a.ok() && b.ok()) << i;
    EXPECT_EQ(a->name, b->name);
    EXPECT_EQ(a->id, b->id);
    EXPECT_EQ(a->submit_time, b->submit_time);
    EXPECT_EQ(a->duration, b->duration);
  }
  auto past_a = (*direct)->Take(jobs.size());
  auto past_b = (*ahead)->Take(jobs.size());
  ASSERT_FALSE(past_a.ok());
  EXPECT_EQ(past_a.status().ToString(), past_b.status().ToString());

  // The file changed after the scan: job 600 arrives 1,000 s later.
  std::vector<job::JobSpec> changed = jobs;
  for (size_t i = 600; i < changed.size(); ++i) changed[i].submit_time += SecondsToUs(1000);
  ASSERT_TRUE(WriteNativeTrace(changed, path).ok());
  for (bool read_ahead : {false, true}) {
    auto feed = JobFeed::Open(*st, read_ahead);
    ASSERT_TRUE(feed.ok());
    EXPECT_TRUE((*feed)->Take(599).ok());
    auto bad = (*feed)->Take(700);
    ASSERT_FALSE(bad.ok()) << read_ahead;
    EXPECT_NE(bad.status().message().find("job 600 has another submit time"), std::string::npos)
        << bad.status().ToString();
  }
  auto early = JobFeed::Open(*st);  // destroyed with its thread still reading ahead
  ASSERT_TRUE(early.ok());
}

}  // namespace
}  // namespace berth::sim
