// Gangs across regions in the live dispatcher (dispatcher_span.cc), in one
// process: two member services (virtual nodes, each behind its HTTP server
// on a free loopback port) and the dispatcher on an in-memory store. A gang
// of three 8-GPU tasks fits neither 16-GPU member whole: with span_regions it
// runs as two parts (2 tasks in the east, 1 in the west). Split only with the
// flag; the parts, their names, keys and ranks at the members; no part
// submitted until every lease is granted; a refused part releases the other;
// a part that ends early, or whose member dies, stops the gang and
// re-dispatches it once (from its checkpoint); a restart keeps the parts.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "berth/cluster/loaders.h"
#include "berth/fedserve/dispatcher.h"
#include "berth/server/http_server.h"
#include "berth/server/service_test_util.h"
#include "berth/store/memory_store.h"

namespace berth::fedserve {
namespace {

using nlohmann::json;
using server::testing::WaitFor;

constexpr const char* kFed = R"(
name: two
dispatcher_region: east
lease_s: 30
inter_region: {bandwidth_gbps: 10, rtt_ms: 80, egress_usd_per_gb: 0.02}
regions:
  - name: east
    clusters: [{name: east-a, cluster: "2x8:H100"}]
  - name: west
    clusters: [{name: west-a, cluster: "2x8:A100"}]
)";

constexpr const char* kGang =
    R"({"name":"gang","duration_s":DUR,"span_regions":true,"launcher":"torch","command":["train"],)"
    R"("env":{"MASTER_ADDR":"rdzv.example","MASTER_PORT":"29400"},"groups":[{"count":3,"gpus":8}]})";

std::string Gang(int seconds) {
  std::string s = kGang;
  s.replace(s.find("DUR"), 3, std::to_string(seconds));
  return s;
}

struct Member {
  Member(const std::string& spec, server::ServiceOptions o) : h(spec, o) {}
  static server::ServiceOptions Options() {
    server::ServiceOptions o;
    o.virtual_nodes = true;
    o.policy = "bestfit";
    return o;
  }
  Status Start() {
    BERTH_RETURN_IF_ERROR(h.Start());
    server::HttpOptions ho;
    ho.port = 0;
    ho.threads = 4;
    http = std::make_unique<server::HttpServer>(h.service(), h.metrics(), log, ho);
    BERTH_RETURN_IF_ERROR(http->Bind());
    http->Start();
    return Status::Ok();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(http->port()); }
  json Jobs() { return h.service().ListJobs("", -1, 100).body["jobs"]; }
  server::testing::ServiceHarness h;
  std::FILE* null = std::fopen("/dev/null", "w");
  server::Logger log{null};
  std::unique_ptr<server::HttpServer> http;
};

class FedSpanServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    devnull_ = std::fopen("/dev/null", "w");
    log_ = std::make_unique<server::Logger>(devnull_);
    auto f = federation::ParseFederationYaml(kFed, "fed.yaml", [](const std::string& s) { return cluster::LoadCluster(s); });
    ASSERT_TRUE(f.ok()) << f.status().message();
    fed_ = std::move(f).value();
    data_ = std::make_shared<store::MemoryStore::Data>();
  }
  void StartMembers(server::ServiceOptions west = Member::Options()) {
    east_ = std::make_unique<Member>("2x8:H100", Member::Options());
    west_ = std::make_unique<Member>("2x8:A100", west);
    ASSERT_TRUE(east_->Start().ok());
    ASSERT_TRUE(west_->Start().ok());
  }
  void TearDown() override {
    StopDispatcher();
    if (east_) east_->http->Stop();
    if (west_) west_->http->Stop();
    std::fclose(devnull_);
  }
  void StartDispatcher(TimeUs member_timeout = 500'000, TimeUs request_timeout = 300'000) {
    store_ = std::make_unique<store::MemoryStore>(data_);
    DispatcherOptions o;
    o.poll_interval = 20'000;
    o.member_timeout = member_timeout;
    o.tick = 5'000;
    o.link.timeout = request_timeout;
    d_ = std::make_unique<Dispatcher>(fed_, std::vector<std::string>{east_->url(), west_->url()}, *store_, o, *log_);
    ASSERT_TRUE(d_->Start().ok());
  }
  void StopDispatcher() {
    if (d_) d_->Stop();
    d_.reset();
    store_.reset();
  }
  int64_t Submit(const std::string& body) {
    server::ApiResult r = d_->SubmitJob(body);
    EXPECT_EQ(r.code, 201) << r.body.dump();
    return r.body.value("id", int64_t{-1});
  }
  json Job(int64_t id) { return d_->GetJob(id).body; }
  json Counters() { return d_->Federation().body["counters"]; }
  bool Running(int64_t id) { return Job(id)["state"] == "running"; }
  bool Digested() {
    const json f = d_->Federation().body;
    for (const auto& m : f["members"])
      if (!m["digest"].is_object()) return false;
    return true;
  }

  std::FILE* devnull_ = nullptr;
  std::unique_ptr<server::Logger> log_;
  federation::Federation fed_;
  std::unique_ptr<Member> east_, west_;
  std::shared_ptr<store::MemoryStore::Data> data_;
  std::unique_ptr<store::MemoryStore> store_;
  std::unique_ptr<Dispatcher> d_;
};

