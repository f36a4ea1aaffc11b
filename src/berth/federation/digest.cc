// Building capacity digests (see digest.h).
#include "berth/federation/digest.h"

#include <algorithm>

namespace berth::federation {

int BlockIndex(int32_t gpus) {
  for (size_t i = 0; i < kBlockSizes.size(); ++i)
    if (gpus <= kBlockSizes[i]) return static_cast<int>(i);
  return static_cast<int>(kBlockSizes.size()) - 1;
}

Digest BuildDigest(int32_t member, int64_t version, TimeUs now, const state::ClusterState& state,
                   std::vector<RunningEnd> ends, std::span<const PendingWork> pending) {
  const cluster::Cluster& c = state.cluster();
  Digest d;
  d.member = member;
  d.version = version;
  d.taken_at = now;
  d.types.resize(c.gpu_types().size());
  for (size_t t = 0; t < d.types.size(); ++t) d.types[t].name = c.gpu_types()[t].name;
  for (int32_t k = 0; k < c.num_nodes(); ++k) {
    const NodeId n(k);
    const cluster::Node& node = c.node(n);
    if (!node.gpu_type.valid() || !state.up(n)) continue;
    TypeDigest& td = d.types[node.gpu_type.value()];
    td.total += node.gpu_count;
    const int32_t free = state.full_free_gpus(n);
    td.free += free;
    for (size_t b = 0; b < kBlockSizes.size(); ++b) td.fit[b] += free / kBlockSizes[b];
  }
  for (const auto& td : d.types) {
    d.total_gpus += td.total;
    d.free_gpus += td.free;
  }
  std::sort(ends.begin(), ends.end(), [](const RunningEnd& a, const RunningEnd& b) { return a.at < b.at; });
  // Merge into at most kMaxReleases steps of about equal GPU counts.
  int64_t held = 0;
  for (const auto& e : ends) held += e.gpus;
  const int64_t step = std::max<int64_t>(1, (held + kMaxReleases - 1) / kMaxReleases);
  Release cur;
  for (const auto& e : ends) {
    cur.gpus += e.gpus;
    cur.at = std::max(e.at, now);
    if (cur.gpus >= step) {
      d.releases.push_back(cur);
      cur = {};
    }
  }
  if (cur.gpus > 0) d.releases.push_back(cur);
  for (const auto& p : pending) {
    ++d.queue_jobs;
    d.queue_gpus += p.gpus;
    d.queue_work_gpu_s += p.work_gpu_s;
  }
  return d;
}

}  // namespace berth::federation
