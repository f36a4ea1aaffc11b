// PopCount equals std::popcount: every single bit, every byte pattern in
// every position, and seeded random words of every density.
#include "berth/common/bits.h"

#include <gtest/gtest.h>

#include <bit>

#include "berth/common/rng.h"

namespace berth {
namespace {

static_assert(PopCount(0) == 0 && PopCount(~uint64_t{0}) == 64 && PopCount(0xff) == 8);

TEST(PopCount, EqualsStdPopcount) {
  for (int b = 0; b < 64; ++b) EXPECT_EQ(PopCount(uint64_t{1} << b), 1) << b;
  for (uint64_t v = 0; v < 256; ++v)
    for (int shift = 0; shift <= 56; shift += 8) EXPECT_EQ(PopCount(v << shift), std::popcount(v << shift));
  Rng rng(42);
  for (int i = 0; i < 100000; ++i) {
    uint64_t x = rng.Next();
    // Sparser and denser words too.
    if (i % 3 == 1) x &= rng.Next();
    if (i % 3 == 2) x |= rng.Next();
    ASSERT_EQ(PopCount(x), std::popcount(x)) << x;
  }
}

}  // namespace
}  // namespace berth
