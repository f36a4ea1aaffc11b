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

}  // namespace
}  // namespace berth
