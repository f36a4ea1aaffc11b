// The openb reader on the real pod lists (its bad-input cases are in
// bad_input_test.cc).
#include <gtest/gtest.h>

#include "berth/sim/readers/readers.h"
#include "berth/testing/paths.h"

namespace berth::sim {
namespace {

TEST(OpenbReader, RealPodLists) {
  const std::string d = testing::DataDir() + "/alibaba-gpu-v2023/";
  auto t = ReadTrace(d + "openb_pod_list_default.csv", "", {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->jobs.size(), 8152u);
  EXPECT_EQ(t->report.skipped, 0);
  t = ReadTrace(d + "openb_pod_list_multigpu20.csv", "", {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_GT(t->jobs.size(), 0u);
}

}  // namespace
}  // namespace berth::sim
