// The "binpack" plugin: best fit by free GPU count, with an index fast path.
//
// It is both a score plugin and a candidate plugin, and the two agree:
//
//   Score (higher is better) is minus a key, lower key = tighter fit:
//     whole GPUs (g GPUs):  key = k - g, k = fully free GPUs on the node;
//     a share of r milli:   key = (f - r) * 128 + k', f = free milli of the
//                           tightest GPU with f >= r, k' = fully free GPUs
//                           left after placing (the share first fills partly
//                           used GPUs, then whole-GPU holes);
//     no GPU:               key = k (keep GPU nodes for GPU work).
//   There is no normalization: a full scan picks the smallest key, ties to the
//   lowest node rank.
//
//   Candidates propose the first `limit` nodes (default 8) of that same order
//   among the nodes whose GPUs fit, taken from the state's indexes:
//     whole GPUs: buckets k = g, g+1, ... of nodes_with_full_free(type, k);
//     shares:     share classes c = r/32, ... of nodes_with_share_class, then
//                 the whole-GPU buckets for nodes with no fitting partly used
//                 GPU.
//   A tier (one bucket or class) is taken whole while it fits in what is left
//   of `limit`; the tier where `limit` runs out gives its best nodes by (key,
//   rank). The proposal is therefore a prefix of the full scan's order, so the
//   best node that passes the filters among the candidates is the node a full
//   scan would choose; when none passes, the scheduler scans every node.
//
// Example: a 1-GPU task on 8-GPU nodes where node 7 has 1 free GPU, nodes 3
// and 9 have 2, the rest 0 or 8: candidates are 7 (key 0), 3, 9 (key 1), then
// the lowest-ranked nodes with 3, 4, ... free GPUs up to 8 nodes in all.
#pragma once

#include <cstdint>
#include <optional>

#include "berth/framework/cycle.h"

namespace berth::plugins {

// The binpack key of placing `req` on `node` (lower is tighter), or nullopt
// when the node's GPUs cannot hold the task (CPU and memory not considered).
std::optional<int64_t> BinpackKey(const state::ClusterState& state, const framework::TaskRequest& req, NodeId node);

}  // namespace berth::plugins
