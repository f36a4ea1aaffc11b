// The service as one replica of several: waiting for the term (a standby),
// answering 503 with the leader, leading once the term is granted, and
// stepping down. The store is a memory store whose Acquire() waits, as a
// replicated store's does while another process leads.
#include <gtest/gtest.h>

#include <condition_variable>
#include <future>

#include "berth/server/service.h"
#include "berth/server/service_test_util.h"
#include "berth/store/standby_store_test_util.h"

namespace berth::server {
namespace {

using testing::WaitFor;

using store::StandbyStore;

struct Replica {
  cluster::Cluster cluster = cluster::ParseClusterSpec("4x8:H100/leaf=2").value();
  std::FILE* devnull = std::fopen("/dev/null", "w");
  Logger log{devnull};
  Metrics metrics;
  StandbyStore store;
  Service service{cluster, store, {}, log, metrics};
  ~Replica() {
    service.Stop();
    std::fclose(devnull);
  }
};

const char* kJob = R"({"name":"a","groups":[{"count":1,"gpus":8}]})";

TEST(ServiceStandbyTest, AStandbyAnswers503NamingTheLeaderThenLeads) {
  Replica r;
  r.store.SetLeader(R"({"id":"other:1","address":"http://10.0.0.5:7450"})");
  auto started = std::async(std::launch::async, [&] { return r.service.Start(); });
  ASSERT_TRUE(WaitFor([&] { return r.service.NotReady().body["role"] == "standby"; }));
  EXPECT_FALSE(r.service.ready());
  EXPECT_FALSE(r.service.started());
  ApiResult sub = r.service.SubmitJob(kJob);
  EXPECT_EQ(sub.code, 503);
  EXPECT_EQ(sub.body["leader"]["address"], "http://10.0.0.5:7450") << sub.body.dump();
  EXPECT_NE(sub.body["error"].get<std::string>().find("the leader is http://10.0.0.5:7450"), std::string::npos);
  EXPECT_EQ(r.service.CancelJob(1).code, 503);

  r.store.Grant(R"({"id":"me:2","address":"http://10.0.0.6:7450"})");  // the old leader went away
  ASSERT_TRUE(started.get().ok());
  EXPECT_TRUE(r.service.ready());
  EXPECT_TRUE(r.service.started());
  EXPECT_EQ(r.service.SubmitJob(kJob).code, 201);

  r.service.StepDown("lease expired");
  EXPECT_FALSE(r.service.ready());
  ApiResult after = r.service.SubmitJob(R"({"name":"b","groups":[{"count":1,"gpus":8}]})");
  EXPECT_EQ(after.code, 503);
  EXPECT_EQ(after.body["role"], "stepped_down") << after.body.dump();
  EXPECT_NE(r.service.MetricsText().find("berth_ready 0"), std::string::npos);
}

TEST(ServiceStandbyTest, InterruptEndsTheWait) {
  Replica r;
  auto started = std::async(std::launch::async, [&] { return r.service.Start(); });
  ASSERT_TRUE(WaitFor([&] { return r.service.NotReady().body["role"] == "standby"; }));
  EXPECT_EQ(r.service.NotReady().body["error"], "standby: not the leader, and no leader is known yet; retry");
  r.store.Interrupt();
  EXPECT_EQ(started.get().code(), StatusCode::kUnavailable);
  EXPECT_FALSE(r.service.ready());
}

}  // namespace
}  // namespace berth::server
