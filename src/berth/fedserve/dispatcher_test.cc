// The live dispatcher in one process: two member services (virtual nodes,
// each behind its HTTP server on a free loopback port) and the dispatcher on
// an in-memory store. Global dispatch by data, leases (no double promise),
// a refusal, a member that stops answering, a member that hangs (fenced, its
// queued job moved, the copy it kept never started), and recovery from the
// store.
#include "berth/fedserve/dispatcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "berth/cluster/loaders.h"
#include "berth/server/http_server.h"
#include "berth/server/service_test_util.h"
#include "berth/store/memory_store.h"

namespace berth::fedserve {
namespace {

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
datasets:
  - {name: big, size_gib: 800, regions: [west], read: staged}
)";

struct Member {
  explicit Member(const std::string& spec) : h(spec, Options()) {}
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
  server::testing::ServiceHarness h;
  std::FILE* null = std::fopen("/dev/null", "w");
  server::Logger log{null};
  std::unique_ptr<server::HttpServer> http;
};

class FedServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    devnull_ = std::fopen("/dev/null", "w");
    log_ = std::make_unique<server::Logger>(devnull_);
    auto f = federation::ParseFederationYaml(kFed, "fed.yaml", [](const std::string& s) { return cluster::LoadCluster(s); });
    ASSERT_TRUE(f.ok()) << f.status().message();
    fed_ = std::move(f).value();
    ASSERT_TRUE(east_.Start().ok());
    ASSERT_TRUE(west_.Start().ok());
    data_ = std::make_shared<store::MemoryStore::Data>();
  }
  void TearDown() override {
    StopDispatcher();
    east_.http->Stop();
    west_.http->Stop();
    std::fclose(devnull_);
  }
  void StartDispatcher(const std::string& policy = "global", TimeUs request_timeout = 300'000) {
    store_ = std::make_unique<store::MemoryStore>(data_);
    DispatcherOptions o;
    o.policy = policy;
    o.poll_interval = 20'000;
    o.member_timeout = 500'000;
    o.tick = 5'000;
    o.link.timeout = request_timeout;
    if (tweak_) tweak_(o);
    d_ = std::make_unique<Dispatcher>(fed_, std::vector<std::string>{east_.url(), west_.url()}, *store_, o, *log_);
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
  nlohmann::json Job(int64_t id) { return d_->GetJob(id).body; }
  bool AtMember(int64_t id) { return Job(id)["member_job"].is_number_integer(); }

  std::FILE* devnull_ = nullptr;
  std::unique_ptr<server::Logger> log_;
  federation::Federation fed_;
  Member east_{"2x8:H100"}, west_{"2x8:A100"};
  std::shared_ptr<store::MemoryStore::Data> data_;
  std::unique_ptr<store::MemoryStore> store_;
  std::unique_ptr<Dispatcher> d_;
  std::function<void(DispatcherOptions&)> tweak_;  // set before StartDispatcher
};

TEST_F(FedServeTest, GlobalSendsAJobWhereItsDataIsAndFollowsIt) {
  StartDispatcher();
  const int64_t id = Submit(R"({"name":"a","duration_s":3600,"dataset":"big","groups":[{"count":1,"gpus":8}]})");
  ASSERT_TRUE(WaitFor([&] { return Job(id)["state"] == "running"; })) << Job(id).dump();
  const auto j = Job(id);
  EXPECT_EQ(j["member"], "west-a");
  EXPECT_EQ(j["region"], "west");
  EXPECT_EQ(j["idempotency_key"], "name:a");
  // Why: each candidate's estimate; east would stage 800 GiB first.
  ASSERT_EQ(j["candidates"].size(), 2u);
  for (const auto& c : j["candidates"]) {
    EXPECT_EQ(c["chosen"], c["member"] == "west-a");
    if (c["member"] == "east-a") {
      EXPECT_GT(c["staging_s"].get<double>(), 600);
    }
  }
  // The member holds it under the dispatcher's key; a retry makes no second job.
  EXPECT_EQ(d_->SubmitJob(R"({"name":"a","duration_s":3600,"dataset":"big","groups":[{"count":1,"gpus":8}]})").code, 200);
  EXPECT_EQ(west_.h.service().ListJobs("", -1, 100).body["jobs"].size(), 1u);
  // Cancel goes through to the member.
  EXPECT_EQ(d_->CancelJob(id).code, 200);
  ASSERT_TRUE(WaitFor([&] { return Job(id)["state"] == "cancelled"; }));
  ASSERT_TRUE(WaitFor([&] { return west_.h.State(j["member_job"].get<int64_t>()) == "cancelled"; }));
}

