// ParallelFor: every index once, statuses in index order, any thread count.
#include "berth/common/parallel_for.h"

#include <atomic>
#include <gtest/gtest.h>
#include <string>

namespace berth {
namespace {

TEST(ParallelForTest, RunsEveryIndexOnceAndKeepsOrder) {
  for (int threads : {0, 1, 2, 3, 16}) {
    std::vector<std::atomic<int>> runs(37);
    std::vector<Status> s = ParallelFor(runs.size(), threads, [&](size_t i) {
      runs[i].fetch_add(1);
      return i % 5 == 0 ? InvalidArgument("item " + std::to_string(i)) : Status::Ok();
    });
    ASSERT_EQ(s.size(), runs.size());
    for (size_t i = 0; i < runs.size(); ++i) {
      EXPECT_EQ(runs[i].load(), 1) << "threads " << threads << " index " << i;
      if (i % 5 == 0) {
        EXPECT_EQ(s[i].message(), "item " + std::to_string(i));
      } else {
        EXPECT_TRUE(s[i].ok());
      }
    }
  }
}

TEST(ParallelForTest, NothingToDo) {
  EXPECT_TRUE(ParallelFor(0, 4, [](size_t) { return InvalidArgument("never"); }).empty());
  EXPECT_GE(DefaultThreads(), 1);
}

}  // namespace
}  // namespace berth
