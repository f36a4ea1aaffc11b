// The etcd store beyond the common suite: encoding, endpoints, two replicas
// on one prefix (election, takeover, fencing, lost leases), large batches.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "berth/store/etcd_proxy_test_util.h"
#include "berth/store/etcd_store.h"
#include "berth/store/etcd_test_server.h"
#include "berth/store/store_test_util.h"

namespace berth::store {
namespace {

using std::chrono::milliseconds;

Record Rec(int64_t job, std::string body) {
  Record r;
  r.kind = RecordKind::kJobAccepted;
  r.job = job;
  r.time = 5000 + job;
  r.key = "key-" + std::to_string(job);
  r.body = std::move(body);
  return r;
}

TEST(EtcdEncodingTest, RecordsRoundTrip) {
  Record r = Rec(42, std::string("a\nb\0c", 5));
  r.kind = RecordKind::kNodeState;
  r.key = "node 7\n";  // spaces and newlines in keys are fine: the header gives the length
  r.term = 9;
  auto d = DecodeEtcdRecord(EncodeEtcdRecord(r));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->kind, RecordKind::kNodeState);
  EXPECT_EQ(d->job, 42);
  EXPECT_EQ(d->time, 5042);
  EXPECT_EQ(d->term, 9);
  EXPECT_EQ(d->key, "node 7\n");
  EXPECT_EQ(d->body, std::string("a\nb\0c", 5));
  EXPECT_FALSE(DecodeEtcdRecord("1 2 3 4\nxyz").ok());     // a field missing
  EXPECT_TRUE(DecodeEtcdRecord("11 2 3 4 0\n").ok());      // kNodeFailed, the newest kind
  EXPECT_FALSE(DecodeEtcdRecord("12 2 3 4 0\n").ok());     // unknown kind
  EXPECT_FALSE(DecodeEtcdRecord("1 2 3 4 10\nabc").ok());  // key longer than the record
  EXPECT_FALSE(DecodeEtcdRecord("no header").ok());
}

TEST(EtcdEncodingTest, Base64AndPrefixes) {
  for (std::string s : {std::string(), std::string("f"), std::string("fo"), std::string("foo"), std::string("foob"),
                        std::string("\xff\x00\x80 binary", 10)})
    EXPECT_EQ(Base64Decode(Base64Encode(s)).value(), s);
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_FALSE(Base64Decode("Zm9v!").ok());
  EXPECT_EQ(PrefixEnd("/berth/log/"), "/berth/log0");
  EXPECT_EQ(PrefixEnd(std::string("a\xff", 2)), "b");
}

TEST(EtcdEncodingTest, Endpoints) {
  auto e = ParseEtcdEndpoints("http://127.0.0.1:2379,http://10.0.0.2:2379/");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(*e, (std::vector<std::string>{"http://127.0.0.1:2379", "http://10.0.0.2:2379"}));
  EXPECT_FALSE(ParseEtcdEndpoints("").ok());
  EXPECT_FALSE(ParseEtcdEndpoints("127.0.0.1:2379").ok());
  EXPECT_FALSE(ParseEtcdEndpoints("https://h:1").ok());
  EXPECT_FALSE(ParseEtcdEndpoints("http://h:1,").ok());
  EXPECT_FALSE(ParseEtcdEndpoints("http://h:1/v3").ok());
}

class EtcdStoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto e = EtcdTestServer::Start();
    if (e.ok()) etcd_ = std::move(e).value();
    else why_ = e.status().message();
  }
  static void TearDownTestSuite() { etcd_.reset(); }
  void SetUp() override {
    if (etcd_) return;
    if (EtcdSkipAllowed()) GTEST_SKIP() << why_;
    FAIL() << why_;
  }
  // A store on this test's prefix, announcing itself as `name`.
  std::unique_ptr<EtcdStore> Open(const std::string& name, StoreOptions so = {}, const std::string& endpoints = "",
                                  int64_t load_page = 1000) {
    EtcdStoreOptions o;
    o.load_page = load_page;
    o.prefix = std::string("/t/") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    o.candidate = name;
    o.poll_interval = 50'000;
    auto s = EtcdStore::Open(endpoints.empty() ? etcd_->endpoint() : endpoints, std::move(so), o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }
  static std::unique_ptr<EtcdTestServer> etcd_;
  static std::string why_;
};
std::unique_ptr<EtcdTestServer> EtcdStoreTest::etcd_;
std::string EtcdStoreTest::why_;

