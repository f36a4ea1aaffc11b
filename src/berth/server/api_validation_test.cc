// Strict validation of job documents, and a property test: random mutations
// of valid bodies and random bytes never crash the service, and a rejected
// body never changes its state (no record written, no job listed).
#include <gtest/gtest.h>

#include <random>

#include "berth/server/job_json.h"
#include "berth/server/service_test_util.h"

namespace berth::server {
namespace {

using testing::ServiceHarness;

struct BadCase {
  const char* body;
  int code;
  const char* mentions;  // the error must name this
};

TEST(ApiValidationTest, BadBodiesGetClearErrors) {
  ServiceHarness h;
  ASSERT_TRUE(h.Start().ok());
  h.Quiesce();
  const size_t at_start = h.records();  // the cluster record
  const BadCase cases[] = {
      {"", 400, "malformed JSON"},
      {"{", 400, "malformed JSON"},
      {"[]", 400, "expected a JSON object"},
      {R"({"groups":[{"count":1}]})", 400, "name"},
      {R"({"name":"a"})", 400, "groups"},
      {R"({"name":"a","groups":[]})", 400, "groups"},
      {R"({"name":"a","groups":[{"count":1,"gpu":1}]})", 400, "groups[0].gpu"},
      {R"({"name":"a","gruops":[{"count":1}]})", 400, "gruops"},
      {R"({"name":"a","regions":"east","groups":[{"count":1}]})", 400, "regions"},
      {R"({"name":"a","regions":["e","e"],"groups":[{"count":1}]})", 400, "regions[1]"},
      {R"({"name":"a","deadline_s":0,"groups":[{"count":1}]})", 400, "deadline_s"},
      {R"({"name":"a","budget_usd":"ten","groups":[{"count":1}]})", 400, "budget_usd"},
      {R"({"name":"a","span_regions":1,"groups":[{"count":1}]})", 400, "span_regions"},
      {R"({"name":"a","groups":[{"count":"2"}]})", 400, "groups[0].count"},
      {R"({"name":"a","groups":[{"count":1.5}]})", 400, "groups[0].count"},
      {R"({"name":"a","groups":[{"count":0}]})", 400, "groups[0].count"},
      {R"({"name":"a","groups":[{"count":2,"min_count":3}]})", 400, "groups[0].min_count"},
      {R"({"name":"a","groups":[{"count":1,"gpus":2,"milli_per_gpu":500}]})", 400, "share"},
      {R"({"name":"a","duration_s":-1,"groups":[{"count":1}]})", 400, "duration_s"},
      {R"({"name":"a","priority":1e40,"groups":[{"count":1}]})", 400, "priority"},
      {R"({"name":7,"groups":[{"count":1}]})", 400, "name"},
      {R"({"name":"a","groups":[{"count":1,"gpu_types":"H100"}]})", 400, "gpu_types"},
      {R"({"name":"a","idempotency_key":"","groups":[{"count":1}]})", 400, "idempotency_key"},
      {R"({"name":"a","max_workers":1,"groups":[{"count":2,"gpus":1}]})", 400, "max_workers"},
      {R"({"name":"a","min_workers":2,"groups":[{"count":2,"gpus":1}]})", 400, "min_workers"},
      {R"({"name":"a","max_workers":4,"min_workers":3,"groups":[{"count":2,"gpus":1}]})", 400, "min_workers"},
      {R"({"name":"a","max_workers":4,"groups":[{"count":2,"gpus":0}]})", 400, "whole GPUs"},
      {R"({"name":"a","max_workers":4,"resize_cost_s":-1,"groups":[{"count":2,"gpus":1}]})", 400, "resize_cost_s"},
      {R"({"name":"a","batch_size":0,"groups":[{"count":1}]})", 400, "batch_size"},
      {R"({"name":"a","groups":[{"count":1,"gpus":16}]})", 422, "no node can ever hold"},
      {R"({"name":"a","groups":[{"count":1,"gpus":1,"gpu_types":["A100"]}]})", 422, "A100"},
      {R"({"name":"a","groups":[{"count":5,"gpus":8}]})", 422, "cluster has 32"},
      {R"({"name":"a","groups":[{"count":1,"memory_mib":99999999999}]})", 422, "no node"},
      {R"({"name":"a","required_level":"rack","groups":[{"count":1}]})", 400, "required_level"},
      {R"({"name":"a","required_level":3,"groups":[{"count":1}]})", 400, "required_level"},
      {R"({"name":"a","preferred_level":"galaxy","groups":[{"count":1}]})", 400, "preferred_level"},
      {R"({"name":"a","groups":[{"count":4,"gpus":8,"block_tasks":-1}]})", 400, "groups[0].block_tasks"},
      {R"({"name":"a","groups":[{"count":4,"gpus":8,"block_tasks":"2"}]})", 400, "groups[0].block_tasks"},
      {R"({"name":"a","groups":[{"count":3,"gpus":8,"block_tasks":2}]})", 400, "block_tasks"},
      {R"({"name":"a","groups":[{"count":4,"gpus":8,"block_tasks":2,"block_level":"x"}]})", 400,
       "groups[0].block_level"},
      {R"({"name":"a","groups":[{"count":1,"gpus":1,"gpu_memory_mib":-1}]})", 400, "groups[0].gpu_memory_mib"},
      {R"({"name":"a","groups":[{"count":1,"gpus":1,"gpu_memory_mib":"8Gi"}]})", 400, "groups[0].gpu_memory_mib"},
      {R"({"name":"a","groups":[{"count":1,"gpus":1,"gpu_memory_mib":1.5}]})", 400, "groups[0].gpu_memory_mib"},
      {R"({"name":"a","groups":[{"count":1,"gpus":1,"gpu_memory_mib":90000}]})", 400,
       "groups[0].gpu_memory_mib: 90000 MiB is more than the largest GPU here (81920 MiB, H100)"},
      {R"({"name":"a","groups":[{"count":1,"gpu_memory_mib":100}]})", 400, "gpu_memory_mib: a task without GPUs"},
      {R"({"name":"a","groups":[{"count":2,"gpus":8,"required_level":"rack"}]})", 400, "groups[0].required_level"},
      {R"({"name":"a","groups":[{"count":2,"gpus":8,"preferred_level":4}]})", 400, "groups[0].preferred_level"},
      {R"({"name":"a","required_level":"leaf","groups":[{"count":2,"gpus":8,"required_level":"cluster"}]})", 400,
       "required_level: cluster is wider than the job's required_level leaf"},
      {R"({"name":"a","groups":[{"count":2,"gpus":0,"preferred_level":"leaf"}]})", 400,
       "preferred_level: a group's topology level needs whole-GPU tasks"},
      {R"({"name":"a","block_tasks":"2","groups":[{"count":2,"gpus":8}]})", 400, "block_tasks"},
      {R"({"name":"a","required_level":"leaf","groups":[{"count":3,"gpus":8}]})", 422,
       "required_level: the job needs 24 GPUs at once; no leaf domain has more than 16"},
      {R"({"name":"a","groups":[{"count":1,"gpus":8},{"count":3,"gpus":8,"required_level":"leaf"}]})", 422,
       "groups[1].required_level: the group needs 24 GPUs"},
      {R"({"name":"a","block_tasks":2,"groups":[{"count":3,"gpus":8}]})", 400, "block_tasks: count 3"},
      {R"({"name":"a","block_level":"x","groups":[{"count":2,"gpus":8}]})", 400, "block_level"},
      {R"({"name":"a","launcher":"jax","groups":[{"count":1}]})", 400, "launcher"},
      {R"({"name":"a","launcher":1,"groups":[{"count":1}]})", 400, "launcher"},
      {R"({"name":"a","command":"python3 x.py","groups":[{"count":1}]})", 400, "command"},
      {R"({"name":"a","command":[],"groups":[{"count":1}]})", 400, "command"},
      {R"({"name":"a","command":["x",2],"groups":[{"count":1}]})", 400, "command[1]"},
      {R"({"name":"a","command":[""],"groups":[{"count":1}]})", 400, "command[0]"},
      {R"({"name":"a","command":["x\u0007"],"groups":[{"count":1}]})", 400, "command[0]"},
      {R"({"name":"a","env":["X=1"],"groups":[{"count":1}]})", 400, "env"},
      {R"({"name":"a","env":{"X-Y":"1"},"groups":[{"count":1}]})", 400, "env.X-Y"},
      {R"({"name":"a","env":{"X":1},"groups":[{"count":1}]})", 400, "env.X"},
      // Strictness: duplicate keys, huge integers, control and bidi characters, arrival times.
      {R"({"name":"a","groups":[{"count":1}],"groups":[{"count":2}]})", 400, "duplicate key \"groups\""},
      {R"({"name":"a","groups":[{"count":1,"count":2}]})", 400, "duplicate key \"count\""},
      {R"({"name":"a","priority":9223372036854775808,"groups":[{"count":1}]})", 400, "priority"},
      {R"({"name":"a","priority":2147483648,"groups":[{"count":1}]})", 400, "priority"},
      {R"({"name":"a","groups":[{"count":18446744073709551615}]})", 400, "groups[0].count"},
      {R"({"name":"a\u0000b","groups":[{"count":1}]})", 400, "name: contains the control character U+0000"},
      {R"({"name":"a\u202eb","groups":[{"count":1}]})", 400, "U+202E"},
      {R"({"name":"a","tenant":"t\u2066","groups":[{"count":1}]})", 400, "tenant"},
      {R"({"name":"a","groups":[{"name":"w\n","count":1}]})", 400, "groups[0].name"},
      {R"({"name":"a","submit_time_s":5,"groups":[{"count":1}]})", 400, "submit_time_s"},
      {"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
       400, "nesting deeper than 64"},
      // Admission: limits and gangs that can never run at once.
      {R"({"name":"z","duration_s":1,"groups":[{"count":1000000,"gpus":0}]})", 422, "--max-tasks-per-job"},
      {R"({"name":"z","groups":[{"count":100001}]})", 422, "100001 tasks"},
      {R"({"name":"s","groups":[{"count":1000000,"gpus":1,"milli_per_gpu":1}]})", 422, "--max-tasks-per-job"},
      {R"({"name":"s","groups":[{"count":40000,"gpus":1,"milli_per_gpu":1}]})", 422, "milli-GPU"},
      {R"({"name":"s","groups":[{"count":33,"gpus":1,"milli_per_gpu":1000}]})", 422, "cluster has 32"},
      {R"({"name":"s","groups":[{"count":65,"gpus":1,"milli_per_gpu":500}]})", 422, "milli-GPU"},
  };
  for (const auto& c : cases) {
    ApiResult r = h.service().SubmitJob(c.body);
    EXPECT_EQ(r.code, c.code) << c.body << " -> " << r.body.dump();
    ASSERT_TRUE(r.body.contains("error")) << c.body;
    EXPECT_NE(r.body["error"].get<std::string>().find(c.mentions), std::string::npos)
        << c.body << " -> " << r.body["error"];
  }
  EXPECT_EQ(h.records(), at_start);
}

TEST(ApiValidationTest, JobJsonRoundTrips) {
  const std::string body =
      R"({"name":"llm","tenant":"ml","queue":"q","priority":3,"submit_time_s":1.5,"duration_s":60,)"
      R"("runtime_limit_s":120,"job_class":"gpt","dataset":"web","dataset_mib":10,"checkpoint_interval_s":30,"work_steps":500,)"
      R"("required_level":"spine","preferred_level":"leaf","regions":["east"],"avoid_regions":["west"],)"
      R"("span_regions":true,"deadline_s":3600,"budget_usd":99.5,"launcher":"torch",)"
      R"x("command":["/usr/bin/python3","-c","import os\nprint(1)"],"env":{"B":"2","A":"x y"},)x"
      R"("groups":[{"name":"w","count":4,"min_count":2,"gpus":8,"cpu_milli":1000,"memory_mib":2048,)"
      R"("gpu_types":["H100","A100"],"block_tasks":2,"block_level":"leaf","required_level":"leaf","preferred_level":"nvlink"},)"
      R"({"name":"s","count":1,"gpus":1,"milli_per_gpu":250}]})";
  EXPECT_NE(ParseJobBody(body).status().message().find("submit_time_s: not accepted by the API"), std::string::npos);
  auto sub = ParseJobBody(body, JobSource::kStored);
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  EXPECT_EQ(sub->spec.required_level, cluster::Level::kSpine);
  EXPECT_EQ(sub->spec.preferred_level, cluster::Level::kLeaf);
  EXPECT_EQ(sub->spec.groups[0].block_tasks, 2);
  EXPECT_EQ(sub->spec.groups[0].block_level, cluster::Level::kLeaf);
  EXPECT_EQ(JobToJson(sub->spec)["required_level"], "spine");
  EXPECT_EQ(JobToJson(sub->spec)["groups"][0]["block_level"], "leaf");
  EXPECT_EQ(sub->spec.groups[0].required_level, cluster::Level::kLeaf);
  EXPECT_EQ(sub->spec.groups[0].preferred_level, cluster::Level::kNvlink);
  EXPECT_EQ(JobToJson(sub->spec)["groups"][0]["required_level"], "leaf");
  EXPECT_EQ(JobToJson(sub->spec)["groups"][0]["preferred_level"], "nvlink");
  EXPECT_FALSE(JobToJson(sub->spec)["groups"][1].contains("required_level"));
  EXPECT_EQ(sub->spec.groups[0].gpu_type_spec, "H100|A100");
  EXPECT_EQ(sub->spec.groups[0].min_count, 2);
  EXPECT_EQ(sub->spec.regions, std::vector<std::string>{"east"});
  EXPECT_EQ(sub->spec.avoid_regions, std::vector<std::string>{"west"});
  EXPECT_TRUE(sub->spec.span_regions);
  EXPECT_EQ(sub->spec.deadline, 3600 * kUsPerSecond);
  EXPECT_EQ(sub->spec.budget_cents, 9950);
  EXPECT_EQ(JobToJson(sub->spec)["budget_usd"], 99.5);
  EXPECT_EQ(sub->spec.launcher, job::Launcher::kTorch);
  EXPECT_EQ(sub->spec.command.size(), 3u);
  EXPECT_EQ(sub->spec.command[2], "import os\nprint(1)");
  EXPECT_EQ(sub->spec.env.at("A"), "x y");
  EXPECT_EQ(JobToJson(sub->spec)["launcher"], "torch");
  EXPECT_FALSE(ParseJobBody(R"({"name":"a","groups":[{}]})")->spec.launcher != job::Launcher::kNone);
  auto again = ParseJobJson(JobToJson(sub->spec), JobSource::kStored);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(JobToJson(again->spec), JobToJson(sub->spec));
  EXPECT_EQ(SpecFingerprint(again->spec), SpecFingerprint(sub->spec));
}

// A job-level block size is the default of each whole-GPU group without its
// own; the stored document shows it per group.
TEST(ApiValidationTest, JobLevelBlocksGoToGroupsWithoutTheirOwn) {
  auto sub = ParseJobBody(
      R"({"name":"a","block_tasks":2,"block_level":"leaf","groups":[{"name":"w","count":4,"gpus":8},)"
      R"({"name":"x","count":3,"gpus":8,"block_tasks":3},{"name":"c","count":1}]})");
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  EXPECT_EQ(sub->spec.groups[0].block_tasks, 2);
  EXPECT_EQ(sub->spec.groups[0].block_level, cluster::Level::kLeaf);
  EXPECT_EQ(sub->spec.groups[1].block_tasks, 3);
  EXPECT_EQ(sub->spec.groups[1].block_level, cluster::Level::kNvlink);
  EXPECT_EQ(sub->spec.groups[2].block_tasks, 0);  // no GPUs: no blocks
  const nlohmann::json doc = JobToJson(sub->spec);
  EXPECT_EQ(doc["groups"][0]["block_tasks"], 2);
  EXPECT_FALSE(doc.contains("block_tasks"));
}

// Mutations of a valid body: flip, drop, insert or duplicate bytes; cut it;
// swap a value for one of another type.
std::string Mutate(const std::string& s, std::mt19937_64& rng) {
  std::string out = s;
  const int ops = 1 + static_cast<int>(rng() % 3);
  static const char* kValues[] = {"null", "true", "-1", "0", "1e308", "\"x\"", "[]", "{}", "99999999999999999999",
                                  "\"\\u0000\"", "[1,2]", "{\"count\":1}", "1.5"};
  for (int k = 0; k < ops && !out.empty(); ++k) {
    const size_t i = rng() % out.size();
    switch (rng() % 6) {
      case 0: out[i] = static_cast<char>(rng() % 256); break;
      case 1: out.erase(i, 1 + rng() % 4); break;
      case 2: out.insert(i, 1, "{}[],:\"0a\\"[rng() % 11]); break;
      case 3: out = out.substr(0, i); break;
      case 4: out.insert(i, out.substr(i, 1 + rng() % 8)); break;
      case 5: {
        // Replace the value after a colon with another of a random type.
        const size_t colon = out.find(':', i);
        if (colon == std::string::npos) break;
        size_t end = out.find_first_of(",}", colon + 1);
        if (end == std::string::npos) end = out.size();
        out.replace(colon + 1, end - colon - 1, kValues[rng() % std::size(kValues)]);
        break;
      }
    }
  }
  return out;
}

TEST(ApiValidationTest, FuzzedBodiesNeverCrashAndRejectionsChangeNothing) {
  ServiceHarness h;
  ASSERT_TRUE(h.Start().ok());
  const std::string seeds[] = {
      R"({"name":"a","tenant":"t","queue":"q","priority":1,"duration_s":10,"groups":[{"name":"w","count":2,"min_count":1,"gpus":4,"cpu_milli":100,"memory_mib":10,"gpu_types":["H100"]}]})",
      R"({"name":"b","idempotency_key":"k","groups":[{"count":1,"gpus":1,"milli_per_gpu":500},{"count":1}]})",
      R"({"pod":{"metadata":{"name":"p"}},"nodenames":["node-0"]})",
  };
  std::mt19937_64 rng(7);
  int accepted = 0, rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string body;
    if (iter % 5 == 4) {
      body.resize(rng() % 64);
      for (char& c : body) c = static_cast<char>(rng() % 256);
    } else {
      body = Mutate(seeds[iter % std::size(seeds)], rng);
    }
    h.Quiesce();
    const size_t before = h.records();
    const size_t jobs_before = h.service().ListJobs("", -1, 10000).body["jobs"].size();
    ApiResult r = h.service().SubmitJob(body);
    ASSERT_TRUE(r.code == 200 || r.code == 201 || r.code == 400 || r.code == 409 || r.code == 422)
        << r.code << " for " << body;
    if (r.code >= 400) {
      ++rejected;
      ASSERT_TRUE(r.body.contains("error"));
      h.Quiesce();
      EXPECT_EQ(h.records(), before) << body;
      EXPECT_EQ(h.service().ListJobs("", -1, 10000).body["jobs"].size(), jobs_before) << body;
    } else {
      ++accepted;
    }
    // The extender verbs take the same bytes without crashing.
    EXPECT_LT(h.service().ExtenderBind(body).code, 500);
    EXPECT_LT(h.service().ExtenderPreempt(body).code, 500);
    EXPECT_LT(h.service().ExtenderPrioritize(body).code, 500);
  }
  EXPECT_GT(rejected, 2000);
  EXPECT_TRUE(h.service().ready());
  RecordProperty("accepted", accepted);
}

TEST(ApiValidationTest, AdmissionLimitsAreConfigurable) {
  AdmissionLimits limits;
  limits.max_tasks_per_job = 10;
  limits.max_groups_per_job = 2;
  limits.max_name_bytes = 4;
  limits.max_label_bytes = 4;  // a group is "main" unless named
  ASSERT_TRUE(limits.Validate().ok());
  auto spec = [](const std::string& body) { return ParseJobBody(body).value().spec; };
  EXPECT_TRUE(CheckAdmissionLimits(spec(R"({"name":"abcd","groups":[{"count":10}]})"), "", limits).ok());
  EXPECT_EQ(CheckAdmissionLimits(spec(R"({"name":"abcd","groups":[{"count":11}]})"), "", limits).message(),
            "groups: 11 tasks in one job is over 10 (the limit; berth serve --max-tasks-per-job)");
  EXPECT_EQ(CheckAdmissionLimits(spec(R"({"name":"abcde","groups":[{"count":1}]})"), "", limits).message(),
            "name: 5 bytes is over 4 bytes (the limit; berth serve --max-name-bytes)");
  EXPECT_FALSE(CheckAdmissionLimits(spec(R"({"name":"a","groups":[{"count":1}]})"), "12345", limits).ok());
  EXPECT_FALSE(CheckAdmissionLimits(spec(R"({"name":"a","tenant":"abcde","groups":[{"count":1}]})"), "", limits).ok());
  EXPECT_FALSE(CheckAdmissionLimits(spec(R"({"name":"a","groups":[{"name":"longer","count":1}]})"), "", limits).ok());
  EXPECT_FALSE(
      CheckAdmissionLimits(spec(R"({"name":"a","groups":[{"count":1},{"count":1},{"count":1}]})"), "", limits).ok());
  limits.max_tasks_per_job = 0;
  EXPECT_FALSE(limits.Validate().ok());
  limits.max_tasks_per_job = 2'000'000;
  EXPECT_FALSE(limits.Validate().ok());
}

TEST(ApiValidationTest, HugeValuesAreCutInErrors) {
  // A bad value of 500 KB is shown in 40 characters, not serialized whole.
  std::string big = R"({"name":[)";
  for (int i = 0; i < 100000; ++i) big += "1,";
  big += R"(1],"groups":[{"count":1}]})";
  auto r = ParseJobBody(big);
  ASSERT_FALSE(r.ok());
  EXPECT_LT(r.status().message().size(), 120u) << r.status().message();
  // So is an unknown key of 1 MB.
  auto k = ParseJobBody(R"({"name":"a","groups":[{"count":1}],")" + std::string(1 << 20, 'k') + R"(":1})");
  ASSERT_FALSE(k.ok());
  EXPECT_LT(k.status().message().size(), 120u);
  auto gk = ParseJobBody(R"({"name":"a","groups":[{"count":1,")" + std::string(1 << 20, 'k') + R"(":1}]})");
  ASSERT_FALSE(gk.ok());
  EXPECT_LT(gk.status().message().size(), 140u);
}

// GPU memory per group: accepted, returned by GET, and the placement records
// the isolation limits the runtime gets.
TEST(ApiValidationTest, GpuMemoryRoundTripsAndTheLimitsAreInThePlacement) {
  ServiceHarness h;
  ASSERT_TRUE(h.Start().ok());
  const int64_t id =
      h.Submit(R"({"name":"m","groups":[{"count":2,"gpus":1,"milli_per_gpu":250,"gpu_memory_mib":20000}]})");
  ASSERT_TRUE(testing::WaitFor([&] { return h.State(id) == "running"; }));
  const nlohmann::json j = h.service().GetJob(id).body;
  EXPECT_EQ(j["spec"]["groups"][0]["gpu_memory_mib"], 20000) << j.dump();
  ASSERT_EQ(j["placements"].size(), 2u) << j.dump();
  for (const auto& p : j["placements"]) {
    EXPECT_EQ(p["gpu_memory_limit_mib"], 20000) << p.dump();
    EXPECT_EQ(p["compute_percent"], 25) << p.dump();
  }
  auto parsed = ParseJobJson(j["spec"], JobSource::kStored);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->spec.groups[0].gpu_memory_mib, 20000);
  // Without the field, nothing is written.
  const int64_t plain = h.Submit(R"({"name":"p","groups":[{"count":1,"gpus":1}]})");
  ASSERT_TRUE(testing::WaitFor([&] { return h.State(plain) == "running"; }));
  const nlohmann::json pj = h.service().GetJob(plain).body;
  EXPECT_FALSE(pj["spec"]["groups"][0].contains("gpu_memory_mib"));
  EXPECT_FALSE(pj["placements"][0].contains("gpu_memory_limit_mib"));
  EXPECT_FALSE(pj["placements"][0].contains("compute_percent"));
}

}  // namespace
}  // namespace berth::server
