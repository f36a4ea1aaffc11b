// Replaying a trace without holding its jobs. The replay reads a few facts of
// every job before and after it runs (JobFacts: submit time, duration, GPUs,
// tenant); the full spec is needed only while the job is alive. A streamed
// trace keeps the facts (40 bytes a job) from a first read of the file and
// reads each spec again as its submit time comes (a second read, in file
// order), so a replay of millions of jobs holds the specs of the jobs alive
// instead of the whole list (JobSpec is about 650 bytes with its task group).
//
// The first read also gathers the workload's facts that plugins read before
// the run (framework::WorkloadFacts: the lowest priority, the tasks per
// shape), so the preemption policies, fgd and berth-frag stream too.
//
// Only native traces (JSON lines) whose submit times never decrease in file
// order stream: the arrival order is then the file order. A trace that is not
// sorted, has workflows or jobs timed by their allocation (elastic jobs) is
// replayed from memory instead (Streamable() says why not).
//
//   BERTH_ASSIGN_OR_RETURN(StreamedTrace t, ScanNativeTrace("x40.jsonl", read, adjust));
//   if (t.Streamable().ok()) RunReplay(cluster, t, profile, registry, options);
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "berth/framework/workload_facts.h"
#include "berth/job/job.h"
#include "berth/sim/readers/readers.h"
#include "berth/sim/trace.h"

namespace berth::sim {

// What the replay reads of a job outside its life in the scheduler.
struct JobFacts {
  TimeUs submit_time = 0;
  TimeUs duration = -1;
  int64_t milli_gpu = 0;  // JobSpec::total_milli_gpu()
  int64_t min_gpus = 0;   // GPUs at the gang minimums (a share counts as one GPU)
  int32_t tenant = 0;     // index into JobTable::tenants
};

// The facts of every job of a trace, by trace index, and the tenant names.
struct JobTable {
  std::vector<JobFacts> jobs;
  std::vector<std::string> tenants;  // by JobFacts::tenant, in the order first seen

  const std::string& tenant(size_t i) const { return tenants[jobs[i].tenant]; }
  static JobTable Of(std::span<const job::JobSpec> jobs);
};

// A change the caller makes to every job as it is read (e.g. `berth
// simulate`'s --tenants-from none, --checkpoint-interval, --high-priority);
// applied the same way on both reads. Gets the job with its id (its index).
using JobAdjust = std::function<void(job::JobSpec&)>;

struct StreamedTrace {
  std::string path;
  ReadOptions read;
  JobAdjust adjust;          // may be empty
  double rate_scale = 1;     // submit times become first + (t - first) / rate_scale
  TimeUs first_submit = 0;   // the earliest submit time as read (before rate_scale)
  JobTable table;            // submit times after rate_scale
  Trace head;                // format, report and workflows of the file; no jobs
  // What plugins read of the workload before the run, from the adjusted jobs
  // in file order (as PluginContext::workload would give them); shared by the
  // runs of every policy.
  std::shared_ptr<const framework::WorkloadFacts> facts;
  std::vector<int64_t> duplicate_lines;  // skipped for a name seen before (NativeJobReader)
  bool sorted = true;        // submit times never decrease in file order
  bool elastic = false;      // some job is elastic (its runtime follows its allocation)
  bool service = false;      // some job is a service

  // OK when this trace can be replayed streamed; else why not.
  Status Streamable() const;
  // Sets rate_scale and rescales the facts' submit times.
  void Rescale(double scale);
};

// The first read of a native trace: every job is checked as ReadNative checks
// it (names included), adjusted, and kept as its facts; the workload's facts
// for the plugins are gathered on the way.
StatusOr<StreamedTrace> ScanNativeTrace(const std::string& path, const ReadOptions& read, JobAdjust adjust);

// The jobs of a scanned trace read again, in file order, adjusted and
// rescaled as in the scan. With read-ahead (the default), a thread of the
// feed's own parses the file ahead of the replay, a few batches of jobs at a
// time, so that parsing and scheduling use two cores; the jobs and errors
// are the same either way, in the same order.
class JobFeed {
 public:
  static StatusOr<std::unique_ptr<JobFeed>> Open(const StreamedTrace& trace, bool read_ahead = true);
  ~JobFeed();
  JobFeed(const JobFeed&) = delete;
  JobFeed& operator=(const JobFeed&) = delete;
  // The spec of job `i`; jobs before it that were not taken are passed over.
  // Calls come in increasing `i`.
  StatusOr<job::JobSpec> Take(size_t i);

 private:
  struct Ahead;  // the read-ahead thread and its batches
  explicit JobFeed(const StreamedTrace& trace);
  // The next job of the file, adjusted, rescaled and checked (false: the end).
  StatusOr<bool> ReadNext(job::JobSpec& j);

  const StreamedTrace& trace_;
  std::unique_ptr<NativeJobReader> reader_;
  int64_t read_ = 0;  // jobs ReadNext returned
  int64_t next_ = 0;  // index of the next job Take passes over or returns
  std::unique_ptr<Ahead> ahead_;
};

}  // namespace berth::sim
