// Two dispatchers on one store, as over etcd: the standby waits for the term
// (its API answers 503 naming the leader), takes over when the leader goes,
// rebuilds from the store and follows every job at its member (each there
// once, under its first key); a dispatcher whose write is fenced steps down
// and sends nothing more. One member service behind HTTP on loopback; the
// standby's store is a memory store whose Acquire() waits, as a replicated
// store's does while another process leads.
#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <map>

#include "berth/cluster/loaders.h"
#include "berth/fedserve/dispatcher.h"
#include "berth/server/http_server.h"
#include "berth/server/service_test_util.h"
#include "berth/store/standby_store_test_util.h"
#include "berth/store/memory_store.h"

namespace berth::fedserve {
namespace {

using server::testing::WaitFor;

constexpr const char* kFed = R"(
name: one
regions:
  - name: east
    clusters: [{name: east-a, cluster: "2x8:H100"}]
)";
constexpr const char* kLeader = R"({"id":"other:1","address":"http://10.0.0.5:7450"})";

using store::StandbyStore;

class FedStandbyTest : public ::testing::Test {
 protected:
  static server::ServiceOptions MemberOptions() {
    server::ServiceOptions o;
    o.virtual_nodes = true;
    o.policy = "bestfit";
    return o;
  }
  void SetUp() override {
    devnull_ = std::fopen("/dev/null", "w");
    log_ = std::make_unique<server::Logger>(devnull_);
    auto f = federation::ParseFederationYaml(kFed, "fed.yaml",
                                             [](const std::string& s) { return cluster::LoadCluster(s); });
    ASSERT_TRUE(f.ok()) << f.status().message();
    fed_ = std::move(f).value();
    ASSERT_TRUE(member_.Start().ok());
    StartMemberHttp(0);
  }
  void TearDown() override {
    if (standby_) standby_->Stop();
    if (leader_) leader_->Stop();
    http_->Stop();
    std::fclose(devnull_);
  }
  DispatcherOptions Options(TimeUs member_timeout = 500'000) const {
    DispatcherOptions o;
    o.poll_interval = 20'000;
    o.member_timeout = member_timeout;
    o.tick = 5'000;
    o.link.timeout = 300'000;
    return o;
  }
  std::unique_ptr<Dispatcher> Make(store::Store& s, TimeUs member_timeout = 500'000) {
    const std::string url = "http://127.0.0.1:" + std::to_string(port_);
    return std::make_unique<Dispatcher>(fed_, std::vector<std::string>{url}, s, Options(member_timeout), *log_);
  }
  // The member's API goes away (connections refused) and comes back on its port.
  void StartMemberHttp(int port) {
    server::HttpOptions ho;
    ho.port = port;
    ho.threads = 4;
    http_ = std::make_unique<server::HttpServer>(member_.service(), member_.metrics(), *log_, ho);
    ASSERT_TRUE(http_->Bind().ok());
    http_->Start();
    port_ = http_->port();
  }
  static int64_t Submit(Dispatcher& d, const std::string& name) {
    server::ApiResult r =
        d.SubmitJob(R"({"name":")" + name + R"(","duration_s":3600,"groups":[{"count":1,"gpus":1}]})");
    EXPECT_EQ(r.code, 201) << r.body.dump();
    return r.body.value("id", int64_t{-1});
  }
  static bool AllAtMember(Dispatcher& d, const std::vector<int64_t>& ids) {
    for (int64_t id : ids)
      if (!d.GetJob(id).body["member_job"].is_number_integer()) return false;
    return true;
  }
  // The member's jobs by idempotency key.
  std::map<std::string, int> MemberKeys() {
    std::map<std::string, int> keys;
    const server::ApiResult list = member_.service().ListJobs("", -1, 1000);
    for (const auto& j : list.body["jobs"])
      keys[member_.service().GetJob(j["id"].get<int64_t>()).body.value("idempotency_key", std::string())]++;
    return keys;
  }

