// GET /v1/jobs/{id}/launch through the service: 404 unknown, 409 not placed,
// the spec of a running gang in rank order, registered node addresses.
#include <gtest/gtest.h>

#include "berth/server/service_test_util.h"

namespace berth::server {
namespace {

using testing::ServiceHarness;
using testing::WaitFor;

TEST(ServiceLaunchTest, RunningGangGetsItsLaunchSpec) {
  ServiceHarness h;
  ASSERT_TRUE(h.Start().ok());
  EXPECT_EQ(h.service().GetLaunch(77).code, 404);
  const int64_t a = h.Submit(
      R"({"name":"ddp","launcher":"torch","command":["python3","train.py"],"env":{"NCCL_DEBUG":"INFO"},)"
      R"("groups":[{"count":2,"gpus":8}]})");
  ASSERT_TRUE(WaitFor([&] { return h.State(a) == "running"; }));
  // A second gang as large as the rest of the cluster and more: it waits.
  const int64_t b = h.Submit(R"({"name":"big","groups":[{"count":4,"gpus":8}]})");
  ApiResult pending = h.service().GetLaunch(b);
  EXPECT_EQ(pending.code, 409) << pending.body.dump();
  EXPECT_NE(pending.body["error"].get<std::string>().find("pending"), std::string::npos);

  ApiResult r = h.service().GetLaunch(a);
  ASSERT_EQ(r.code, 200) << r.body.dump();
  const auto& j = r.body;
  EXPECT_EQ(j["launcher"], "torch");
  EXPECT_EQ(j["world_size"], 2);
  EXPECT_EQ(j["master_port"], 29500 + a);
  ASSERT_EQ(j["tasks"].size(), 2u);
  EXPECT_EQ(j["tasks"][0]["env"]["RANK"], "0");
  EXPECT_EQ(j["tasks"][1]["env"]["RANK"], "1");
  EXPECT_EQ(j["tasks"][1]["env"]["NODE_RANK"], "1");
  EXPECT_EQ(j["tasks"][1]["env"]["NCCL_DEBUG"], "INFO");
  EXPECT_EQ(j["tasks"][0]["env"]["MASTER_ADDR"], j["tasks"][0]["node"]);
  EXPECT_EQ(j["command"], nlohmann::json::array({"python3", "train.py"}));
  EXPECT_EQ(j["nodes"].size(), 2u);
  EXPECT_NE(j["mpi_hostfile"].get<std::string>().find(" slots=1\n"), std::string::npos);

  // An agent registered the rank-0 node's address: the master is that address.
  const std::string n0 = j["tasks"][0]["node"];
  h.service().SetNodeAddress(n0, "192.0.2.10");
  ApiResult again = h.service().GetLaunch(a);
  ASSERT_EQ(again.code, 200);
  EXPECT_EQ(again.body["master_addr"], "192.0.2.10");
  EXPECT_EQ(again.body["tasks"][1]["env"]["MASTER_ADDR"], "192.0.2.10");

  ASSERT_EQ(h.service().CancelJob(a).code, 200);
  EXPECT_EQ(h.service().GetLaunch(a).code, 409);
}

TEST(ServiceLaunchTest, PortRangeIsValidated) {
  ServiceOptions o;
  o.launch.port_min = 30000;
  o.launch.port_max = 20000;
  EXPECT_NE(o.Validate().message().find("--launch-ports"), std::string::npos);
}

}  // namespace
}  // namespace berth::server
