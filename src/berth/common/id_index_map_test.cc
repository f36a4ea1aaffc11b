// IdIndexMap against std::unordered_map: seeded random inserts, lookups and
// erases of sequential, clustered and random ids (tables growing and
// emptying, runs wrapping the end of the table), the same answers at every
// step.
#include "berth/common/id_index_map.h"

#include <gtest/gtest.h>

#include <unordered_map>
#include <vector>

#include "berth/common/ids.h"
#include "berth/common/rng.h"

namespace berth {
namespace {

TEST(IdIndexMap, SameAnswersAsAnUnorderedMap) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    Rng rng(seed);
    IdIndexMap<JobId> m;
    std::unordered_map<int64_t, int32_t> ref;
    std::vector<int64_t> keys;
    int64_t next = static_cast<int64_t>(rng.Uniform(1000)) - 500;
    auto draw_new = [&]() -> int64_t {
      switch (seed % 3) {
        case 0: return next++;                                               // sequential
        case 1: return (next += 1 + static_cast<int64_t>(rng.Uniform(3)));  // clustered
        default: return static_cast<int64_t>(rng.Next());                    // anywhere, negative too
      }
    };
    for (int step = 0; step < 60000; ++step) {
      // Grow for the first half, then mostly shrink.
      const uint64_t op = rng.Uniform(10);
      const bool grow = step < 30000 ? op < 6 : op < 3;
      if (grow) {
        const int64_t k = draw_new();
        if (ref.count(k)) continue;
        const auto v = static_cast<int32_t>(rng.Uniform(1 << 30));
        m.Insert(JobId(k), v);
        ref[k] = v;
        keys.push_back(k);
      } else if (!keys.empty() && op % 2 == 0) {
        const size_t i = rng.Uniform(keys.size());
        const int64_t k = keys[i];
        keys[i] = keys.back();
        keys.pop_back();
        ASSERT_TRUE(m.Erase(JobId(k)));
        ref.erase(k);
        ASSERT_FALSE(m.Erase(JobId(k)));
      } else {
        const int64_t k = !keys.empty() && rng.Uniform(2) ? keys[rng.Uniform(keys.size())] : draw_new();
        const int32_t* got = m.Find(JobId(k));
        auto it = ref.find(k);
        ASSERT_EQ(got != nullptr, it != ref.end()) << "seed " << seed << " step " << step;
        if (got) ASSERT_EQ(*got, it->second);
      }
      ASSERT_EQ(m.size(), ref.size());
    }
    // Every key still answers, and an emptied map is empty.
    for (const auto& [k, v] : ref) ASSERT_EQ(*m.Find(JobId(k)), v);
    for (const auto& [k, v] : ref) ASSERT_TRUE(m.Erase(JobId(k)));
    EXPECT_TRUE(m.empty());
    EXPECT_EQ(m.Find(JobId(0)), nullptr);
  }
}

}  // namespace
}  // namespace berth
