// Recent failures per node (see failure_history.h).
#include "berth/plugins/topology/failure_history.h"

#include <cmath>

namespace berth::plugins {

void FailureHistory::Record(NodeId n, TimeUs at, double weight) {
  if (!n.valid() || !(weight > 0)) return;
  const auto i = static_cast<size_t>(n.value());
  if (by_node_.size() <= i) by_node_.resize(i + 1);
  auto& v = by_node_[i];
  // Entries older than 20 half-lives weigh less than 1e-6: drop them.
  const TimeUs horizon = half_life_ > 0 ? at - 20 * half_life_ : at;
  std::erase_if(v, [&](const Entry& e) { return e.at < horizon; });
  v.push_back({at, weight});
  recorded_ += weight;
}

int64_t FailureHistory::Risk(int32_t begin, int32_t end, TimeUs now) const {
  double sum = 0;
  const int32_t last = std::min<int32_t>(end, static_cast<int32_t>(by_node_.size()));
  for (int32_t k = std::max(0, begin); k < last; ++k)
    for (const Entry& e : by_node_[k]) {
      if (e.at > now) continue;
      sum += half_life_ > 0 ? e.weight * std::exp2(-static_cast<double>(now - e.at) / static_cast<double>(half_life_))
                            : 0.0;
    }
  return static_cast<int64_t>(std::floor(sum * 4 + 1e-9));
}

}  // namespace berth::plugins
