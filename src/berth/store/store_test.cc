// One suite over every Store implementation (typed tests: memory, SQLite, and
// etcd on a throwaway local member), plus the SQLite store's persistence
// across reopen.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <set>
#include <thread>

#include "berth/store/etcd_store.h"
#include "berth/store/etcd_test_server.h"
#include "berth/store/memory_store.h"
#include "berth/store/sqlite_store.h"
#include "berth/store/store_test_util.h"

namespace berth::store {
namespace {

std::string TempDbPath(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("berth_store_test_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  return (dir / "berth.db").string();
}

Record Rec(RecordKind kind, int64_t job, std::string body) {
  Record r;
  r.kind = kind;
  r.job = job;
  r.time = 1000 + job;
  r.key = "k" + std::to_string(job);
  r.body = std::move(body);
  return r;
}

// Each factory says why it cannot run here ("" when it can).
struct MemoryFactory {
  std::shared_ptr<MemoryStore::Data> data = std::make_shared<MemoryStore::Data>();
  std::string Unavailable() { return ""; }
  std::unique_ptr<Store> Open() { return std::make_unique<MemoryStore>(data); }
};
struct SqliteFactory {
  std::string path = TempDbPath(::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::string Unavailable() { return ""; }
  std::unique_ptr<Store> Open() {
    auto s = SqliteStore::Open(path, {});
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return std::move(s).value();
  }
};
// One etcd member per test process (ctest runs each test in its own).
StatusOr<std::unique_ptr<EtcdTestServer>>& SharedEtcd() {
  static StatusOr<std::unique_ptr<EtcdTestServer>> etcd = EtcdTestServer::Start();
  return etcd;
}
struct EtcdFactory {
  // Each test writes under its own prefix.
  std::string prefix = std::string("/test/") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::string Unavailable() { return SharedEtcd().ok() ? "" : SharedEtcd().status().message(); }
  std::unique_ptr<Store> Open() {
    EtcdStoreOptions o;
    o.prefix = prefix;
    auto s = EtcdStore::Open((*SharedEtcd())->endpoint(), {}, o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return std::move(s).value();
  }
};

template <typename F>
class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = factory.Unavailable();
    if (why.empty()) return;
    if (EtcdSkipAllowed()) GTEST_SKIP() << why;
    FAIL() << why;
  }
  F factory;
};
using Factories = ::testing::Types<MemoryFactory, SqliteFactory, EtcdFactory>;
TYPED_TEST_SUITE(StoreTest, Factories);

TYPED_TEST(StoreTest, AppendThenLoadInOrder) {
  auto s = this->factory.Open();
  Fence f = s->Acquire().value();
  auto [st, rev] = AppendSync(*s, f, {Rec(RecordKind::kJobAccepted, 0, "a"), Rec(RecordKind::kJobStarted, 0, "b")});
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(rev, 2);
  ASSERT_TRUE(AppendSync(*s, f, {Rec(RecordKind::kJobFinished, 0, std::string("c\0d", 3))}).first.ok());
  Loaded l = s->Load().value();
  ASSERT_EQ(l.records.size(), 3u);
  EXPECT_EQ(l.revision, 3);
  EXPECT_EQ(l.records[0].kind, RecordKind::kJobAccepted);
  EXPECT_EQ(l.records[0].key, "k0");
  EXPECT_EQ(l.records[0].time, 1000);
  EXPECT_EQ(l.records[1].body, "b");
  EXPECT_EQ(l.records[2].body, std::string("c\0d", 3));  // bodies are bytes
  EXPECT_EQ(l.records[2].term, f.term);
  for (size_t i = 1; i < l.records.size(); ++i) EXPECT_LT(l.records[i - 1].revision, l.records[i].revision);
}

// Every record kind (1..9, kWorkflowAccepted the newest) is stored and loaded
// back as itself; 0 and 10 are not kinds.
TYPED_TEST(StoreTest, EveryRecordKindRoundTrips) {
  EXPECT_FALSE(IsValidRecordKind(0));
  EXPECT_FALSE(IsValidRecordKind(12));
  auto s = this->factory.Open();
  Fence f = s->Acquire().value();
  std::vector<Record> batch;
  for (int k = 1; k <= 11; ++k) {
    ASSERT_TRUE(IsValidRecordKind(k)) << k;
    batch.push_back(Rec(static_cast<RecordKind>(k), k, "body" + std::to_string(k)));
  }
  ASSERT_TRUE(AppendSync(*s, f, std::move(batch)).first.ok());
  Loaded l = s->Load().value();
  ASSERT_EQ(l.records.size(), 11u);
  for (int k = 1; k <= 11; ++k) {
    EXPECT_EQ(static_cast<int>(l.records[k - 1].kind), k);
    EXPECT_EQ(l.records[k - 1].body, "body" + std::to_string(k));
  }
  EXPECT_STREQ(RecordKindName(RecordKind::kWorkflowAccepted), "workflow_accepted");
  EXPECT_STREQ(RecordKindName(RecordKind::kTaskRepaired), "task_repaired");
  EXPECT_STREQ(RecordKindName(RecordKind::kNodeFailed), "node_failed");
}

TYPED_TEST(StoreTest, NewerTermFencesOutTheOldWriter) {
  auto s = this->factory.Open();
  Fence old_term = s->Acquire().value();
  ASSERT_TRUE(AppendSync(*s, old_term, {Rec(RecordKind::kJobAccepted, 1, "x")}).first.ok());
  Fence new_term = s->Acquire().value();
  EXPECT_GT(new_term.term, old_term.term);
  auto [st, rev] = AppendSync(*s, old_term, {Rec(RecordKind::kJobAccepted, 2, "y")});
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_TRUE(AppendSync(*s, new_term, {Rec(RecordKind::kJobAccepted, 3, "z")}).first.ok());
  Loaded l = s->Load().value();
  ASSERT_EQ(l.records.size(), 2u);  // the fenced batch left nothing
  EXPECT_EQ(l.records[0].job, 1);
  EXPECT_EQ(l.records[1].job, 3);
}

TYPED_TEST(StoreTest, ConcurrentAppendsAreAllDurableOnce) {
  auto s = this->factory.Open();
  Fence f = s->Acquire().value();
  constexpr int kThreads = 4, kPerThread = 50;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i)
        if (AppendSync(*s, f, {Rec(RecordKind::kJobAccepted, t * 1000 + i, "j")}).first.ok()) ++ok;
    });
  }
  for (auto& th : threads) th.join();
  s->Flush();
  EXPECT_EQ(ok.load(), kThreads * kPerThread);
  Loaded l = s->Load().value();
  ASSERT_EQ(l.records.size(), static_cast<size_t>(kThreads * kPerThread));
  std::set<int64_t> jobs;
  for (const auto& r : l.records) jobs.insert(r.job);
  EXPECT_EQ(jobs.size(), l.records.size());
}

