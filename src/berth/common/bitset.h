// A dense, resizable bitset with fast "next set bit from i" — used for node
// buckets (nodes with exactly k free GPUs of a type) so that a placement scan
// touches 64 nodes per word instead of every node.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "berth/common/bits.h"

namespace berth {

class DenseBitset {
 public:
  DenseBitset() = default;
  explicit DenseBitset(int32_t size) { Resize(size); }
  void Resize(int32_t size) {
    size_ = size;
    words_.assign((size + 63) / 64, 0);
  }
  int32_t size() const { return size_; }
  void Set(int32_t i) { words_[i >> 6] |= uint64_t{1} << (i & 63); }
  void Reset(int32_t i) { words_[i >> 6] &= ~(uint64_t{1} << (i & 63)); }
  bool Test(int32_t i) const { return (words_[i >> 6] >> (i & 63)) & 1; }
  // Smallest set index >= from, or -1.
  int32_t FindNext(int32_t from) const {
    if (from >= size_) return -1;
    size_t w = from >> 6;
    uint64_t bits = words_[w] & (~uint64_t{0} << (from & 63));
    while (true) {
      if (bits) return static_cast<int32_t>(w * 64 + std::countr_zero(bits));
      if (++w >= words_.size()) return -1;
      bits = words_[w];
    }
  }
  int32_t Count() const {
    int32_t n = 0;
    for (uint64_t w : words_) n += PopCount(w);
    return n;
  }
  // Set bits in [begin, end).
  int32_t CountRange(int32_t begin, int32_t end) const {
    if (begin >= end) return 0;
    const int32_t bw = begin >> 6, ew = (end - 1) >> 6;
    const uint64_t first = ~uint64_t{0} << (begin & 63);
    const uint64_t last = ~uint64_t{0} >> (63 - ((end - 1) & 63));
    if (bw == ew) return PopCount(words_[bw] & first & last);
    int32_t n = PopCount(words_[bw] & first) + PopCount(words_[ew] & last);
    for (int32_t w = bw + 1; w < ew; ++w) n += PopCount(words_[w]);
    return n;
  }
  // Heap bytes held by the words.
  size_t MemoryBytes() const { return words_.capacity() * sizeof(uint64_t); }
  bool operator==(const DenseBitset&) const = default;

 private:
  int32_t size_ = 0;
  std::vector<uint64_t> words_;
};

}  // namespace berth