  std::FILE* devnull_ = nullptr;
  std::unique_ptr<server::Logger> log_;
  federation::Federation fed_;
  server::testing::ServiceHarness member_{"2x8:H100", MemberOptions()};
  std::unique_ptr<server::HttpServer> http_;
  int port_ = 0;
  std::shared_ptr<store::MemoryStore::Data> data_ = std::make_shared<store::MemoryStore::Data>();
  std::unique_ptr<store::MemoryStore> leader_store_;
  std::unique_ptr<StandbyStore> standby_store_;
  std::unique_ptr<Dispatcher> leader_, standby_;
};

TEST_F(FedStandbyTest, TheStandbyNamesTheLeaderThenTakesOverWithEveryJobOnce) {
  leader_store_ = std::make_unique<store::MemoryStore>(data_);
  leader_ = Make(*leader_store_);
  ASSERT_TRUE(leader_->Start().ok());
  std::vector<int64_t> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(Submit(*leader_, "j" + std::to_string(i)));
  ASSERT_TRUE(WaitFor([&] { return AllAtMember(*leader_, ids); }));

  standby_store_ = std::make_unique<StandbyStore>(data_);
  standby_store_->SetLeader(kLeader);
  standby_ = Make(*standby_store_);
  auto started = std::async(std::launch::async, [&] { return standby_->Start(); });
  ASSERT_TRUE(WaitFor([&] { return standby_->role() == Dispatcher::Role::kAcquiring; }));
  EXPECT_FALSE(standby_->ready());
  server::ApiResult sub = standby_->SubmitJob(R"({"name":"x","groups":[{"count":1,"gpus":1}]})");
  EXPECT_EQ(sub.code, 503);
  EXPECT_EQ(sub.body["role"], "standby") << sub.body.dump();
  EXPECT_EQ(sub.body["leader"]["address"], "http://10.0.0.5:7450") << sub.body.dump();
  EXPECT_NE(sub.body["error"].get<std::string>().find("the leader is http://10.0.0.5:7450"), std::string::npos);
  EXPECT_EQ(standby_->CancelJob(ids[0]).code, 503);
  EXPECT_NE(standby_->MetricsText().find("berth_federation_leading 0"), std::string::npos);

  // Two more reach the leader, then it goes (its loop stops; nothing more of it).
  ids.push_back(Submit(*leader_, "j4"));
  ids.push_back(Submit(*leader_, "j5"));
  leader_->StepDown("killed");
  EXPECT_EQ(leader_->SubmitJob(R"({"name":"late","groups":[{"count":1,"gpus":1}]})").code, 503);
  EXPECT_EQ(leader_->NotReady().body["role"], "stepped_down");

  standby_store_->Grant(R"({"id":"me:2","address":"http://10.0.0.6:7450"})");
  ASSERT_TRUE(started.get().ok());
  EXPECT_TRUE(standby_->ready());
  EXPECT_EQ(standby_->role(), Dispatcher::Role::kLeading);
  ASSERT_TRUE(WaitFor([&] { return AllAtMember(*standby_, ids); }));
  // A client retrying at the new leader gets the job it was acknowledged.
  server::ApiResult again = standby_->SubmitJob(R"({"name":"j5","duration_s":3600,"groups":[{"count":1,"gpus":1}]})");
  EXPECT_EQ(again.code, 200) << again.body.dump();
  EXPECT_EQ(again.body["id"], ids.back());
  const auto keys = MemberKeys();
  EXPECT_EQ(keys.size(), ids.size());
  for (int64_t id : ids) EXPECT_EQ(keys.count("fed-" + std::to_string(id) + "-1"), 1u) << id;
  for (const auto& [k, n] : keys) EXPECT_EQ(n, 1) << k;
}

TEST_F(FedStandbyTest, AFencedWriteStepsTheDispatcherDown) {
  leader_store_ = std::make_unique<store::MemoryStore>(data_);
  leader_ = Make(*leader_store_);
  ASSERT_TRUE(leader_->Start().ok());
  const int64_t a = Submit(*leader_, "a");
  ASSERT_TRUE(WaitFor([&] { return AllAtMember(*leader_, {a}); }));
  // Another dispatcher takes a newer term (the first missed its lease).
  standby_store_ = std::make_unique<StandbyStore>(data_);
  standby_store_->Grant(R"({"id":"new:2","address":"http://10.0.0.6:7450"})");
  standby_ = Make(*standby_store_);
  ASSERT_TRUE(standby_->Start().ok());
  // The old one's next write is refused: it steps down and answers 503.
  server::ApiResult r = leader_->SubmitJob(R"({"name":"b","groups":[{"count":1,"gpus":1}]})");
  EXPECT_EQ(r.code, 503) << r.body.dump();
  ASSERT_TRUE(WaitFor([&] { return leader_->stepped_down(); }));
  EXPECT_FALSE(leader_->ready());
  EXPECT_EQ(leader_->NotReady().body["role"], "stepped_down");
  // Only the new leader's jobs reach the member; "b" was never stored.
  const int64_t c = Submit(*standby_, "c");
  ASSERT_TRUE(WaitFor([&] { return AllAtMember(*standby_, {a, c}); }));
  const auto keys = MemberKeys();
  EXPECT_EQ(keys.size(), 2u);
  EXPECT_EQ(standby_->GetJob(c).body["name"], "c");
}

TEST_F(FedStandbyTest, ADeposedDispatcherThatHasNotHeardCancelsNothing) {
  leader_store_ = std::make_unique<store::MemoryStore>(data_);
  leader_ = Make(*leader_store_);
  ASSERT_TRUE(leader_->Start().ok());
  // The member's 16 GPUs run "big"; "q" queues behind it there.
  const int64_t big = leader_->SubmitJob(R"({"name":"big","duration_s":3600,"groups":[{"count":2,"gpus":8}]})")
                          .body.value("id", int64_t{-1});
  ASSERT_TRUE(WaitFor([&] { return leader_->GetJob(big).body["state"] == "running"; }));
  const int64_t q = Submit(*leader_, "q");
  ASSERT_TRUE(WaitFor([&] { return AllAtMember(*leader_, {q}); }));
  const int64_t q_at_member = leader_->GetJob(q).body["member_job"].get<int64_t>();
  // The member goes quiet: the leader marks it down and moves "q" away (in
  // memory: no other member can take it, so nothing is written yet).
  const int port = port_;
  http_->Stop();
  ASSERT_TRUE(WaitFor([&] { return !leader_->GetJob(q).body["member_job"].is_number_integer(); }));
  // Meanwhile another dispatcher took the term; the first has not heard.
  standby_store_ = std::make_unique<StandbyStore>(data_);
  standby_store_->Grant(R"({"id":"new:2","address":"http://10.0.0.6:7450"})");
  standby_ = Make(*standby_store_, 60'000'000);
  ASSERT_TRUE(standby_->Start().ok());
  EXPECT_TRUE(leader_->ready());
  // The member answers again: the old leader would cancel the copy of "q"
  // there; its write under the lost term is refused first, so it steps down.
  StartMemberHttp(port);
  ASSERT_TRUE(WaitFor([&] { return leader_->stepped_down(); }));
  ASSERT_TRUE(WaitFor([&] { return AllAtMember(*standby_, {big, q}); }));
  EXPECT_EQ(member_.State(q_at_member), "pending");  // not cancelled: the new leader follows it there
  EXPECT_EQ(standby_->GetJob(q).body["member_job"], q_at_member);
  EXPECT_EQ(leader_->Federation().body["counters"]["duplicates_cancelled"], 0);
}

TEST_F(FedStandbyTest, InterruptEndsTheWait) {
  standby_store_ = std::make_unique<StandbyStore>(data_);
  standby_ = Make(*standby_store_);
  auto started = std::async(std::launch::async, [&] { return standby_->Start(); });
  ASSERT_TRUE(WaitFor([&] { return standby_->role() == Dispatcher::Role::kAcquiring; }));
  EXPECT_EQ(standby_->NotReady().body["error"],
            "standby dispatcher: not the leader, and no leader is known yet; retry");
  standby_store_->Interrupt();
  EXPECT_EQ(started.get().code(), StatusCode::kUnavailable);
  EXPECT_FALSE(standby_->ready());
}

}  // namespace
}  // namespace berth::fedserve
