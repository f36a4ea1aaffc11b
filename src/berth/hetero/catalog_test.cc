#include "berth/hetero/catalog.h"

#include <gtest/gtest.h>

#include "berth/hetero/hetero_test_util.h"

namespace berth::hetero {
namespace {

TEST(CatalogTest, RepositoryCatalogHasTheIssueTypes) {
  const Catalog& c = testutil::RepoCatalog();
  for (const char* name : {"H100", "H800", "H20", "A100-40", "A100-80", "A800", "V100-16", "V100-32", "P100", "K80",
                           "T4", "A10", "L40S", "Ascend-910B"}) {
    const AcceleratorSpec* s = c.Find(name);
    ASSERT_NE(s, nullptr) << name;
    EXPECT_GT(s->fp32_tflops, 0) << name;
    EXPECT_GT(s->memory_bw_gbs, 0) << name;
    EXPECT_FALSE(s->source.empty()) << name;
  }
  EXPECT_EQ(c.Find("v100")->name, "V100-16");  // alias, case-insensitive
  EXPECT_DOUBLE_EQ(c.Find("H100")->PeakTflops(Precision::kBf16), 989.4);
  // V100 has no BF16: falls back to its FP16 tensor rate.
  EXPECT_DOUBLE_EQ(c.Find("V100")->PeakTflops(Precision::kBf16), 125);
}

TEST(CatalogTest, ErrorsNameFileAndLine) {
  auto r = ParseCatalog("version: 1\naccelerators:\n  - name: X\n    fp32_tflops: fast\n    memory_gib: 1\n", "cat.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cat.yaml:4"), std::string::npos) << r.status().message();
  auto dup = ParseCatalog(
      "accelerators:\n  - {name: A, fp32_tflops: 1, memory_gib: 1, memory_bw_gbs: 1}\n"
      "  - {name: B, aliases: [a], fp32_tflops: 1, memory_gib: 1, memory_bw_gbs: 1}\n",
      "d.yaml");
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("d.yaml:3"), std::string::npos) << dup.status().message();
  EXPECT_FALSE(ParseCatalog("accelerators: [", "bad.yaml").ok());
  EXPECT_FALSE(LoadCatalog("/nonexistent/cat.yaml").ok());
}

}  // namespace
}  // namespace berth::hetero
