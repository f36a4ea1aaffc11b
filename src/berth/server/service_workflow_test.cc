// Workflows through the service: stages submitted in order as ordinary jobs,
// a failed stage retried, dependents skipped after a permanent failure, the
// whole workflow cancelled, and bad documents refused naming the stage.
#include <gtest/gtest.h>

#include <map>

#include "berth/server/service_test_util.h"

namespace berth::server {
namespace {

using testing::ServiceHarness;
using testing::WaitFor;

std::string StageState(ServiceHarness& h, int64_t wf, const std::string& stage) {
  ApiResult r = h.service().GetJob(wf);
  if (r.code != 200) return "";
  for (const auto& s : r.body["stages"])
    if (s["name"] == stage) return s["state"];
  return "";
}

ServiceOptions Virtual() {
  ServiceOptions o;
  o.virtual_nodes = true;
  o.speedup = 1000;
  return o;
}

TEST(ServiceWorkflowTest, StagesRunInOrderAndAFailedStageIsRetried) {
  ServiceHarness h("4x8:H100/leaf=2", Virtual());
  ASSERT_TRUE(h.Start().ok());
  const int64_t wf = h.Submit(
      R"({"name":"pipe","tenant":"ml","stages":[)"
      R"({"name":"prepare","duration_s":2,"artifact":"/data/p","groups":[{"cpu_milli":1000}]},)"
      R"({"name":"train","depends_on":["prepare"],"retries":1,"fail_attempts":1,"duration_s":2,)"
      R"("launcher":"torch","groups":[{"count":2,"gpus":8}]},)"
      R"({"name":"evaluate","depends_on":["train"],"duration_s":1,"groups":[{"gpus":1}]}]})");
  ASSERT_GE(wf, 0);
  ApiResult first = h.service().GetJob(wf);
  ASSERT_EQ(first.code, 200) << first.body.dump();
  EXPECT_EQ(first.body["kind"], "workflow");
  EXPECT_EQ(first.body["stages"][1]["state"], "waiting");
  // A retry of the same document is the same workflow.
  ApiResult again = h.service().SubmitJob(
      R"({"name":"pipe","tenant":"ml","stages":[)"
      R"({"name":"prepare","duration_s":2,"artifact":"/data/p","groups":[{"cpu_milli":1000}]},)"
      R"({"name":"train","depends_on":["prepare"],"retries":1,"fail_attempts":1,"duration_s":2,)"
      R"("launcher":"torch","groups":[{"count":2,"gpus":8}]},)"
      R"({"name":"evaluate","depends_on":["train"],"duration_s":1,"groups":[{"gpus":1}]}]})");
  EXPECT_EQ(again.code, 200);
  EXPECT_EQ(again.body["id"], wf);

  ASSERT_TRUE(WaitFor([&] { return h.service().GetJob(wf).body["state"] == "succeeded"; }))
      << h.service().GetJob(wf).body.dump();
  ApiResult r = h.service().GetJob(wf);
  const auto& st = r.body["stages"];
  EXPECT_EQ(st[0]["state"], "succeeded");
  EXPECT_EQ(st[1]["attempts"], 2);
  ASSERT_EQ(st[1]["jobs"].size(), 2u);
  const int64_t failed_attempt = st[1]["jobs"][0], second = st[1]["jobs"][1];
  EXPECT_EQ(h.State(failed_attempt), "failed");
  EXPECT_EQ(h.State(second), "succeeded");
  // Order: prepare's job, then both train attempts, then evaluate's.
  EXPECT_LT(st[0]["job"].get<int64_t>(), failed_attempt);
  EXPECT_LT(second, st[2]["job"].get<int64_t>());
  // Stage jobs are ordinary jobs with the workflow's tenant and the artifact.
  ApiResult job = h.service().GetJob(second);
  EXPECT_EQ(job.body["name"], "pipe/train") << job.body.dump();
}

TEST(ServiceWorkflowTest, PermanentFailureSkipsTheRest) {
  ServiceHarness h("4x8:H100/leaf=2", Virtual());
  ASSERT_TRUE(h.Start().ok());
  const int64_t wf = h.Submit(
      R"({"name":"bad","stages":[{"name":"a","fail_attempts":2,"retries":1,"duration_s":1,"groups":[{"gpus":1}]},)"
      R"({"name":"b","depends_on":["a"],"duration_s":1,"groups":[{"gpus":1}]},)"
      R"({"name":"c","depends_on":["a"],"after":"any","duration_s":1,"groups":[{}]}]})");
  ASSERT_TRUE(WaitFor([&] { return h.service().GetJob(wf).body["state"] == "failed"; }))
      << h.service().GetJob(wf).body.dump();
  EXPECT_EQ(StageState(h, wf, "a"), "failed");
  EXPECT_EQ(StageState(h, wf, "b"), "skipped");
  EXPECT_EQ(StageState(h, wf, "c"), "succeeded");
  EXPECT_TRUE(h.service().GetJob(wf).body["stages"][1]["jobs"].empty());
}

TEST(ServiceWorkflowTest, CancelCancelsRunningAndWaitingStages) {
  ServiceHarness h;  // no virtual nodes: jobs run until cancelled
  ASSERT_TRUE(h.Start().ok());
  const int64_t wf = h.Submit(
      R"({"name":"long","stages":[{"name":"a","groups":[{"gpus":8}]},{"name":"b","depends_on":["a"],"groups":[{"gpus":8}]}]})");
  ASSERT_TRUE(WaitFor([&] { return StageState(h, wf, "a") == "running"; }));
  const int64_t a_job = h.service().GetJob(wf).body["stages"][0]["job"];
  EXPECT_EQ(h.service().GetLaunch(wf).code, 409);
  EXPECT_EQ(h.service().GetLaunch(a_job).code, 200);
  ApiResult c = h.service().CancelJob(wf);
  EXPECT_EQ(c.code, 200) << c.body.dump();
  EXPECT_EQ(h.service().GetJob(wf).body["state"], "cancelled");
  EXPECT_EQ(StageState(h, wf, "b"), "cancelled");
  EXPECT_EQ(h.State(a_job), "cancelled");
  EXPECT_EQ(h.service().CancelJob(wf).code, 200);  // idempotent
}

TEST(ServiceWorkflowTest, BadWorkflowsAreRefusedNamingTheStage) {
  ServiceHarness h;
  ASSERT_TRUE(h.Start().ok());
  h.Quiesce();
  const size_t at_start = h.records();
  const std::pair<const char*, const char*> cases[] = {
      {R"({"name":"w","stages":[{"name":"a","depends_on":["zz"],"groups":[{}]}]})",
       "stages[0] ('a').depends_on: no stage named 'zz'"},
      {R"({"name":"w","stages":[{"name":"a","depends_on":["b"],"groups":[{}]},{"name":"b","depends_on":["a"],"groups":[{}]}]})",
       "cycle a -> b -> a"},
      {R"({"name":"w","stages":[{"name":"a","groups":[{"gpus":"8.5"}]}]})", "stages[0] ('a'): groups[0].gpus"},
      {R"({"name":"w","stages":[{"name":"a","retries":-1,"groups":[{}]}]})", "stages[0].retries"},
      {R"({"name":"w","stages":[{"name":"a","after":"later","groups":[{}]}]})", "stages[0].after"},
      {R"({"name":"w","groups":[{}],"stages":[{"name":"a","groups":[{}]}]})", "unknown field 'groups'"},
      {R"({"name":"w","stages":[{"groups":[{}]}]})", "stages[0].name: missing"},
      {R"({"name":"w","stages":[{"name":"a","groups":[{}]},{"name":"a","groups":[{}]}]})", "appears twice"},
      {R"({"name":"w","stages":[]})", "stages: expected a non-empty array"},
  };
  for (const auto& [body, mentions] : cases) {
    ApiResult r = h.service().SubmitJob(body);
    EXPECT_EQ(r.code, 400) << body << " -> " << r.body.dump();
    EXPECT_NE(r.body.value("error", std::string()).find(mentions), std::string::npos) << r.body.dump();
  }
  ApiResult big = h.service().SubmitJob(R"({"name":"w","stages":[{"name":"a","groups":[{"count":9,"gpus":8}]}]})");
  EXPECT_EQ(big.code, 422) << big.body.dump();
  EXPECT_NE(big.body["error"].get<std::string>().find("stages[0] ('a')"), std::string::npos);
  h.Quiesce();
  EXPECT_EQ(h.records(), at_start);
}

// The stage jobs of a workflow, stage by stage (GET's "jobs").
std::vector<std::vector<int64_t>> StageJobs(ServiceHarness& h, int64_t wf) {
  std::vector<std::vector<int64_t>> out;
  const ApiResult r = h.service().GetJob(wf);
  if (r.code != 200) return out;
  for (const auto& s : r.body["stages"]) out.push_back(s["jobs"].get<std::vector<int64_t>>());
  return out;
}

constexpr const char* kPipeline =
    R"({"name":"pipe","tenant":"ml","stages":[)"
    R"({"name":"prepare","duration_s":2,"artifact":"/data/p","groups":[{"cpu_milli":1000}]},)"
    R"({"name":"train","depends_on":["prepare"],"retries":1,"fail_attempts":1,"duration_s":2,)"
    R"("launcher":"torch","groups":[{"count":2,"gpus":8}]},)"
    R"({"name":"evaluate","depends_on":["train"],"duration_s":2,"groups":[{"gpus":1}]},)"
    R"({"name":"report","depends_on":["evaluate"],"after":"any","duration_s":1,"groups":[{}]}]})";

// The same with an evaluate stage that runs 600,000 s (10 minutes of wall
// time at --speedup 1000): a restart comes while it runs.
constexpr const char* kLongEvaluate =
    R"({"name":"pipe","tenant":"ml","stages":[)"
    R"({"name":"prepare","duration_s":2,"artifact":"/data/p","groups":[{"cpu_milli":1000}]},)"
    R"({"name":"train","depends_on":["prepare"],"retries":1,"fail_attempts":1,"duration_s":2,)"
    R"("launcher":"torch","groups":[{"count":2,"gpus":8}]},)"
    R"({"name":"evaluate","depends_on":["train"],"duration_s":600000,"groups":[{"gpus":1}]},)"
    R"({"name":"report","depends_on":["evaluate"],"after":"any","duration_s":1,"groups":[{}]}]})";

// A restart in the middle: finished stages stay finished (same jobs), the
// running stage's job is adopted, the next stages start, and the workflow
// keeps its id (a new job does not take it).
TEST(ServiceWorkflowTest, RestartContinuesARunningWorkflow) {
  auto data = std::make_shared<store::MemoryStore::Data>();
  int64_t wf = -1, eval_job = -1;
  std::vector<std::vector<int64_t>> before;
  {
    ServiceOptions o = Virtual();
    o.speedup = 1000;
    ServiceHarness h("4x8:H100/leaf=2", o, data);
    ASSERT_TRUE(h.Start().ok());
    wf = h.Submit(kLongEvaluate);
    ASSERT_TRUE(WaitFor([&] { return StageState(h, wf, "evaluate") == "running"; }))
        << h.service().GetJob(wf).body.dump();
    h.Quiesce();
    before = StageJobs(h, wf);
    eval_job = before[2].at(0);
  }
  ServiceHarness h2("4x8:H100/leaf=2", Virtual(), data);
  ASSERT_TRUE(h2.Start().ok());
  ApiResult r = h2.service().GetJob(wf);
  ASSERT_EQ(r.code, 200) << r.body.dump();
  EXPECT_EQ(r.body["kind"], "workflow");
  EXPECT_EQ(r.body["state"], "running");
  EXPECT_EQ(StageState(h2, wf, "prepare"), "succeeded");
  EXPECT_EQ(StageState(h2, wf, "train"), "succeeded");
  EXPECT_EQ(r.body["stages"][1]["attempts"], 2);
  EXPECT_EQ(StageState(h2, wf, "evaluate"), "running");
  EXPECT_EQ(StageJobs(h2, wf), before);  // nothing ran again
  EXPECT_EQ(h2.State(eval_job), "running");
  // A new job takes a new id, above the workflow's and its stages'.
  const int64_t other = h2.Submit(R"({"name":"other","groups":[{"gpus":1}]})");
  EXPECT_GT(other, eval_job);
  EXPECT_GT(other, wf);
  // The same document again is the same workflow.
  ApiResult again = h2.service().SubmitJob(kLongEvaluate);
  EXPECT_EQ(again.code, 200) << again.body.dump();
  EXPECT_EQ(again.body["id"], wf);
  // Cancel still works after the restart, and is durable.
  ASSERT_EQ(h2.service().CancelJob(wf).code, 200);
  EXPECT_EQ(StageState(h2, wf, "report"), "cancelled");
  EXPECT_EQ(h2.State(eval_job), "cancelled");
  h2.Quiesce();
  h2.Stop();
  ServiceHarness h3("4x8:H100/leaf=2", Virtual(), data);
  ASSERT_TRUE(h3.Start().ok());
  EXPECT_EQ(h3.service().GetJob(wf).body["state"], "cancelled") << h3.service().GetJob(wf).body.dump();
  EXPECT_EQ(StageState(h3, wf, "prepare"), "succeeded");
  EXPECT_EQ(StageState(h3, wf, "evaluate"), "cancelled");
  EXPECT_EQ(StageState(h3, wf, "report"), "cancelled");
  EXPECT_EQ(h3.service().CancelJob(wf).code, 200);  // still idempotent
}

// A crash leaves a prefix of the store's log. For every prefix that holds the
// workflow, a service started on it finishes the workflow as an uninterrupted
// run does: every stage succeeded, train retried once, the stages' jobs of
// the prefix kept, and no stage attempt run twice.
TEST(ServiceWorkflowTest, EveryCrashPointResumesTheWorkflow) {
  auto full = std::make_shared<store::MemoryStore::Data>();
  int64_t wf = -1;
  {
    ServiceHarness h("4x8:H100/leaf=2", Virtual(), full);
    ASSERT_TRUE(h.Start().ok());
    wf = h.Submit(kPipeline);
    ASSERT_TRUE(WaitFor([&] { return h.service().GetJob(wf).body["state"] == "succeeded"; }))
        << h.service().GetJob(wf).body.dump();
    h.Quiesce();
  }
  std::vector<store::Record> log;
  {
    std::lock_guard<std::mutex> lock(full->mu);
    log = full->records;
  }
  size_t first = 0;
  while (first < log.size() && log[first].kind != store::RecordKind::kWorkflowAccepted) ++first;
  ASSERT_LT(first, log.size());
  int prefixes = 0;
  for (size_t n = first + 1; n <= log.size(); ++n) {
    auto data = std::make_shared<store::MemoryStore::Data>();
    data->records.assign(log.begin(), log.begin() + static_cast<std::ptrdiff_t>(n));
    data->revision = data->records.back().revision;
    data->term = log.back().term;
    // The stage jobs the prefix accepted, by key.
    std::map<std::string, int64_t> accepted;
    for (const auto& r : data->records)
      if (r.kind == store::RecordKind::kJobAccepted) accepted[r.key] = r.job;
    ServiceHarness h("4x8:H100/leaf=2", Virtual(), data);
    ASSERT_TRUE(h.Start().ok()) << "prefix " << n;
    ASSERT_TRUE(WaitFor([&] { return h.service().GetJob(wf).body["state"] == "succeeded"; }))
        << "prefix " << n << ": " << h.service().GetJob(wf).body.dump();
    ApiResult r = h.service().GetJob(wf);
    for (const auto& st : r.body["stages"]) EXPECT_EQ(st["state"], "succeeded") << "prefix " << n << " " << st.dump();
    EXPECT_EQ(r.body["stages"][1]["attempts"], 2) << "prefix " << n;
    // Each attempt has one job; the prefix's stage jobs are the ones kept.
    const auto jobs = StageJobs(h, wf);
    const char* names[] = {"prepare", "train", "evaluate", "report"};
    for (size_t s = 0; s < jobs.size(); ++s) {
      EXPECT_EQ(jobs[s].size(), s == 1 ? 2u : 1u) << "prefix " << n << " stage " << names[s];
      for (size_t a = 0; a < jobs[s].size(); ++a) {
        const std::string key =
            "workflow:" + std::to_string(wf) + "/" + names[s] + "#" + std::to_string(a + 1);
        if (auto k = accepted.find(key); k != accepted.end())
          EXPECT_EQ(jobs[s][a], k->second) << "prefix " << n << " " << key;
      }
    }
    ++prefixes;
  }
  EXPECT_GT(prefixes, 10);
}

}  // namespace
}  // namespace berth::server
