// The federation file: parsing, defaults, and errors that name the place.
#include <gtest/gtest.h>

#include "berth/cluster/loaders.h"
#include "berth/federation/federation.h"

namespace berth::federation {
namespace {

constexpr const char* kTwoRegions = R"(
name: two
dispatcher_region: east
digest_interval_s: 5
regions:
  - name: east
    clusters:
      - {name: e1, cluster: "4x8:H100", gpu_prices: {H100: 2.5}, failure_domain: east-1}
  - name: west
    clusters:
      - {name: w1, cluster: "8x8:A100", default_price: 1.2, weight: 3}
links:
  - {from: east, to: west, bandwidth_gbps: 10, rtt_ms: 80, egress_usd_per_gb: 0.02}
datasets:
  - {name: web, size_gib: 2, regions: [east], read: streamed}
tenants:
  - {name: alice, home: east, datasets: [web]}
)";

StatusOr<Federation> Parse(const std::string& text) {
  return ParseFederationYaml(text, "fed.yaml", [](const std::string& s) { return cluster::LoadCluster(s); });
}

TEST(FederationFile, ParsesEverySection) {
  StatusOr<Federation> f = Parse(kTwoRegions);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->name, "two");
  ASSERT_EQ(f->regions.size(), 2u);
  ASSERT_EQ(f->members.size(), 2u);
  EXPECT_EQ(f->members[1].region, 1);
  EXPECT_EQ(f->members[0].cluster->total_gpus(), 32);
  EXPECT_DOUBLE_EQ(f->members[0].Price("H100"), 2.5);
  EXPECT_DOUBLE_EQ(f->members[1].Price("A100"), 1.2);
  EXPECT_DOUBLE_EQ(f->members[0].weight, 32);  // default: its GPUs
  EXPECT_DOUBLE_EQ(f->members[1].weight, 3);
  EXPECT_EQ(f->members[0].failure_domain, "east-1");
  // One link listed: both directions; a region to itself: intra_region's default.
  EXPECT_EQ(f->link(1, 0).rtt, 80'000);
  EXPECT_DOUBLE_EQ(f->link(0, 1).egress_usd_per_gb, 0.02);
  EXPECT_DOUBLE_EQ(f->link(0, 0).bandwidth_gbps, 100);
  ASSERT_EQ(f->datasets.size(), 1u);
  EXPECT_EQ(f->datasets[0].size_mib, 2048);
  EXPECT_EQ(f->datasets[0].read, ReadPattern::kStreamed);
  EXPECT_EQ(f->tenant_home.at("alice"), 0);
  EXPECT_EQ(f->digest_interval, 5 * kUsPerSecond);
  EXPECT_EQ(f->total_gpus(), 96);
}

TEST(FederationFile, InterRegionDefaultsEveryPair) {
  StatusOr<Federation> f = Parse(R"(
inter_region: {bandwidth_gbps: 5, rtt_ms: 50}
regions:
  - {name: a, clusters: [{name: a1, cluster: "2x8:H100"}]}
  - {name: b, clusters: [{name: b1, cluster: "2x8:H100"}]}
  - {name: c, clusters: [{name: c1, cluster: "2x8:H100"}]}
links:
  - {from: a, to: b, bandwidth_gbps: 40, rtt_ms: 10}
)");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_DOUBLE_EQ(f->link(0, 1).bandwidth_gbps, 40);
  EXPECT_DOUBLE_EQ(f->link(1, 0).bandwidth_gbps, 40);
  EXPECT_DOUBLE_EQ(f->link(2, 0).bandwidth_gbps, 5);
  EXPECT_EQ(f->link(1, 2).rtt, 50'000);
}

TEST(FederationFile, ErrorsNameThePlace) {
  auto error = [](const std::string& text) {
    StatusOr<Federation> f = Parse(text);
    return f.ok() ? std::string("ok") : f.status().message();
  };
  std::string t = kTwoRegions;
  EXPECT_NE(error(std::string(t).replace(t.find("bandwidth_gbps: 10"), 18, "bandwidth_gbps: 0")).find("links[0].bandwidth_gbps"),
            std::string::npos);
  EXPECT_NE(error(std::string(t).replace(t.find("regions: [east]"), 15, "regions: [north]")).find("no region named 'north'"),
            std::string::npos);
  EXPECT_NE(error(std::string(t).replace(t.find("{H100: 2.5}"), 11, "{V100: 2.5}")).find("no GPU type 'V100'"),
            std::string::npos);
  EXPECT_NE(error(std::string(t).replace(t.find("read: streamed"), 14, "read: lazily")).find("staged or streamed"),
            std::string::npos);
  EXPECT_NE(error(std::string(t).replace(t.find("\"8x8:A100\""), 10, "\"8x8:\"")).find("regions[1].clusters[0].cluster"),
            std::string::npos);
  EXPECT_NE(error(std::string(t).replace(t.find("links:"), 6, "linkz:")).find("unknown key"), std::string::npos);
  // No link between two regions.
  const std::string no_links = std::string(t).substr(0, t.find("links:")) + "datasets: []\n";
  EXPECT_NE(error(no_links).find("no link from region east to west"), std::string::npos);
  EXPECT_NE(error("regions: []").find("non-empty list of regions"), std::string::npos);
  EXPECT_NE(error("a: [").find("fed.yaml"), std::string::npos);
}

}  // namespace
}  // namespace berth::federation
