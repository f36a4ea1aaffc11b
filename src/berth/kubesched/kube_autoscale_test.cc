// The annotations that opt a Deployment into Berth's autoscaler, and the
// load report's body (kube_autoscale.h).
#include "berth/kubesched/kube_autoscale.h"

#include <gtest/gtest.h>

#include "berth/server/job_json.h"
#include "berth/workload/autoscaler.h"

namespace berth::kube {
namespace {

using nlohmann::json;

json Deployment(json annotations, json replicas = 2) {
  json d = {{"apiVersion", "apps/v1"},
            {"kind", "Deployment"},
            {"metadata", {{"namespace", "ml"}, {"name", "web"}, {"annotations", std::move(annotations)}}},
            {"spec", json::object()}};
  if (!replicas.is_null()) d["spec"]["replicas"] = replicas;
  return d;
}

TEST(DeploymentScalingTest, WithoutTheAnnotationNothingIsScaled) {
  auto s = ParseDeploymentScaling(Deployment(json::object()));
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_FALSE(s->enabled);
  EXPECT_EQ(s->replicas, 2);
  // "false" is off too, and other keys are not read then.
  s = ParseDeploymentScaling(Deployment({{"berth.dev/autoscale", "false"}, {"berth.dev/max-replicas", "many"}}));
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_FALSE(s->enabled);
}

TEST(DeploymentScalingTest, ReadsTheFloorCeilingTargetAndLoad) {
  auto s = ParseDeploymentScaling(Deployment({{"berth.dev/autoscale", "true"},
                                              {"berth.dev/min-replicas", "1"},
                                              {"berth.dev/max-replicas", "8"},
                                              {"berth.dev/target-requests-per-s", "12.5"},
                                              {"berth.dev/load-requests-per-s", "40"}},
                                             3));
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(s->enabled);
  EXPECT_EQ(s->replicas, 3);
  EXPECT_EQ(s->service.min_replicas, 1);
  EXPECT_EQ(s->service.max_replicas, 8);
  EXPECT_EQ(s->service.replicas, 3);
  EXPECT_EQ(s->service.target_milli_rps, 12'500);
  ASSERT_TRUE(s->load_milli_rps.has_value());
  EXPECT_EQ(*s->load_milli_rps, 40'000);
}

TEST(DeploymentScalingTest, UtilizationTargetNeedsTheCapacity) {
  auto s = ParseDeploymentScaling(Deployment({{"berth.dev/autoscale", "true"},
                                              {"berth.dev/max-replicas", "4"},
                                              {"berth.dev/target-utilization", "0.7"},
                                              {"berth.dev/capacity-per-replica", "30"}},
                                             nullptr));
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->replicas, 1);  // spec.replicas absent: the API server's default
  EXPECT_EQ(s->service.min_replicas, 1);
  EXPECT_EQ(s->service.target_utilization_pct, 70);
  EXPECT_EQ(s->service.capacity_milli_rps, 30'000);
  EXPECT_EQ(s->service.per_replica_target(), 21'000);
  s = ParseDeploymentScaling(Deployment({{"berth.dev/autoscale", "true"},
                                         {"berth.dev/max-replicas", "4"},
                                         {"berth.dev/target-utilization", "0.7"}}));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("berth.dev/capacity-per-replica"), std::string::npos) << s.status().message();
}

TEST(DeploymentScalingTest, ErrorsNameTheDeploymentAndTheAnnotation) {
  const struct {
    json annotations;
    const char* words;
  } cases[] = {
      {{{"berth.dev/autoscale", "yes"}}, "annotation berth.dev/autoscale: expected \"true\" or \"false\", found 'yes'"},
      {{{"berth.dev/autoscale", "true"}, {"berth.dev/target-requests-per-s", "10"}},
       "annotation berth.dev/max-replicas is required"},
      {{{"berth.dev/autoscale", "true"}, {"berth.dev/max-replicas", "lots"}, {"berth.dev/target-requests-per-s", "1"}},
       "annotation berth.dev/max-replicas: expected an integer in 1..100000, found 'lots'"},
      {{{"berth.dev/autoscale", "true"}, {"berth.dev/min-replicas", "5"}, {"berth.dev/max-replicas", "2"},
        {"berth.dev/target-requests-per-s", "1"}},
       "berth.dev/min-replicas 5 is above berth.dev/max-replicas 2"},
      {{{"berth.dev/autoscale", "true"}, {"berth.dev/max-replicas", "2"}}, "needs berth.dev/target-requests-per-s"},
      {{{"berth.dev/autoscale", "true"}, {"berth.dev/max-replicas", "2"}, {"berth.dev/target-requests-per-s", "1"},
        {"berth.dev/target-utilization", "0.5"}, {"berth.dev/capacity-per-replica", "3"}},
       "not both"},
      {{{"berth.dev/autoscale", "true"}, {"berth.dev/max-replicas", "2"}, {"berth.dev/target-requests-per-s", "-3"}},
       "annotation berth.dev/target-requests-per-s: expected a number in 0..1e9 (requests/s), found '-3'"},
      {{{"berth.dev/autoscale", "true"}, {"berth.dev/max-replicas", "2"}, {"berth.dev/target-requests-per-s", "4"},
        {"berth.dev/load-requests-per-s", "busy"}},
       "annotation berth.dev/load-requests-per-s"},
      {{{"berth.dev/autoscale", "true"}, {"berth.dev/max-replicas", "2"}, {"berth.dev/target-requests-per-s", "4"},
        {"berth.dev/scale-down-stabilization-s", "4000"}},
       "annotation berth.dev/scale-down-stabilization-s: expected whole seconds in 0..3600, found '4000'"},
  };
  for (const auto& c : cases) {
    auto s = ParseDeploymentScaling(Deployment(c.annotations));
    ASSERT_FALSE(s.ok()) << c.annotations.dump();
    EXPECT_NE(s.status().message().find("Deployment ml/web: "), std::string::npos) << s.status().message();
    EXPECT_NE(s.status().message().find(c.words), std::string::npos) << s.status().message();
  }
}

TEST(DeploymentScalingTest, TheAutoscalerScalesTheDeploymentsCount) {
  // The spec read from the annotations drives the core's autoscaler as a
  // service document's does: 35 requests/s at 10 per replica -> 4 (HPA's
  // rate limit allows 1 + 4), within max 6.
  auto s = ParseDeploymentScaling(Deployment({{"berth.dev/autoscale", "true"},
                                              {"berth.dev/max-replicas", "6"},
                                              {"berth.dev/target-requests-per-s", "10"}},
                                             1));
  ASSERT_TRUE(s.ok()) << s.status().message();
  workload::Autoscaler a(s->service, workload::AutoscalerOptions{});
  EXPECT_EQ(a.Evaluate(0, s->replicas), 1);  // no load report yet: the count stays
  a.Observe(1, 35'000);
  EXPECT_EQ(a.Evaluate(a.next_evaluation(), 1), 4);
}

TEST(DeploymentScalingTest, StabilizationWindowsFromAnnotations) {
  auto s = ParseDeploymentScaling(Deployment({{"berth.dev/autoscale", "true"},
                                              {"berth.dev/max-replicas", "6"},
                                              {"berth.dev/target-requests-per-s", "10"},
                                              {"berth.dev/scale-down-stabilization-s", "0"}},
                                             4));
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_FALSE(s->up_stabilization.has_value());
  ASSERT_TRUE(s->down_stabilization.has_value());
  EXPECT_EQ(*s->down_stabilization, 0);
  // With no down window the count falls at the next evaluation: 5 requests/s
  // at 10 per replica -> 1 (HPA's default rate limit allows 100 % per 15 s).
  workload::AutoscalerOptions o;
  o.down_stabilization = *s->down_stabilization;
  for (const bool windowless : {true, false}) {
    workload::Autoscaler a(s->service, windowless ? o : workload::AutoscalerOptions{});
    a.Observe(0, 40'000);
    EXPECT_EQ(a.Evaluate(0, 4), 4);
    const TimeUs next = a.next_evaluation();
    ASSERT_GT(next, 0);
    a.Observe(next, 5'000);
    // No window: 1 at once. The default 300 s window: the highest recent count.
    EXPECT_EQ(a.Evaluate(next, 4), windowless ? 1 : 4);
  }
}

TEST(LoadReportTest, ReadsRequestsPerSecond) {
  auto r = server::ParseLoadReport(R"({"requests_per_s": 45.5})");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, 45'500);
  EXPECT_FALSE(server::ParseLoadReport(R"({"requests_per_s": -1})").ok());
  EXPECT_FALSE(server::ParseLoadReport(R"({"rps": 3})").ok());
  EXPECT_FALSE(server::ParseLoadReport("not json").ok());
}

TEST(DeploymentScalePathTest, NamesTheScaleSubresource) {
  EXPECT_EQ(DeploymentScalePath("ml", "web"), "/apis/apps/v1/namespaces/ml/deployments/web/scale");
}

}  // namespace
}  // namespace berth::kube
