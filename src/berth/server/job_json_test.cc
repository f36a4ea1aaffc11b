// The job document's Kubernetes-style fields: quantities beside the integer
// fields (gpus "8", cpu "500m", memory "256Gi") and priority_class, with 400s
// naming the field for bad ones; span_part (a part of a gang split across
// regions).
#include "berth/server/job_json.h"

#include <gtest/gtest.h>

namespace berth::server {
namespace {

job::JobSpec Parse(const std::string& body) {
  StatusOr<JobSubmission> s = ParseJobBody(body);
  EXPECT_TRUE(s.ok()) << body << ": " << s.status().message();
  return s.ok() ? s->spec : job::JobSpec{};
}

std::string Error(const std::string& body) {
  StatusOr<JobSubmission> s = ParseJobBody(body);
  EXPECT_FALSE(s.ok()) << body;
  return s.ok() ? "" : std::string(s.status().message());
}

TEST(JobJsonTest, KubernetesQuantities) {
  const job::JobSpec j =
      Parse(R"({"name":"a","groups":[{"count":2,"gpus":"8","cpu":"500m","memory":"256Gi"}]})");
  ASSERT_EQ(j.groups.size(), 1u);
  EXPECT_EQ(j.groups[0].gpus, 8);
  EXPECT_EQ(j.groups[0].cpu_milli, 500);
  EXPECT_EQ(j.groups[0].memory_mib, 262144);
  const job::JobSpec k = Parse(R"({"name":"b","groups":[{"count":1,"gpus":"32","cpu":"32","memory":"1.5Gi"}]})");
  EXPECT_EQ(k.groups[0].gpus, 32);
  EXPECT_EQ(k.groups[0].cpu_milli, 32000);
  EXPECT_EQ(k.groups[0].memory_mib, 1536);
  // JSON numbers are base units, as in a pod: cores and bytes (rounded up to MiB).
  const job::JobSpec n = Parse(R"({"name":"c","groups":[{"count":1,"cpu":2.5,"memory":1000000}]})");
  EXPECT_EQ(n.groups[0].cpu_milli, 2500);
  EXPECT_EQ(n.groups[0].memory_mib, 1);
  // The integer fields keep their meaning.
  const job::JobSpec i = Parse(R"({"name":"d","groups":[{"count":1,"gpus":8,"cpu_milli":64000,"memory_mib":4096}]})");
  EXPECT_EQ(i.groups[0].cpu_milli, 64000);
  EXPECT_EQ(i.groups[0].memory_mib, 4096);
}

TEST(JobJsonTest, BadQuantitiesNameTheField) {
  EXPECT_NE(Error(R"({"name":"a","groups":[{"count":1,"gpus":"8.5"}]})").find("groups[0].gpus"), std::string::npos);
  EXPECT_NE(Error(R"({"name":"a","groups":[{"count":1,"gpus":"500m"}]})").find("not a whole number"),
            std::string::npos);
  EXPECT_NE(Error(R"({"name":"a","groups":[{"count":1,"gpus":"65"}]})").find("out of range"), std::string::npos);
  EXPECT_NE(Error(R"({"name":"a","groups":[{"count":1,"gpus":"eight"}]})").find("groups[0].gpus"),
            std::string::npos);
  EXPECT_NE(Error(R"({"name":"a","groups":[{"count":1,"cpu":"2 cores"}]})").find("groups[0].cpu"), std::string::npos);
  EXPECT_NE(Error(R"({"name":"a","groups":[{"count":1,"memory":"-1Gi"}]})").find("groups[0].memory"),
            std::string::npos);
  EXPECT_NE(Error(R"({"name":"a","groups":[{"count":1,"memory":true}]})").find("expected a quantity"),
            std::string::npos);
  // A quantity in an integer field points to the field that takes it.
  const std::string e = Error(R"({"name":"a","groups":[{"count":1,"memory_mib":"256Gi"}]})");
  EXPECT_NE(e.find("groups[0].memory_mib"), std::string::npos) << e;
  EXPECT_NE(e.find("use \"memory\""), std::string::npos) << e;
  EXPECT_NE(Error(R"({"name":"a","groups":[{"count":1,"cpu_milli":"500m"}]})").find("use \"cpu\""),
            std::string::npos);
  EXPECT_NE(Error(R"({"name":"a","groups":[{"count":1,"cpu":"1","cpu_milli":1000}]})").find("not both"),
            std::string::npos);
}

TEST(JobJsonTest, SpanPartRoundTripsAndBadOnesNameTheField) {
  const job::JobSpec j = Parse(
      R"({"name":"g.part-1","span_part":{"index":1,"parts":2,"world_size":8,"rank_offset":6},"groups":[{"count":2,"gpus":8}]})");
  ASSERT_TRUE(j.span_part.has_value());
  EXPECT_EQ(j.span_part->index, 1);
  EXPECT_EQ(j.span_part->parts, 2);
  EXPECT_EQ(j.span_part->world_size, 8);
  EXPECT_EQ(j.span_part->rank_offset, 6);
  EXPECT_EQ(JobToJson(j)["span_part"]["rank_offset"], 6);
  EXPECT_EQ(SpecFingerprint(Parse(JobToJson(j).dump())), SpecFingerprint(j));
  EXPECT_NE(Error(R"({"name":"a","span_part":{"index":0,"parts":2,"world_size":8},"groups":[{"count":1}]})")
                .find("span_part.rank_offset: missing"),
            std::string::npos);
  EXPECT_NE(Error(R"({"name":"a","span_part":{"index":2,"parts":2,"world_size":8,"rank_offset":0},"groups":[{"count":1}]})")
                .find("span_part.index"),
            std::string::npos);
  EXPECT_NE(Error(R"({"name":"a","span_part":{"index":1,"parts":2,"world_size":8,"rank_offset":7},"groups":[{"count":2}]})")
                .find("span_part.rank_offset"),
            std::string::npos);
  EXPECT_NE(Error(R"({"name":"a","span_part":{"index":1,"parts":2,"world_size":8,"rank_offset":0,"x":1},"groups":[{"count":1}]})")
                .find("span_part.x"),
            std::string::npos);
  EXPECT_NE(Error(R"({"name":"a","span_part":3,"groups":[{"count":1}]})").find("span_part: expected an object"),
            std::string::npos);
}

TEST(JobJsonTest, PriorityClass) {
  EXPECT_EQ(Parse(R"({"name":"a","priority_class":"train","groups":[{"count":1}]})").priority, 50);
  EXPECT_EQ(Parse(R"({"name":"a","priority_class":"system-cluster-critical","groups":[{"count":1}]})").priority,
            2000000000);
  EXPECT_EQ(Parse(R"({"name":"a","priority_class":"low","groups":[{"count":1}]})").priority, -1000);
  EXPECT_EQ(Parse(R"({"name":"a","priority":50,"priority_class":"train","groups":[{"count":1}]})").priority, 50);
  const std::string unknown = Error(R"({"name":"a","priority_class":"urgent","groups":[{"count":1}]})");
  EXPECT_NE(unknown.find("priority_class: 'urgent' is not a known class"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("train"), std::string::npos);  // the known ones listed
  EXPECT_NE(Error(R"({"name":"a","priority":5,"priority_class":"train","groups":[{"count":1}]})").find("agreeing"),
            std::string::npos);
  EXPECT_NE(Error(R"({"name":"a","priority_class":3,"groups":[{"count":1}]})").find("priority_class"),
            std::string::npos);
  // The stored document holds the number, which reads back the same.
  const job::JobSpec j = Parse(R"({"name":"a","priority_class":"build","groups":[{"count":1}]})");
  EXPECT_EQ(Parse(JobToJson(j).dump()).priority, 100);
}

}  // namespace
}  // namespace berth::server