TEST_F(FedSpanServeTest, SplitsOnlyWithTheFlagAndRunsAsParts) {
  StartMembers();
  StartDispatcher();
  // Without the flag a gang no member holds is refused whole.
  std::string whole = Gang(2);
  whole.replace(whole.find("\"span_regions\":true,"), 20, "");
  EXPECT_EQ(d_->SubmitJob(whole).code, 422);
  const int64_t id = Submit(Gang(2));
  ASSERT_TRUE(WaitFor([&] { return Running(id); })) << Job(id).dump();
  json j = Job(id);
  ASSERT_EQ(j["parts"].size(), 2u) << j.dump();
  EXPECT_EQ(j["parts"][0]["member"], "east-a");
  EXPECT_EQ(j["parts"][0]["tasks"], 2);
  EXPECT_EQ(j["parts"][0]["ranks"], json::array({0, 1}));
  EXPECT_EQ(j["parts"][1]["member"], "west-a");
  EXPECT_EQ(j["parts"][1]["tasks"], 1);
  EXPECT_EQ(j["parts"][1]["ranks"], json::array({2, 2}));
  EXPECT_EQ(j["span"]["world_size"], 3);
  EXPECT_TRUE(j["span"]["whole_member"].is_null());
  EXPECT_NE(j["span"]["reason"].get<std::string>().find("no member holds"), std::string::npos);
  EXPECT_GT(j["span"]["run_s"].get<double>(), 0);
  EXPECT_TRUE(j["member"].is_null());
  // Each member holds its part as an ordinary job, named after the gang, with its ranks.
  const json east = east_->Jobs(), west = west_->Jobs();
  ASSERT_EQ(east.size(), 1u);
  ASSERT_EQ(west.size(), 1u);
  EXPECT_EQ(east[0]["name"], "gang.part-0");
  EXPECT_EQ(west[0]["name"], "gang.part-1");
  const int64_t at_west = west[0]["id"].get<int64_t>();
  const json spec = west_->h.service().GetJob(at_west).body["spec"];
  EXPECT_EQ(spec["span_part"], json({{"index", 1}, {"parts", 2}, {"world_size", 3}, {"rank_offset", 2}}));
  EXPECT_EQ(spec["groups"][0]["count"], 1);
  const json launch = west_->h.service().GetLaunch(at_west).body;
  EXPECT_EQ(launch["world_size"], 3) << launch.dump();
  EXPECT_EQ(launch["tasks"][0]["rank"], 2);
  EXPECT_EQ(launch["tasks"][0]["env"]["RANK"], "2");
  EXPECT_EQ(launch["tasks"][0]["env"]["WORLD_SIZE"], "3");
  EXPECT_EQ(launch["tasks"][0]["env"]["MASTER_ADDR"], "rdzv.example");  // the gang's rendezvous
  EXPECT_EQ(launch["tasks"][0]["env"]["BERTH_SPAN_RANK_OFFSET"], "2");
  // A retry of the submission makes no second gang.
  EXPECT_EQ(d_->SubmitJob(Gang(2)).code, 200);
  ASSERT_TRUE(WaitFor([&] { return Job(id)["state"] == "succeeded"; })) << Job(id).dump();
  for (const auto& p : Job(id)["parts"]) EXPECT_EQ(p["state"], "succeeded");
  const json c = Counters();
  EXPECT_EQ(c["spanning_jobs"], 1);
  EXPECT_EQ(c["spanning_parts"], 2);
  EXPECT_EQ(c["redispatches"], 0);
  EXPECT_EQ(c["double_promises"], 0);
  EXPECT_NE(d_->MetricsText().find("berth_federation_spanning_parts_total 2"), std::string::npos);
}

