// The server address, ages and node lists of the client commands.
#include "client_util.h"

#include <gtest/gtest.h>

namespace berth::apps {
namespace {

TEST(NormalizeServer, TrailingSlashesAndScheme) {
  EXPECT_EQ(*NormalizeServer("http://127.0.0.1:7450/"), "http://127.0.0.1:7450");
  EXPECT_EQ(*NormalizeServer("http://127.0.0.1:7450//"), "http://127.0.0.1:7450");
  EXPECT_EQ(*NormalizeServer("http://head:7450"), "http://head:7450");
  EXPECT_EQ(*NormalizeServer("head:7450"), "http://head:7450");
  EXPECT_EQ(*NormalizeServer("http://[::1]:7450/"), "http://[::1]:7450");
}

TEST(NormalizeServer, ErrorsNameTheFlag) {
  auto empty = NormalizeServer("", "BERTH_SERVER");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("BERTH_SERVER"), std::string::npos);
  EXPECT_EQ(*NormalizeServer("https://head:7450/"), "https://head:7450");
  EXPECT_FALSE(NormalizeServer("ftp://head").ok());
  EXPECT_FALSE(NormalizeServer("http://").ok());
  auto path = NormalizeServer("http://head:7450/v1");
  ASSERT_FALSE(path.ok());
  EXPECT_NE(path.status().message().find("--server 'http://head:7450/v1'"), std::string::npos);
}

TEST(FormatAge, TwoUnitsAtMost) {
  EXPECT_EQ(FormatAge(0), "0s");
  EXPECT_EQ(FormatAge(45.7), "45s");
  EXPECT_EQ(FormatAge(125), "2m5s");
  EXPECT_EQ(FormatAge(720), "12m");
  EXPECT_EQ(FormatAge(3 * 3600 + 20 * 60 + 5), "3h20m");
  EXPECT_EQ(FormatAge(7200), "2h");
  EXPECT_EQ(FormatAge(93784), "1d2h");
  EXPECT_EQ(FormatAge(12 * 86400 + 5), "12d");
  EXPECT_EQ(FormatAge(-1), "-");
}

TEST(CompactNodes, DropsRepeatsAndCuts) {
  EXPECT_EQ(CompactNodes({}), "-");
  EXPECT_EQ(CompactNodes({"n1", "n1", "n2"}), "n1,n2");
  EXPECT_EQ(CompactNodes({"node-001", "node-002", "node-003", "node-004"}, 20), "node-001,node-002,+2");
}

TEST(JobStates, AsTheApiSpellsThem) {
  EXPECT_TRUE(IsJobStateName("pending"));
  EXPECT_TRUE(IsJobStateName("cancelled"));
  EXPECT_FALSE(IsJobStateName("canceled"));
  EXPECT_FALSE(IsJobStateName("PENDING"));
}

}  // namespace
}  // namespace berth::apps
