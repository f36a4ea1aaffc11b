// Kubernetes resource quantities ("500m", "2", "1.5", "64Gi", "1e3"), as they
// appear in pod requests and node capacity, read into integers. Shared by the
// extender's pod parser and the node model (kube/), so it sits below both.
//
//   ParseK8sQuantity("500m", 1000) -> 500   (milli-units)
//   ParseK8sQuantity("64Gi", 1)    -> 68719476736
#pragma once

#include <cstdint>
#include <string>

#include "berth/common/status.h"

namespace berth {

// The quantity `text` times `scale` (1000 for milli-units), rounded up.
// Suffixes: m, k, M, G, T, P, Ki, Mi, Gi, Ti, Pi, and decimal exponents (e3).
// InvalidArgument naming the text when it is empty, malformed, negative or
// beyond 9e18 after scaling.
StatusOr<int64_t> ParseK8sQuantity(const std::string& text, int64_t scale);

}  // namespace berth