TEST_F(FedSpanServeTest, NoPartIsSubmittedUntilEveryLeaseIsGranted) {
  StartMembers();
  // Calls to a hung member wait up to 3 s; it is unresponsive after 1.5 s and down after 3 s.
  StartDispatcher(3'000'000, 3'000'000);
  ASSERT_TRUE(WaitFor([&] { return Digested(); }));
  // west hangs: its API accepts and never answers.
  std::atomic<bool> thaw{false};
  std::thread freeze([&] {
    west_->h.service().Sync([&] {
      while (!thaw) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    });
  });
  struct Thaw {
    std::atomic<bool>& t;
    std::thread& th;
    ~Thaw() {
      t = true;
      if (th.joinable()) th.join();
    }
  } thaw_guard{thaw, freeze};
  ASSERT_TRUE(WaitFor([&] { return !d_->Federation().body["members"][1]["responsive"].get<bool>(); }));
  // Planned on west's last digest (it is not down yet), but west grants no lease: nothing goes out.
  const int64_t id = Submit(Gang(60));
  ASSERT_TRUE(WaitFor([&] { return Job(id).contains("parts"); })) << Job(id).dump();
  EXPECT_EQ(east_->Jobs().size(), 0u);
  // west is marked down: every lease is released, the job waits (east alone cannot hold it).
  ASSERT_TRUE(WaitFor([&] { return !d_->Federation().body["members"][1]["up"].get<bool>(); }));
  ASSERT_TRUE(WaitFor([&] { return Job(id)["phase"] == "waiting"; })) << Job(id).dump();
  EXPECT_EQ(east_->Jobs().size(), 0u);
  EXPECT_EQ(Counters()["redispatches"], 1);
  // west answers again: the gang goes out and runs split.
  thaw = true;
  freeze.join();
  ASSERT_TRUE(WaitFor([&] { return Running(id); })) << Job(id).dump();
  EXPECT_EQ(east_->Jobs().size(), 1u);
}

TEST_F(FedSpanServeTest, ARefusedPartReleasesEveryPartAndRedispatches) {
  // west refuses any name over 8 bytes: "gang.part-1" (11).
  server::ServiceOptions o = Member::Options();
  o.limits.max_name_bytes = 8;
  StartMembers(o);
  StartDispatcher();
  const int64_t id = Submit(Gang(60));
  ASSERT_TRUE(WaitFor([&] { return !Job(id)["refused_by"].empty(); })) << Job(id).dump();
  json j = Job(id);
  EXPECT_EQ(j["refused_by"], json::array({"west-a"}));
  EXPECT_EQ(j["state"], "pending");
  // The east part is cancelled there; west holds nothing.
  ASSERT_TRUE(WaitFor([&] {
    const json e = east_->Jobs();
    return e.size() == 1 && e[0]["state"] == "cancelled";
  })) << east_->Jobs().dump();
  EXPECT_EQ(west_->Jobs().size(), 0u);
  const json c = Counters();
  EXPECT_EQ(c["refusals"], 1);
  EXPECT_EQ(c["redispatches"], 1);
  EXPECT_EQ(c["spanning_jobs"], 0);
}

TEST_F(FedSpanServeTest, APartThatEndsEarlyStopsTheGangAndRedispatchesItOnce) {
  StartMembers();
  StartDispatcher();
  const int64_t id = Submit(Gang(3600));
  ASSERT_TRUE(WaitFor([&] { return Running(id); })) << Job(id).dump();
  const int64_t east_part = Job(id)["parts"][0]["member_job"].get<int64_t>();
  const int64_t west_part = Job(id)["parts"][1]["member_job"].get<int64_t>();
  // The west part ends at its member (cancelled there, not by the dispatcher).
  ASSERT_EQ(west_->h.service().CancelJob(west_part).code, 200);
  // The east part is cancelled, and the gang runs again, split, as attempt 2.
  ASSERT_TRUE(WaitFor([&] { return east_->h.State(east_part) == "cancelled"; }));
  ASSERT_TRUE(WaitFor([&] { return Running(id) && Job(id)["attempt"] == 2; })) << Job(id).dump();
  const json j = Job(id);
  EXPECT_NE(j["parts"][0]["member_job"], east_part);
  EXPECT_EQ(Counters()["redispatches"], 1);
  EXPECT_EQ(Counters()["span_breaks"], 1);
  EXPECT_EQ(Counters()["spanning_jobs"], 1);  // one job, split twice
  EXPECT_EQ(Counters()["spanning_parts"], 4);
  int live = 0;
  for (Member* m : {east_.get(), west_.get()})
    for (const auto& mj : m->Jobs()) live += mj["state"] == "running" ? 1 : 0;
  EXPECT_EQ(live, 2);  // the new parts only
}

