// Kubernetes quantity parsing: the grammar of k8s.io/apimachinery's
// resource.Quantity (without its canonical-form rules), read into integers
// exactly (decimal digits, no floating point), overflow-checked.
//
//   quantity  ::= sign? number suffix
//   number    ::= digits | digits "." digits? | "." digits
//   suffix    ::= "" | binarySI | decimalSI | ("e" | "E") sign? digits
//   binarySI  ::= Ki | Mi | Gi | Ti | Pi | Ei
//   decimalSI ::= n | u | m | k | M | G | T | P | E
#include "berth/common/k8s_quantity.h"

#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

namespace berth {
namespace {

constexpr size_t kMaxDigits = 64;  // longer numbers are refused, not approximated
constexpr int64_t kMaxValue = 9'000'000'000'000'000'000;

// The text as shown in an error: at most 40 bytes.
std::string Shown(const std::string& text) {
  return "'" + (text.size() > 40 ? text.substr(0, 37) + "..." : text) + "'";
}

bool IsDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

}  // namespace

StatusOr<int64_t> ParseK8sQuantity(const std::string& text, int64_t scale) {
  if (text.empty()) return InvalidArgument("empty quantity");
  const Status bad = InvalidArgument(Shown(text) + " is not a quantity");
  size_t i = 0;
  bool negative = false;
  if (text[i] == '+' || text[i] == '-') negative = text[i++] == '-';
  const size_t number_start = i;
  size_t digits = 0, dots = 0;
  for (; i < text.size() && (IsDigit(text[i]) || text[i] == '.'); ++i) (text[i] == '.' ? dots : digits)++;
  if (digits > kMaxDigits)
    return InvalidArgument(Shown(text) + " has more than " + std::to_string(kMaxDigits) + " digits");
  const std::string number = text.substr(number_start, i - number_start);
  const std::string suffix = text.substr(i);
  int exp10 = 0, exp2 = 0;
  if (suffix.empty()) {
  } else if (suffix == "n") { exp10 = -9;
  } else if (suffix == "u") { exp10 = -6;
  } else if (suffix == "m") { exp10 = -3;
  } else if (suffix == "k") { exp10 = 3;
  } else if (suffix == "M") { exp10 = 6;
  } else if (suffix == "G") { exp10 = 9;
  } else if (suffix == "T") { exp10 = 12;
  } else if (suffix == "P") { exp10 = 15;
  } else if (suffix == "E") { exp10 = 18;
  } else if (suffix == "Ki") { exp2 = 10;
  } else if (suffix == "Mi") { exp2 = 20;
  } else if (suffix == "Gi") { exp2 = 30;
  } else if (suffix == "Ti") { exp2 = 40;
  } else if (suffix == "Pi") { exp2 = 50;
  } else if (suffix == "Ei") { exp2 = 60;
  } else if (suffix[0] == 'e' || suffix[0] == 'E') {
    size_t k = 1;
    bool neg_exp = false;
    if (k < suffix.size() && (suffix[k] == '+' || suffix[k] == '-')) neg_exp = suffix[k++] == '-';
    const std::string exp = suffix.substr(k);
    if (exp.empty() || exp.size() > 3) return bad;
    for (char c : exp)
      if (!IsDigit(c)) return bad;
    exp10 = std::stoi(exp) * (neg_exp ? -1 : 1);  // 0..999: cannot throw
  } else {
    return InvalidArgument(Shown(text) + " is not a quantity (unknown suffix " + Shown(suffix) + ")");
  }
  if (digits == 0 || dots > 1) return bad;
  // Exact decimal arithmetic: the digits times scale * 2^exp2, then the
  // decimal point moved by exp10 minus the fraction's length; rounded up.
  if (scale <= 0) return InvalidArgument("quantity scale must be positive");
  std::vector<uint32_t> d;  // decimal digits, most significant first
  int64_t point = 0;        // digits after the decimal point
  bool after_dot = false;
  for (char c : number) {
    if (c == '.') {
      after_dot = true;
      continue;
    }
    d.push_back(static_cast<uint32_t>(c - '0'));
    if (after_dot) ++point;
  }
  auto multiply = [&d](uint64_t m) {
    unsigned __int128 carry = 0;
    for (size_t k = d.size(); k-- > 0;) {
      const unsigned __int128 x = static_cast<unsigned __int128>(d[k]) * m + carry;
      d[k] = static_cast<uint32_t>(x % 10);
      carry = x / 10;
    }
    while (carry > 0) {
      d.insert(d.begin(), static_cast<uint32_t>(carry % 10));
      carry /= 10;
    }
  };
  multiply(static_cast<uint64_t>(scale));
  if (exp2 > 0) multiply(uint64_t{1} << exp2);
  size_t lead = 0;
  while (lead < d.size() && d[lead] == 0) ++lead;
  d.erase(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(lead));
  if (d.empty()) return int64_t{0};
  if (negative) return InvalidArgument(Shown(text) + " is negative");
  const int64_t n = static_cast<int64_t>(d.size());
  const int64_t int_digits = n - point + exp10;  // digits before the decimal point
  if (int_digits > 19) return InvalidArgument(Shown(text) + " is too large");
  unsigned __int128 value = 0;
  bool fraction = false;
  for (int64_t k = 0; k < n; ++k) {
    if (k < int_digits) {
      value = value * 10 + d[static_cast<size_t>(k)];
    } else if (d[static_cast<size_t>(k)] != 0) {
      fraction = true;
    }
  }
  for (int64_t k = n; k < int_digits; ++k) value *= 10;  // zeros the exponent adds
  if (fraction) value += 1;
  if (value > static_cast<unsigned __int128>(kMaxValue)) return InvalidArgument(Shown(text) + " is too large");
  return static_cast<int64_t>(value);
}

}  // namespace berth
