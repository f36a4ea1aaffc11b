// Bit counting that needs no CPU extension: PopCount is inline arithmetic
// (the SWAR method), so a build for the baseline x86-64, which has no POPCNT
// instruction, does not call libgcc's __popcountdi2 in the hot loops that
// count GPUs in masks (state indexes, victim search, ledgers). Equal to
// std::popcount for every value (common/bits_test.cc).
#pragma once

#include <cstdint>

namespace berth {

constexpr int PopCount(uint64_t x) {
  x = x - ((x >> 1) & 0x5555555555555555ull);
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
  return static_cast<int>((x * 0x0101010101010101ull) >> 56);
}

}  // namespace berth