TEST_F(FedServeTest, LeasesKeepTwoDispatchesOffTheSameGpus) {
  StartDispatcher();
  // Each fills a whole member (16 GPUs); submitted back to back, before any
  // digest shows the first: the ledger keeps the second off the first's GPUs.
  const int64_t a = Submit(R"({"name":"a","duration_s":3600,"groups":[{"count":2,"gpus":8}]})");
  const int64_t b = Submit(R"({"name":"b","duration_s":3600,"groups":[{"count":2,"gpus":8}]})");
  ASSERT_TRUE(WaitFor([&] { return Job(a)["state"] == "running" && Job(b)["state"] == "running"; }))
      << Job(a).dump() << Job(b).dump();
  EXPECT_NE(Job(a)["member"], Job(b)["member"]);
  const auto f = d_->Federation().body;
  EXPECT_EQ(f["counters"]["double_promises"], 0);
  EXPECT_EQ(f["counters"]["promises"], 2);
  EXPECT_GE(f["counters"]["leases_released"].get<int64_t>(), 1);
  for (const auto& m : f["members"]) EXPECT_TRUE(m["digest"].is_object()) << m.dump();
}

TEST_F(FedServeTest, AJobNoMemberHoldsIsRefusedWhole) {
  StartDispatcher();
  // 24 GPUs: more than either member; a gang never splits over members.
  server::ApiResult r = d_->SubmitJob(R"({"name":"big","duration_s":60,"groups":[{"count":3,"gpus":8}]})");
  EXPECT_EQ(r.code, 422) << r.body.dump();
}

TEST_F(FedServeTest, QueuedJobsLeaveAMemberThatStopsAnswering) {
  StartDispatcher("data-local");
  // data-local: every job to west (the data's region); the third queues there.
  std::vector<int64_t> ids;
  for (int i = 0; i < 3; ++i)
    ids.push_back(Submit(R"({"name":"j)" + std::to_string(i) +
                         R"(","duration_s":3600,"dataset":"big","groups":[{"count":1,"gpus":8}]})"));
  ASSERT_TRUE(WaitFor([&] {
    int running = 0, queued = 0;
    for (int64_t id : ids) {
      auto j = Job(id);
      if (j["member"] != "west-a" || !j["member_job"].is_number_integer()) return false;
      (j["state"] == "running" ? running : queued)++;
    }
    return running == 2 && queued == 1;
  }));
  int64_t queued_id = -1, queued_member_job = -1;
  for (int64_t id : ids)
    if (Job(id)["state"] == "pending") queued_id = id, queued_member_job = Job(id)["member_job"].get<int64_t>();
  west_.http->Stop();  // it stops answering
  ASSERT_TRUE(WaitFor([&] { return Job(queued_id)["member"] == "east-a" && AtMember(queued_id); }))
      << Job(queued_id).dump();
  for (int64_t id : ids)
    if (id != queued_id) {
      EXPECT_EQ(Job(id)["member"], "west-a");  // running: kept until --requeue-running-after
    }
  // Its copy is still queued there (the member itself never heard); the
  // e2e test (tests/service/federation_e2e.sh) brings a member back and
  // checks the copy is cancelled.
  EXPECT_EQ(west_.h.State(queued_member_job), "pending");
  const auto f = d_->Federation().body;
  EXPECT_FALSE(f["members"][1]["up"].get<bool>());
  EXPECT_GE(f["counters"]["redispatches"].get<int64_t>(), 1);
}

