// FGD's typical pods (Weng et al., ATC'23): the most frequent pod shapes of a
// workload, each with its frequency. They define what counts as a fragment:
// free GPU capacity that the typical pods cannot use.
//
// A shape is (CPU milli, GPU milli per GPU, GPU count, GPU spec as written);
// memory is ignored; CPU-only pods count too (milli 0, count 0). Shapes are
// sorted by count, most frequent first (ties: by shape, descending: CPU, then
// milli, then count, then spec), and taken from the top until they cover at
// least `coverage_percent` of all pods; their frequencies are then divided by
// the covered share so that they sum to 1. The original simulator computes
// them once, from the trace as read (before any shuffling or resampling).
//
//   TypicalPods t = ComputeTypicalPods(trace.jobs);
//   // openb default trace: 35 shapes covering 95.26% of 8,152 pods
//   for (const TypicalPod& p : t.pods) use(p.shape, p.weight);
#pragma once

#include <compare>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "berth/common/quantity.h"
#include "berth/framework/workload_facts.h"
#include "berth/job/job.h"

namespace berth::plugins::fgd {

// The shape of a pod (framework::TaskShape: CPU milli, milli per GPU, GPU
// count, spec; ordered as the original breaks ties).
using PodShape = framework::TaskShape;

// The shape of each task of a group.
PodShape ShapeOf(const job::TaskGroup& group);

struct TypicalPod {
  PodShape shape;
  int64_t count = 0;  // pods of this shape in the workload
  double weight = 0;  // frequency among the typical pods; the weights sum to 1
};

struct TypicalPods {
  std::vector<TypicalPod> pods;  // most frequent first
  int64_t total_pods = 0;        // pods in the workload (every task of every group)
  int64_t covered_pods = 0;      // pods whose shape is typical
  double coverage() const { return total_pods > 0 ? static_cast<double>(covered_pods) / total_pods : 0; }
};

// The typical pods of a workload. `coverage_percent` in 1..100; 95 is what the
// FGD paper's experiments use. An empty workload gives no typical pods.
TypicalPods ComputeTypicalPods(std::span<const job::JobSpec> workload, int coverage_percent = 95);
// The same from the workload's facts (its tasks per shape), as gathered on a
// streamed trace's first read: equal to the above on the same jobs.
TypicalPods ComputeTypicalPods(const framework::WorkloadFacts& facts, int coverage_percent = 95);

}  // namespace berth::plugins::fgd
