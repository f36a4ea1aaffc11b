// Hostile extender documents: nesting, duplicate keys, integers beyond int32,
// malformed or overflowing quantities, control characters; each gets a 400
// naming the field, and the service goes on answering.
#include <gtest/gtest.h>

#include <string>

#include "berth/server/extender.h"
#include "berth/server/extender_test_util.h"
#include "berth/server/service_test_util.h"

namespace berth::server {
namespace {

using nlohmann::json;
using testing::PodDoc;
using testing::ServiceHarness;

std::string FilterBody(const json& pod) { return json{{"pod", pod}, {"nodenames", {"node-0"}}}.dump(); }

std::string ErrorOf(const ApiResult& r) {
  if (r.body.contains("error") && r.body["error"].is_string()) return r.body["error"].get<std::string>();
  if (r.body.contains("Error") && r.body["Error"].is_string()) return r.body["Error"].get<std::string>();
  return r.body.dump();
}

TEST(ExtenderStrictTest, PodValuesAreChecked) {
  auto with_gpu = [](const std::string& q) {
    json pod = PodDoc("p", "", 1);
    pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = q;
    return pod;
  };
  for (const char* q : {"1e-", "1e+-1", "1.2.3", "x"})
    EXPECT_FALSE(k8s::ParsePod(with_gpu(q)).ok()) << q;
  auto long_q = k8s::ParsePod(with_gpu(std::string(5000, '7')));
  ASSERT_FALSE(long_q.ok());
  EXPECT_LT(long_q.status().message().size(), 200u);

  // Two containers of 2^62 GPUs each: the sum overflows, it does not wrap to 0.
  json pod = PodDoc("p", "", 1);
  pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "4611686018427387904";
  pod["spec"]["containers"][1]["resources"]["limits"] = {{"nvidia.com/gpu", "4611686018427387904"}};
  auto sum = k8s::ParsePod(pod);
  ASSERT_FALSE(sum.ok());
  EXPECT_NE(sum.status().message().find("overflows"), std::string::npos) << sum.status().message();

  pod = PodDoc("p", "", 1);
  pod["spec"]["priority"] = 9223372036854775808ull;
  auto prio = k8s::ParsePod(pod);
  ASSERT_FALSE(prio.ok());
  EXPECT_NE(prio.status().message().find("pod.spec.priority"), std::string::npos);
  pod["spec"]["priority"] = int64_t{2147483648};
  EXPECT_FALSE(k8s::ParsePod(pod).ok());
  pod["spec"]["priority"] = 2147483647;
  EXPECT_EQ(k8s::ParsePod(pod)->priority, 2147483647);

  pod = PodDoc("p\xE2\x80\xAE", "", 1);
  EXPECT_NE(k8s::ParsePod(pod).status().message().find("U+202E"), std::string::npos);
  pod = PodDoc("p", std::string("g\0h", 3), 1);
  EXPECT_NE(k8s::ParsePod(pod).status().message().find("U+0000"), std::string::npos);
  pod = PodDoc("p", std::string(500'000, 'g'), 1);
  EXPECT_NE(k8s::ParsePod(pod).status().message().find("longer than 253"), std::string::npos);
}

TEST(ExtenderStrictTest, HostileBodiesGet400AndTheServiceLives) {
  ServiceHarness h;
  ASSERT_TRUE(h.Start().ok());
  const std::string deep = std::string(250'000, '[') + std::string(250'000, ']');
  const std::string deep_in_pod = R"({"pod":{"metadata":{"name":"p"},"x":)" + deep + R"(},"nodenames":["node-0"]})";
  const std::string dup = R"({"pod":{"metadata":{"name":"p","name":"q"}},"nodenames":["node-0"]})";
  for (const std::string& body : {deep, deep_in_pod, dup}) {
    ApiResult f = h.service().ExtenderFilter(body);
    EXPECT_EQ(f.code, 400) << ErrorOf(f);
    EXPECT_EQ(h.service().ExtenderPrioritize(body).code, 400);
    EXPECT_EQ(h.service().ExtenderPreempt(body).code, 400);
    EXPECT_EQ(h.service().ExtenderBind(body).code, 400);
  }
  EXPECT_NE(ErrorOf(h.service().ExtenderFilter(deep)).find("nesting deeper than 64"), std::string::npos);
  EXPECT_NE(ErrorOf(h.service().ExtenderFilter(dup)).find("duplicate key \"name\""), std::string::npos);
  json pod = PodDoc("p", "", 1);
  pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "1e+-1";
  EXPECT_EQ(h.service().ExtenderFilter(FilterBody(pod)).code, 400);
  // Still serving: a good pod is placed.
  ApiResult ok = h.service().ExtenderFilter(FilterBody(PodDoc("good", "", 1)));
  EXPECT_EQ(ok.code, 200) << ok.body.dump();
}

TEST(ExtenderStrictTest, FilterAnswerCopiesOnlyThePassingNode) {
  ServiceHarness h;
  ASSERT_TRUE(h.Start().ok());
  json items = json::array();
  for (int i = 0; i < 4; ++i)
    items.push_back({{"metadata", {{"name", "node-" + std::to_string(i)}}}, {"status", {{"big", std::string(1000, 'x')}}}});
  items.push_back({{"metadata", {{"name", 7}}}});  // a bad item is skipped, not a crash
  items.push_back(5);
  json body = {{"pod", PodDoc("p", "", 1)}, {"nodes", {{"kind", "NodeList"}, {"items", items}}}};
  ApiResult r = h.service().ExtenderFilter(body.dump());
  ASSERT_EQ(r.code, 200) << r.body.dump();
  ASSERT_TRUE(r.body.contains("nodes"));
  EXPECT_EQ(r.body["nodes"]["kind"], "NodeList");
  EXPECT_EQ(r.body["nodes"]["items"].size(), 1u);
}

}  // namespace
}  // namespace berth::server