TEST_F(FedServeTest, ARunningJobRequeuedOffADeadMemberMovesItsCheckpoint) {
  // 0.1 GiB of checkpoint per GPU: 0.8 GiB for the job, about 0.7 s over the
  // 10 Gbit/s link. The members' runs count 1,000 s of job time per second.
  fed_.checkpoint_gib_per_gpu = 0.1;
  tweak_ = [](DispatcherOptions& o) {
    o.requeue_running_after = 300'000;
    o.member_speedup = 1000;
  };
  StartDispatcher("data-local");
  const int64_t id = Submit(
      R"({"name":"c","duration_s":36000,"checkpoint_interval_s":60,"dataset":"big","groups":[{"count":1,"gpus":8}]})");
  ASSERT_TRUE(WaitFor([&] { return Job(id)["state"] == "running" && Job(id)["member"] == "west-a"; }))
      << Job(id).dump();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // some checkpoints written
  west_.http->Stop();  // it dies: marked down, then its running job moves from its checkpoint
  ASSERT_TRUE(WaitFor([&] { return Job(id)["member"] == "east-a"; })) << Job(id).dump();
  const auto moving = Job(id);
  EXPECT_NE(moving["why"].get<std::string>().find("moving its checkpoint to east"), std::string::npos) << moving.dump();
  ASSERT_TRUE(moving.contains("checkpoint")) << moving.dump();
  EXPECT_EQ(moving["checkpoint"]["region"], "east");
  EXPECT_EQ(moving["checkpoint"]["mib"].get<int64_t>(), 819);
  EXPECT_LT(moving["remaining_s"].get<double>(), 36000);
  const auto c = d_->Federation().body["counters"];
  EXPECT_EQ(c["requeued_running"].get<int64_t>(), 1);
  EXPECT_EQ(c["checkpoint_moves"].get<int64_t>(), 1);
  EXPECT_DOUBLE_EQ(c["checkpoint_bytes"].get<double>(), 819.0 * 1024 * 1024);
  EXPECT_NEAR(c["checkpoint_egress_usd"].get<double>(), 819.0 / 1024 * 0.02, 1e-9);
  // Forwarded only once the checkpoint is in the east (about 0.77 s after the
  // decision: 0.8 GiB at 10 Gbit/s plus one round trip).
  const double seen = UsToSeconds(SystemClock().Now());
  ASSERT_TRUE(WaitFor([&] { return AtMember(id); })) << Job(id).dump();
  if (!moving["member_job"].is_number_integer()) EXPECT_GT(Job(id)["dispatched_at"].get<double>() - seen, 0.5);
  EXPECT_TRUE(WaitFor([&] { return Job(id)["state"] == "running"; })) << Job(id).dump();
  EXPECT_EQ(Job(id)["requeues"].get<int64_t>(), 1);
  // A restart reads the checkpoint back from the assignment record.
  StopDispatcher();
  StartDispatcher("data-local");
  ASSERT_TRUE(WaitFor([&] { return d_->GetJob(id).code == 200 && Job(id).contains("checkpoint"); }))
      << Job(id).dump();
  EXPECT_EQ(Job(id)["checkpoint"]["region"], "east");
  EXPECT_EQ(Job(id)["checkpoint"]["mib"].get<int64_t>(), 819);
  EXPECT_EQ(Job(id)["member"], "east-a");
}

