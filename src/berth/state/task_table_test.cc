// TaskTable against std::map under random inserts and erases.
#include "berth/state/task_table.h"

#include <gtest/gtest.h>

#include <map>

#include "berth/common/rng.h"

namespace berth::state {
namespace {

TEST(TaskTable, MatchesAMapUnderRandomInsertsAndErases) {
  Rng rng(5);
  TaskTable t;
  std::map<TaskKey, Allocation> ref;
  std::vector<TaskKey> keys;
  for (int step = 0; step < 200'000; ++step) {
    // Phases of growth and shrinkage so the table fills, empties and refills.
    const bool grow = (step / 20'000) % 2 == 0;
    if (keys.empty() || rng.Uniform(10) < (grow ? 7u : 3u)) {
      const TaskKey k{JobId(static_cast<int64_t>(rng.Uniform(1'000'000))), static_cast<int32_t>(rng.Uniform(4))};
      if (ref.count(k)) continue;
      Allocation a;
      a.node = NodeId(static_cast<int32_t>(rng.Uniform(1000)));
      a.gpu_mask = rng.Next();
      a.cpu_milli = static_cast<MilliCpu>(step);
      t.Insert(k, a);
      ref.emplace(k, a);
      keys.push_back(k);
    } else {
      const size_t i = rng.Uniform(keys.size());
      const TaskKey k = keys[i];
      keys[i] = keys.back();
      keys.pop_back();
      EXPECT_EQ(t.Erase(k).alloc, ref.at(k));
      ref.erase(k);
    }
    if (step % 997 == 0) {
      ASSERT_EQ(t.size(), ref.size());
      for (const auto& [k, a] : ref) {
        const Allocation* found = t.Find(k);
        ASSERT_NE(found, nullptr);
        EXPECT_EQ(*found, a);
      }
      EXPECT_EQ(t.Find(TaskKey{JobId(2'000'000), 0}), nullptr);
    }
  }
  for (size_t i = 0; i < t.size(); ++i) EXPECT_EQ(ref.at(t.record(i).key), t.record(i).alloc);
}

TEST(TaskTable, EmptyTableFindsNothing) {
  TaskTable t;
  EXPECT_EQ(t.Find(TaskKey{JobId(1), 0}), nullptr);
  EXPECT_EQ(t.size(), 0u);
}

}  // namespace
}  // namespace berth::state
