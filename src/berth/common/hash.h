// A stable 64-bit FNV-1a hash, used for the decision-log hash that must be the
// same on every run and platform for the same input and seed.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace berth {

class StableHash {
 public:
  void Add(std::string_view bytes) {
    for (unsigned char c : bytes) {
      h_ ^= c;
      h_ *= 0x100000001b3ULL;
    }
  }
  void AddInt(int64_t v) {
    for (int i = 0; i < 8; ++i) {
      h_ ^= static_cast<unsigned char>(v >> (8 * i));
      h_ *= 0x100000001b3ULL;
    }
  }
  uint64_t value() const { return h_; }
  std::string Hex() const {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h_));
    return buf;
  }

 private:
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

}  // namespace berth