TEST_F(FedServeTest, AHungMemberIsFencedAndItsQueuedJobNeverRunsTwice) {
  // Calls to a hung member wait up to 3 s; its digest polls never hold the loop.
  StartDispatcher("data-local", 3'000'000);
  // west: r holds 8 of its 16 GPUs for 6 s; q (16 GPUs) queues behind it.
  const int64_t r = Submit(R"({"name":"r","duration_s":6,"dataset":"big","groups":[{"count":1,"gpus":8}]})");
  ASSERT_TRUE(WaitFor([&] { return Job(r)["state"] == "running"; })) << Job(r).dump();
  const auto t_r = std::chrono::steady_clock::now();
  const int64_t q = Submit(R"({"name":"q","duration_s":3600,"dataset":"big","groups":[{"count":2,"gpus":8}]})");
  ASSERT_TRUE(WaitFor([&] { return Job(q)["member"] == "west-a" && AtMember(q); })) << Job(q).dump();
  ASSERT_EQ(Job(q)["state"], "pending");
  const int64_t q_at_west = Job(q)["member_job"].get<int64_t>();
  // west hangs: its scheduling thread stops, so its API accepts and never
  // answers (as a stopped process does).
  std::atomic<bool> thaw{false};
  std::thread freeze([&] {
    west_.h.service().Sync([&] {
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
  // While west's calls hang, the dispatcher marks it down and moves q.
  ASSERT_TRUE(WaitFor([&] { return Job(q)["member"] == "east-a" && Job(q)["state"] == "running"; })) << Job(q).dump() << d_->Federation().body["members"][1].dump();
  auto f = d_->Federation().body;
  EXPECT_FALSE(f["members"][1]["up"].get<bool>()) << f["members"][1].dump();
  EXPECT_FALSE(f["members"][1]["responsive"].get<bool>());
  EXPECT_TRUE(f["members"][0]["responsive"].get<bool>());
  // r's end passes while west is stopped: when it resumes, 16 GPUs are free
  // and its copy of q could start; its lease has lapsed, so it starts nothing.
  ASSERT_TRUE(WaitFor([&] { return std::chrono::steady_clock::now() - t_r > std::chrono::milliseconds(6500); }));
  thaw = true;
  freeze.join();
  ASSERT_TRUE(WaitFor([&] { return west_.h.State(q_at_west) == "cancelled"; })) << west_.h.State(q_at_west);
  const auto copy = west_.h.service().GetJob(q_at_west).body;
  EXPECT_EQ(copy["starts"], 0) << copy.dump();  // never started there
  EXPECT_EQ(Job(q)["member"], "east-a");
  EXPECT_EQ(Job(q)["state"], "running");
  // Back, reconciled, leased again: west runs new work.
  ASSERT_TRUE(WaitFor([&] { return d_->Federation().body["members"][1]["up"].get<bool>(); }));
  const int64_t w = Submit(R"({"name":"w","duration_s":60,"regions":["west"],"groups":[{"count":1,"gpus":8}]})");
  ASSERT_TRUE(WaitFor([&] { return Job(w)["state"] == "running"; })) << Job(w).dump();
  f = d_->Federation().body;
  EXPECT_GE(f["counters"]["duplicates_cancelled"].get<int64_t>(), 1);
}

TEST_F(FedServeTest, AssignmentsSurviveARestart) {
  StartDispatcher();
  const int64_t a = Submit(R"({"name":"a","duration_s":3600,"dataset":"big","groups":[{"count":1,"gpus":8}]})");
  const int64_t b = Submit(R"({"name":"b","duration_s":3600,"regions":["east"],"groups":[{"count":1,"gpus":4}]})");
  ASSERT_TRUE(WaitFor([&] { return AtMember(a) && AtMember(b); }));
  const auto ja = Job(a), jb = Job(b);
  StopDispatcher();
  StartDispatcher();
  EXPECT_EQ(Job(a)["member"], ja["member"]);
  EXPECT_EQ(Job(a)["member_job"], ja["member_job"]);
  EXPECT_EQ(Job(b)["member"], "east-a");
  EXPECT_EQ(Job(b)["member_job"], jb["member_job"]);
  ASSERT_TRUE(WaitFor([&] { return Job(a)["state"] == "running" && Job(b)["state"] == "running"; }));
  // No second copy anywhere.
  EXPECT_EQ(west_.h.service().ListJobs("", -1, 100).body["jobs"].size(), 1u);
  EXPECT_EQ(east_.h.service().ListJobs("", -1, 100).body["jobs"].size(), 1u);
}

}  // namespace
}  // namespace berth::fedserve
