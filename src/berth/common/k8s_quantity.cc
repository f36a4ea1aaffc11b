// Kubernetes quantity parsing (the suffix table of k8s.io/apimachinery's
// resource.Quantity, without its canonical-form rules).
#include "berth/common/k8s_quantity.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

namespace berth {

StatusOr<int64_t> ParseK8sQuantity(const std::string& text, int64_t scale) {
  if (text.empty()) return InvalidArgument("empty quantity");
  const Status bad = InvalidArgument("'" + text + "' is not a quantity");
  size_t i = 0;
  if (text[i] == '+' || text[i] == '-') ++i;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  const std::string number = text.substr(0, i);
  const std::string suffix = text.substr(i);
  long double mult = 1;
  if (suffix.empty()) {
  } else if (suffix == "m") { mult = 1e-3L;
  } else if (suffix == "k") { mult = 1e3L;
  } else if (suffix == "M") { mult = 1e6L;
  } else if (suffix == "G") { mult = 1e9L;
  } else if (suffix == "T") { mult = 1e12L;
  } else if (suffix == "P") { mult = 1e15L;
  } else if (suffix == "Ki") { mult = 1024.0L;
  } else if (suffix == "Mi") { mult = 1024.0L * 1024;
  } else if (suffix == "Gi") { mult = 1024.0L * 1024 * 1024;
  } else if (suffix == "Ti") { mult = 1024.0L * 1024 * 1024 * 1024;
  } else if (suffix == "Pi") { mult = 1024.0L * 1024 * 1024 * 1024 * 1024;
  } else if (suffix[0] == 'e' || suffix[0] == 'E') {
    std::string exp = suffix.substr(1);
    bool negative = false;
    if (!exp.empty() && (exp[0] == '+' || exp[0] == '-')) {
      negative = exp[0] == '-';
      exp = exp.substr(1);
    }
    if (exp.empty() || exp.size() > 3 || exp.find_first_not_of("0123456789") != std::string::npos) return bad;
    const int e = std::atoi(exp.c_str());
    mult = std::pow(10.0L, negative ? -e : e);
  } else {
    return InvalidArgument("'" + text + "' is not a quantity (unknown suffix '" + suffix + "')");
  }
  if (number.find_first_of("0123456789") == std::string::npos || std::count(number.begin(), number.end(), '.') > 1)
    return bad;
  const long double value = std::strtold(number.c_str(), nullptr) * mult * scale;
  if (value < 0) return InvalidArgument("'" + text + "' is negative");
  if (value > 9e18L) return InvalidArgument("'" + text + "' is too large");
  return static_cast<int64_t>(std::ceil(value - 1e-9L));
}

}  // namespace berth
