// The fit filter: CPU and memory fit what is left on the node, the node's GPU
// type is accepted, and the node has `gpus` GPUs each with at least
// `milli_per_gpu` free (for whole-GPU tasks: that many completely free GPUs).
// A node without GPUs rejects every GPU task. A task with gpu_memory_mib
// needs GPUs whose type has that much memory and, for a share, a GPU whose
// unallocated memory holds it (ClusterState::GpuMemoryFits). Exposed for reuse by plugins
// that need the same test.
#pragma once

#include "berth/framework/cycle.h"

namespace berth::plugins {

bool TaskFitsNode(const state::ClusterState& state, const framework::TaskRequest& req, NodeId node);


}  // namespace berth::plugins