TYPED_TEST(StoreTest, ReopenKeepsRecordsAndTerms) {
  Fence first;
  {
    auto s = this->factory.Open();
    first = s->Acquire().value();
    ASSERT_TRUE(AppendSync(*s, first, {Rec(RecordKind::kJobAccepted, 7, "seven")}).first.ok());
  }
  auto s = this->factory.Open();
  Loaded l = s->Load().value();
  ASSERT_EQ(l.records.size(), 1u);
  EXPECT_EQ(l.records[0].body, "seven");
  EXPECT_GT(s->Acquire().value().term, first.term);
}

TEST(SqliteStoreTest, GroupCommitReportsBatches) {
  std::atomic<int64_t> records{0}, commits{0};
  StoreOptions o;
  o.on_commit = [&](const CommitInfo& c) {
    records += c.records;
    ++commits;
  };
  auto s = SqliteStore::Open(TempDbPath("group"), o).value();
  Fence f = s->Acquire().value();
  std::atomic<int> done{0};
  for (int i = 0; i < 200; ++i)
    s->Append(f, {Rec(RecordKind::kJobAccepted, i, "b")}, [&](const Status& st, int64_t) { done += st.ok(); });
  s->Flush();
  EXPECT_EQ(done.load(), 200);
  EXPECT_EQ(records.load(), 200);
  EXPECT_LE(commits.load(), 200);
}

TEST(SqliteStoreTest, SecondProcessTermFencesTheFirst) {
  // Two writers on one file despite the lock (e.g. its lock file removed):
  // the term still fences the older one, which is told once.
  const std::string path = TempDbPath("two_writers");
  StoreOptions oa;
  oa.exclusive = false;
  std::atomic<int> lost{0};
  oa.on_lost = [&](const Status& why) {
    EXPECT_EQ(why.code(), StatusCode::kFailedPrecondition);
    ++lost;
  };
  auto a = SqliteStore::Open(path, oa).value();
  Fence fa = a->Acquire().value();
  StoreOptions ob;
  ob.exclusive = false;
  auto b = SqliteStore::Open(path, ob).value();  // e.g. a restarted daemon while the old one lingers
  Fence fb = b->Acquire().value();
  EXPECT_EQ(AppendSync(*a, fa, {Rec(RecordKind::kJobAccepted, 1, "a")}).first.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(AppendSync(*a, fa, {Rec(RecordKind::kJobAccepted, 3, "a")}).first.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(AppendSync(*b, fb, {Rec(RecordKind::kJobAccepted, 2, "b")}).first.ok());
  EXPECT_EQ(lost.load(), 1);
}

TEST(SqliteStoreTest, SecondOpenOfOneFileIsRefusedUntilTheFirstCloses) {
  const std::string path = TempDbPath("locked");
  auto a = SqliteStore::Open(path, {});
  ASSERT_TRUE(a.ok()) << a.status().message();
  auto b = SqliteStore::Open(path, {});
  ASSERT_EQ(b.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(b.status().message().find(path + ".lock"), std::string::npos) << b.status().message();
  EXPECT_NE(b.status().message().find("pid " + std::to_string(::getpid())), std::string::npos)
      << b.status().message();
  a->reset();  // the first closes: the lock goes with it
  EXPECT_TRUE(SqliteStore::Open(path, {}).ok());
}

TEST(OpenStoreTest, Urls) {
  EXPECT_TRUE(OpenStore("memory:", {}).ok());
  EXPECT_EQ(OpenStore("etcd:http://127.0.0.1:1", {}).status().code(), StatusCode::kUnavailable);  // nobody there
  EXPECT_EQ(OpenStore("etcd:127.0.0.1:2379", {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenStore("postgres://x", {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(OpenStore("sqlite:" + TempDbPath("url"), {}).ok());
}

TEST(MemoryStoreTest, FailedWritesReachTheCallback) {
  auto data = std::make_shared<MemoryStore::Data>();
  MemoryStore s(data);
  Fence f = s.Acquire().value();
  data->fail_writes = true;
  EXPECT_EQ(AppendSync(s, f, {Rec(RecordKind::kJobAccepted, 1, "a")}).first.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(s.Load().value().records.empty());
}

}  // namespace
}  // namespace berth::store
