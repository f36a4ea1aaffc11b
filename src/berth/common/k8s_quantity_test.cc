// Kubernetes quantities: suffixes, rounding, and malformed text.
#include "berth/common/k8s_quantity.h"

#include <gtest/gtest.h>

namespace berth {
namespace {

TEST(K8sQuantityTest, Suffixes) {
  EXPECT_EQ(ParseK8sQuantity("500m", 1000).value(), 500);
  EXPECT_EQ(ParseK8sQuantity("2", 1000).value(), 2000);
  EXPECT_EQ(ParseK8sQuantity("1.5", 1000).value(), 1500);
  EXPECT_EQ(ParseK8sQuantity("64Gi", 1).value(), int64_t{64} << 30);
  EXPECT_EQ(ParseK8sQuantity("1056640520Ki", 1).value(), int64_t{1056640520} * 1024);
  EXPECT_EQ(ParseK8sQuantity("1G", 1).value(), 1'000'000'000);
  EXPECT_EQ(ParseK8sQuantity("1e3", 1).value(), 1000);
  EXPECT_EQ(ParseK8sQuantity("15E-1", 1000).value(), 1500);
  EXPECT_EQ(ParseK8sQuantity("+8", 1).value(), 8);
  EXPECT_EQ(ParseK8sQuantity("1m", 1).value(), 1);  // rounded up
}

TEST(K8sQuantityTest, Malformed) {
  for (const char* t : {"", "12Q", "-1", ".", "1e", "1e+", "1e+-2", "1e1234", "1.2.3", "Gi", "9e30"}) {
    StatusOr<int64_t> q = ParseK8sQuantity(t, 1);
    EXPECT_FALSE(q.ok()) << t;
    if (*t) {
      EXPECT_NE(q.status().message().find(t), std::string::npos) << q.status().message();
    }
  }
}

TEST(K8sQuantityTest, GrammarEdges) {
  EXPECT_EQ(ParseK8sQuantity("1E", 1).value(), 1'000'000'000'000'000'000);  // exa
  EXPECT_EQ(ParseK8sQuantity("1Ei", 1).value(), int64_t{1} << 60);
  EXPECT_EQ(ParseK8sQuantity("500u", 1'000'000).value(), 500);
  EXPECT_EQ(ParseK8sQuantity("1n", 1).value(), 1);  // rounded up
  EXPECT_EQ(ParseK8sQuantity(".5", 1000).value(), 500);
  EXPECT_EQ(ParseK8sQuantity("5.", 1).value(), 5);
  EXPECT_EQ(ParseK8sQuantity("-0", 1).value(), 0);
  for (const char* t : {"1e-", "1e+-1", "1E+", "--1", "+-1", "1 ", " 1", "1ki", "1.5.", "e3", "1e1.5", "8Ei", "nan",
                        "inf", "0x10"})
    EXPECT_FALSE(ParseK8sQuantity(t, 1).ok()) << t;
}

TEST(K8sQuantityTest, LongNumbersAreRefusedWithShortMessages) {
  const std::string digits(5000, '9');
  StatusOr<int64_t> q = ParseK8sQuantity(digits, 1);
  ASSERT_FALSE(q.ok());
  EXPECT_LT(q.status().message().size(), 100u);
  EXPECT_FALSE(ParseK8sQuantity("0." + std::string(5000, '0') + "1", 1).ok());
  EXPECT_EQ(ParseK8sQuantity("4611686018427387904", 1).value(), int64_t{1} << 62);  // 2^62 itself is fine
  EXPECT_FALSE(ParseK8sQuantity("9223372036854775807", 1).ok());                 // beyond 9e18
}

}  // namespace
}  // namespace berth