TEST_F(FedSpanServeTest, APartsMemberThatDiesStopsTheGangFromItsCheckpoint) {
  // The members' runs count 1,000 s of job time per second; a checkpoint every 60 s.
  fed_.checkpoint_gib_per_gpu = 0.1;
  StartMembers();
  store_ = std::make_unique<store::MemoryStore>(data_);
  DispatcherOptions o;
  o.poll_interval = 20'000;
  o.member_timeout = 500'000;
  o.tick = 5'000;
  o.link.timeout = 300'000;
  o.member_speedup = 1000;
  d_ = std::make_unique<Dispatcher>(fed_, std::vector<std::string>{east_->url(), west_->url()}, *store_, o, *log_);
  ASSERT_TRUE(d_->Start().ok());
  std::string body = Gang(36000);
  body.replace(body.find("\"groups\""), 0, "\"checkpoint_interval_s\":60,");
  const int64_t id = Submit(body);
  ASSERT_TRUE(WaitFor([&] { return Running(id); })) << Job(id).dump();
  const int64_t east_part = Job(id)["parts"][0]["member_job"].get<int64_t>();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // some checkpoints written
  west_->http->Stop();  // west dies: marked down, the gang stops at once
  ASSERT_TRUE(WaitFor([&] { return east_->h.State(east_part) == "cancelled"; })) << Job(id).dump();
  const json j = Job(id);
  EXPECT_EQ(j["state"], "pending");
  EXPECT_EQ(j["requeues"], 1);
  EXPECT_LT(j["remaining_s"].get<double>(), 36000);
  ASSERT_TRUE(j.contains("checkpoint")) << j.dump();
  EXPECT_EQ(j["checkpoint"]["region"], "east");  // the largest part's
  const json c = Counters();
  EXPECT_EQ(c["span_breaks"], 1);
  EXPECT_EQ(c["requeued_running"], 1);
  EXPECT_EQ(c["redispatches"], 1);
}

TEST_F(FedSpanServeTest, ARestartKeepsThePartsAndMakesNoOthers) {
  StartMembers();
  StartDispatcher();
  const int64_t id = Submit(Gang(4));
  ASSERT_TRUE(WaitFor([&] { return Running(id); })) << Job(id).dump();
  const json before = Job(id)["parts"];
  StopDispatcher();
  StartDispatcher();
  ASSERT_TRUE(WaitFor([&] { return d_->GetJob(id).code == 200 && Job(id).contains("parts"); }));
  const json after = Job(id)["parts"];
  ASSERT_EQ(after.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(after[k]["member"], before[k]["member"]);
    EXPECT_EQ(after[k]["member_job"], before[k]["member_job"]);
  }
  ASSERT_TRUE(WaitFor([&] { return Job(id)["state"] == "succeeded"; })) << Job(id).dump();
  EXPECT_EQ(east_->Jobs().size(), 1u);
  EXPECT_EQ(west_->Jobs().size(), 1u);
  EXPECT_EQ(Counters()["redispatches"], 0);
}

TEST_F(FedSpanServeTest, ARestartBeforeThePartsAreAcknowledgedSendsThemUnderTheSameKeys) {
  StartMembers();
  StartDispatcher();
  const int64_t id = Submit(Gang(4));
  ASSERT_TRUE(WaitFor([&] { return Job(id).contains("parts"); })) << Job(id).dump();
  // Stopped at once: the parts may or may not have gone out; the restart sends them with the same keys.
  StopDispatcher();
  StartDispatcher();
  ASSERT_TRUE(WaitFor([&] { return d_->GetJob(id).code == 200 && Job(id)["state"] == "succeeded"; }))
      << Job(id).dump();
  EXPECT_EQ(east_->Jobs().size(), 1u);
  EXPECT_EQ(west_->Jobs().size(), 1u);
}

}  // namespace
}  // namespace berth::fedserve