TEST_F(EtcdStoreTest, StandbyWaitsThenTakesOverWithANewerTerm) {
  auto a = Open("replica-a");
  auto b = Open("replica-b");
  Fence fa = a->Acquire().value();
  ASSERT_TRUE(AppendSync(*a, fa, {Rec(1, "one")}).first.ok());
  auto b_term = std::async(std::launch::async, [&] { return b->Acquire(); });
  EXPECT_EQ(b_term.wait_for(milliseconds(400)), std::future_status::timeout);  // a leads
  EXPECT_EQ(b->Leader(), "replica-a");
  a.reset();  // resigns: the key goes with a's lease
  ASSERT_EQ(b_term.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  auto fb = b_term.get();
  ASSERT_TRUE(fb.ok()) << fb.status().ToString();
  EXPECT_GT(fb->term, fa.term);
  EXPECT_EQ(b->Leader(), "replica-b");
  auto [st, rev] = AppendSync(*b, *fb, {Rec(2, "two")});
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(rev, 2);  // numbering goes on after a's record
  Loaded l = b->Load().value();
  ASSERT_EQ(l.records.size(), 2u);
  EXPECT_EQ(l.records[0].term, fa.term);
  EXPECT_EQ(l.records[1].term, fb->term);
}

TEST_F(EtcdStoreTest, LostLeaseFencesTheOldLeaderAndReportsIt) {
  std::atomic<int> lost{0};
  std::promise<Status> lost_why;
  StoreOptions so;
  so.on_lost = [&](const Status& s) {
    if (lost++ == 0) lost_why.set_value(s);
  };
  auto a = Open("replica-a", so);
  Fence fa = a->Acquire().value();
  ASSERT_TRUE(AppendSync(*a, fa, {Rec(1, "one")}).first.ok());
  // The lease ends behind a's back (as when etcd expires it while a is stopped).
  EtcdClient admin({etcd_->endpoint()});
  auto key = admin.Range(std::string("/t/") + ::testing::UnitTest::GetInstance()->current_test_info()->name() +
                             "/leader", {});
  ASSERT_TRUE(key.ok() && key->kvs.size() == 1);
  ASSERT_TRUE(admin.Revoke(key->kvs[0].lease).ok());
  { Status again = admin.Revoke(key->kvs[0].lease); EXPECT_EQ(again.code(), StatusCode::kNotFound) << again.ToString(); }
  EXPECT_EQ(admin.KeepAlive(key->kvs[0].lease).value(), 0);                  // a lease that is gone
  // a's keepalive notices within a renewal period (TTL/3).
  auto fut = lost_why.get_future();
  ASSERT_EQ(fut.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(fut.get().code(), StatusCode::kFailedPrecondition);
  auto b = Open("replica-b");
  Fence fb = b->Acquire().value();
  EXPECT_GT(fb.term, fa.term);
  // a's write is refused by the fence.
  auto [st, rev] = AppendSync(*a, fa, {Rec(2, "from the deposed leader")});
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_EQ(lost.load(), 1);
  ASSERT_TRUE(AppendSync(*b, fb, {Rec(3, "three")}).first.ok());
  Loaded l = b->Load().value();
  ASSERT_EQ(l.records.size(), 2u);
  EXPECT_EQ(l.records[0].job, 1);
  EXPECT_EQ(l.records[1].job, 3);
}

// Between the store and etcd: forwards every request, but answers chosen txns
// with "unavailable" after forwarding them (their answer is lost) or without
// forwarding them (etcd out of reach).
class FlakyProxy {
 public:
  explicit FlakyProxy(const std::string& etcd) : upstream_(etcd) {
    server_.Post(R"(/v3/.*)", [this](const httplib::Request& req, httplib::Response& res) {
      // A log write: a txn that puts keys on no lease (the election's put is on one).
      const bool log_write = req.path == "/v3/kv/txn" && req.body.find("request_put") != std::string::npos &&
                             req.body.find("\"lease\"") == std::string::npos;
      if (log_write && drop_before_ > 0) {
        --drop_before_;
        res.status = 503;
        res.set_content(R"({"code":14,"message":"injected: etcd out of reach"})", "application/json");
        return;
      }
      auto up = upstream_.Post(req.path, req.body, "application/json");
      if (!up) {
        res.status = 502;
        return;
      }
      if (log_write && drop_after_ > 0) {
        --drop_after_;
        res.status = 503;
        res.set_content(R"({"code":14,"message":"injected: answer lost"})", "application/json");
        return;
      }
      res.status = up->status;
      res.set_content(up->body, "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FlakyProxy() {
    server_.stop();
    thread_.join();
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::atomic<int> drop_after_{0}, drop_before_{0};

 private:
  httplib::Client upstream_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

TEST_F(EtcdStoreTest, AWriteWhoseAnswerWasLostIsAppliedOnce) {
  FlakyProxy proxy(etcd_->endpoint());
  auto s = Open("replica-a", {}, proxy.endpoint());
  Fence f = s->Acquire().value();
  ASSERT_TRUE(AppendSync(*s, f, {Rec(1, "one")}).first.ok());
  // The first attempt applies but its answer is lost; so is the answer to the
  // retry (refused: its first key exists). The third learns the outcome.
  proxy.drop_after_ = 2;
  auto [st, rev] = AppendSync(*s, f, {Rec(2, "two"), Rec(3, "three")});
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(rev, 3);
  EXPECT_EQ(proxy.drop_after_.load(), 0);
  ASSERT_TRUE(AppendSync(*s, f, {Rec(4, "four")}).first.ok());
  Loaded l = s->Load().value();
  ASSERT_EQ(l.records.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(l.records[i].job, static_cast<int64_t>(i + 1));
}

// The same, when the lost answer comes from one member and the client moves
// on to the next within the same attempt: the next sees the key written with
// this write's value, which is this write's outcome, not a conflict.
TEST_F(EtcdStoreTest, AWriteWhoseAnswerWasLostAtOneMemberIsDoneAtTheNext) {
  FlakyProxy proxy(etcd_->endpoint());
  auto s = Open("replica-a", {}, proxy.endpoint() + "," + etcd_->endpoint());
  Fence f = s->Acquire().value();
  ASSERT_TRUE(AppendSync(*s, f, {Rec(1, "one")}).first.ok());
  proxy.drop_after_ = 1;
  auto [st, rev] = AppendSync(*s, f, {Rec(2, "two")});
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(rev, 2);
  EXPECT_EQ(proxy.drop_after_.load(), 0);
  ASSERT_TRUE(AppendSync(*s, f, {Rec(3, "three")}).first.ok());
  Loaded l = s->Load().value();
  ASSERT_EQ(l.records.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(l.records[i].job, static_cast<int64_t>(i + 1));
}

TEST_F(EtcdStoreTest, AWriteWithNoAnswerEndsTheTerm) {
  FlakyProxy proxy(etcd_->endpoint());
  std::atomic<int> lost{0};
  StoreOptions so;
  so.on_lost = [&](const Status&) { ++lost; };
  EtcdStoreOptions o;
  o.prefix = "/t/no_answer";
  o.write_deadline = 300'000;
  auto s = EtcdStore::Open(proxy.endpoint(), so, o).value();
  Fence f = s->Acquire().value();
  proxy.drop_before_ = 1000;
  auto [st, rev] = AppendSync(*s, f, {Rec(1, "one")});
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_EQ(lost.load(), 1);
  proxy.drop_before_ = 0;  // etcd is back, but this process no longer writes under the term
  EXPECT_EQ(AppendSync(*s, f, {Rec(2, "two")}).first.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(s->Load().value().records.empty());
}

TEST_F(EtcdStoreTest, InterruptEndsAWaitingCampaign) {
  auto a = Open("replica-a");
  auto b = Open("replica-b");
  ASSERT_TRUE(a->Acquire().ok());
  auto b_term = std::async(std::launch::async, [&] { return b->Acquire(); });
  std::this_thread::sleep_for(milliseconds(100));
  b->Interrupt();
  ASSERT_EQ(b_term.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(b_term.get().status().code(), StatusCode::kUnavailable);
}

TEST_F(EtcdStoreTest, BatchesBeyondEtcdLimitsAreSplitInOrder) {
  auto s = Open("replica-a", {}, "", /*load_page=*/64);
  Fence f = s->Acquire().value();
  std::vector<Record> many;
  for (int i = 0; i < 300; ++i) {  // > 128 ops
    std::string body = "r";
    body += std::to_string(i);
    many.push_back(Rec(i, body));
  }
  auto [st, rev] = AppendSync(*s, f, std::move(many));
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(rev, 300);
  std::vector<Record> big;
  for (int i = 0; i < 3; ++i) big.push_back(Rec(1000 + i, std::string(600'000, static_cast<char>('a' + i))));  // > 1.5 MiB
  auto [st2, rev2] = AppendSync(*s, f, std::move(big));
  ASSERT_TRUE(st2.ok()) << st2.ToString();
  EXPECT_EQ(rev2, 303);
  Loaded l = s->Load().value();  // in pages of 64
  ASSERT_EQ(l.records.size(), 303u);
  for (size_t i = 0; i < l.records.size(); ++i) EXPECT_EQ(l.records[i].revision, static_cast<int64_t>(i + 1));
  EXPECT_EQ(l.records[150].body, "r150");
  EXPECT_EQ(l.records[302].body, std::string(600'000, 'c'));
}

// A member that takes requests but never answers log writes, like a member
// that still follows a dead etcd leader (it holds the write until etcd's own
// request timeout); everything else it forwards.
class HoldingMember {
 public:
  explicit HoldingMember(const std::string& etcd)
      : proxy_(etcd, [this](const httplib::Request& req, httplib::Response& res) {
          const bool log_write = req.path == "/v3/kv/txn" && req.body.find("request_put") != std::string::npos &&
                                 req.body.find("\"lease\"") == std::string::npos;
          if (!log_write) return false;
          ++held_;
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait_for(lock, std::chrono::seconds(30), [this] { return stopping_; });
          res.status = 503;
          res.set_content(R"({"code":14,"message":"injected: request timed out"})", "application/json");
          return true;
        }) {}
  ~HoldingMember() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    proxy_.Stop();
  }
  std::string endpoint() const { return proxy_.endpoint(); }
  std::atomic<int> held_{0};

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  EtcdProxy proxy_;  // last: its handlers use the members above
};

// A member that holds writes costs one attempt's timeout: the attempt moves
// on to the next member, the write lands once, and the term is kept.
TEST_F(EtcdStoreTest, AMemberThatHoldsWritesCostsOneAttemptTimeout) {
  HoldingMember holding(etcd_->endpoint());
  std::atomic<int> lost{0};
  StoreOptions so;
  so.on_lost = [&](const Status&) { ++lost; };
  EtcdStoreOptions o;
  o.prefix = "/t/holding_member";
  o.candidate = "replica-a";
  o.write_attempt_timeout = 100'000;
  o.write_attempt_timeout_max = 200'000;
  o.write_deadline = 900'000;
  auto s = EtcdStore::Open(holding.endpoint() + "," + etcd_->endpoint(), so, o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Fence f = (*s)->Acquire().value();
  for (int i = 1; i <= 3; ++i) {
    auto [st, rev] = AppendSync(**s, f, {Rec(i, "r" + std::to_string(i))});
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(rev, i);
  }
  EXPECT_GE(holding.held_.load(), 1);  // the first write went to the holding member first
  EXPECT_EQ(lost.load(), 0);
  Loaded l = (*s)->Load().value();
  ASSERT_EQ(l.records.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(l.records[i].body, "r" + std::to_string(i + 1));
}

TEST(EtcdStoreOptionsTest, AttemptTimeoutMustBePositiveAndAtMostItsMaximum) {
  EtcdStoreOptions o;
  o.write_attempt_timeout = 0;
  EXPECT_EQ(EtcdStore::Open("http://127.0.0.1:1", {}, o).status().code(), StatusCode::kInvalidArgument);
  o.write_attempt_timeout = 500'000;
  o.write_attempt_timeout_max = 400'000;
  EXPECT_EQ(EtcdStore::Open("http://127.0.0.1:1", {}, o).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(EtcdStoreTest, ASecondEndpointIsUsedWhenTheFirstIsDown) {
  const int dead = FreeLoopbackPort();
  auto s = Open("replica-a", {}, "http://127.0.0.1:" + std::to_string(dead) + "," + etcd_->endpoint());
  ASSERT_NE(s, nullptr);
  Fence f = s->Acquire().value();
  EXPECT_TRUE(AppendSync(*s, f, {Rec(1, "x")}).first.ok());
  EXPECT_EQ(s->Load().value().records.size(), 1u);
}

}  // namespace
}  // namespace berth::store
