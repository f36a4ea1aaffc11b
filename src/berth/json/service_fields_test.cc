// The service keys of a job document: defaults, errors naming the key, and
// the writer giving back what was read.
#include "berth/json/service_fields.h"

#include <gtest/gtest.h>

namespace berth::json {
namespace {

using nlohmann::json;

StatusOr<job::JobSpec> Read(const std::string& text) {
  json doc = json::parse(text);
  ServiceFields f;
  job::JobSpec j;
  j.name = "s";
  j.groups = {job::TaskGroup{}};
  for (const auto& [k, v] : doc.items()) {
    if (!ServiceFields::Handles(k)) return InvalidArgument("not a service key: " + k);
    BERTH_RETURN_IF_ERROR(f.Parse(k, v));
  }
  BERTH_RETURN_IF_ERROR(f.Finish(j));
  return j;
}

TEST(ServiceFields, DefaultsFollowReplicas) {
  auto j = Read(R"({"kind":"service","replicas":3})");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(j->service->replicas, 3);
  EXPECT_EQ(j->service->min_replicas, 3);
  EXPECT_EQ(j->service->max_replicas, 3);
  j = Read(R"({"kind":"service","min_replicas":0,"max_replicas":8,"target":{"requests_per_s":2.5}})");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(j->service->replicas, 1);
  EXPECT_EQ(j->service->target_milli_rps, 2500);
  EXPECT_FALSE(Read(R"({"kind":"batch"})")->service.has_value());
}

TEST(ServiceFields, ErrorsNameTheKey) {
  auto msg = [](const std::string& t) { return Read(t).status().message(); };
  EXPECT_NE(msg(R"({"replicas":2})").find("replicas: only for"), std::string::npos);
  EXPECT_NE(msg(R"({"kind":"svc"})").find("kind"), std::string::npos);
  EXPECT_NE(msg(R"({"kind":"service","latency_class":"gold"})").find("latency_class"), std::string::npos);
  EXPECT_NE(msg(R"({"kind":"service","target":{"rps":1}})").find("target.rps"), std::string::npos);
  EXPECT_NE(msg(R"({"kind":"service","target":{"utilization":0.7}})").find("capacity_per_replica"), std::string::npos);
  EXPECT_NE(msg(R"({"kind":"service","spread":{"per_node":1}})").find("spread.per_node"), std::string::npos);
  EXPECT_NE(msg(R"({"kind":"service","replicas":5,"max_replicas":2})").find("replicas 5"), std::string::npos);
  EXPECT_NE(msg(R"({"kind":"service","replicas":"2"})").find("replicas: expected an integer"), std::string::npos);
}

TEST(ServiceFields, WriterRoundTrips) {
  auto j = Read(R"({"kind":"service","replicas":2,"min_replicas":1,"max_replicas":6,"latency_class":"critical",)"
                R"("target":{"utilization":0.7,"capacity_per_replica":4},"spread":{"max_per_node":1,"max_per_leaf":3}})");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  json out = json::object();
  ServiceToJson(*j, out);
  auto back = Read(out.dump());
  ASSERT_TRUE(back.ok()) << back.status().ToString() << " " << out.dump();
  const job::ServiceSpec &a = *j->service, &b = *back->service;
  EXPECT_EQ(a.replicas, b.replicas);
  EXPECT_EQ(a.min_replicas, b.min_replicas);
  EXPECT_EQ(a.max_replicas, b.max_replicas);
  EXPECT_EQ(a.latency_class, b.latency_class);
  EXPECT_EQ(a.target_utilization_pct, b.target_utilization_pct);
  EXPECT_EQ(a.capacity_milli_rps, b.capacity_milli_rps);
  EXPECT_EQ(a.max_per_node, b.max_per_node);
  EXPECT_EQ(a.max_per_leaf, b.max_per_leaf);
}

}  // namespace
}  // namespace berth::json
