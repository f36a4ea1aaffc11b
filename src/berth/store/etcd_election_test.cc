// The leader election's lease renewals against a real etcd: a renewal counts
// only once a linearizable read at the same member confirms it in the same
// raft term, and a leader whose key is gone steps down.
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <mutex>
#include <chrono>
#include <string>
#include <thread>

#include "berth/store/etcd_election.h"
#include "berth/store/etcd_proxy_test_util.h"
#include "berth/store/etcd_test_server.h"

namespace berth::store {
namespace {

using std::chrono::milliseconds;

// A member that etcd has deposed but that does not know it yet (its raft loop
// stuck in a slow fsync): its lessor answers renewals from its own clock, in
// its old raft term, while the real leader never sees them. Every other
// request is forwarded to the real etcd.
class DeposedLeader {
 public:
  explicit DeposedLeader(const std::string& etcd)
      : proxy_(etcd, [this](const httplib::Request& req, httplib::Response& res) {
          if (req.path != "/v3/lease/keepalive") return false;
          ++renewals_;
          const auto id = nlohmann::json::parse(req.body, nullptr, false);
          const std::string lease = id.is_object() && id.contains("ID") ? id["ID"].get<std::string>() : "0";
          res.set_content(R"({"result":{"header":{"raft_term":"1"},"ID":")" + lease + R"(","TTL":"2"}})",
                          "application/json");
          return true;
        }) {}
  std::string endpoint() const { return proxy_.endpoint(); }
  std::atomic<int> renewals_{0};

 private:
  EtcdProxy proxy_;  // last: its handler uses renewals_
};

class EtcdElectionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto s = EtcdTestServer::Start();
    if (s.ok()) etcd_ = std::move(s).value();
    else why_ = s.status().ToString();
  }
  static void TearDownTestSuite() { etcd_.reset(); }
  void SetUp() override {
    if (etcd_) return;
    if (EtcdSkipAllowed()) GTEST_SKIP() << why_;
    FAIL() << why_;
  }
  static std::unique_ptr<EtcdTestServer> etcd_;
  static std::string why_;
};
std::unique_ptr<EtcdTestServer> EtcdElectionTest::etcd_;
std::string EtcdElectionTest::why_;

TEST_F(EtcdElectionTest, RenewalsADeposedLeaderAnswersAreNotTrusted) {
  DeposedLeader deposed(etcd_->endpoint());
  EtcdClient direct({etcd_->endpoint()});
  // The real member's term is past the deposed one's.
  ASSERT_GT(direct.Range("/t/deposed/leader", {}).value().raft_term, 1);
  std::atomic<int> lost{0};
  ElectionOptions o;
  o.key = "/t/deposed/leader";
  o.value = "replica-a";
  o.ttl_s = 2;
  o.renew_interval = 200'000;
  LeaderElection e({deposed.endpoint(), etcd_->endpoint()}, o, [&](const Status&) { ++lost; });
  const int64_t term = e.Campaign().value();
  // Well past the TTL: had the deposed member's renewals been counted, etcd
  // would have let the lease expire and deleted the key.
  std::this_thread::sleep_for(milliseconds(5000));
  EXPECT_GE(deposed.renewals_.load(), 1);
  EXPECT_EQ(lost.load(), 0);
  EXPECT_EQ(e.term(), term);
  EtcdRange held = direct.Range(o.key, {}).value();
  ASSERT_EQ(held.kvs.size(), 1u) << "the lease expired in etcd";
  EXPECT_EQ(held.kvs[0].value, "replica-a");
  EXPECT_EQ(held.kvs[0].create_revision, term);
}

TEST_F(EtcdElectionTest, ALeaderWhoseKeyIsGoneStepsDown) {
  std::atomic<int> lost{0};
  std::string why;
  std::mutex mu;
  ElectionOptions o;
  o.key = "/t/key_gone/leader";
  o.value = "replica-a";
  o.renew_interval = 100'000;
  LeaderElection e({etcd_->endpoint()}, o, [&](const Status& s) {
    std::lock_guard<std::mutex> lock(mu);
    why = s.message();
    ++lost;
  });
  ASSERT_GT(e.Campaign().value(), 0);
  EtcdClient direct({etcd_->endpoint()});
  ASSERT_TRUE(direct.Txn({}, {EtcdOp::Delete(o.key)}, {}).ok());
  for (int i = 0; i < 50 && lost.load() == 0; ++i) std::this_thread::sleep_for(milliseconds(100));
  ASSERT_EQ(lost.load(), 1);
  EXPECT_EQ(e.term(), 0);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_NE(why.find("election key"), std::string::npos) << why;
}

}  // namespace
}  // namespace berth::store
