// Streamed traces: the facts of every job from a first read, the specs from a second.
#include "berth/sim/trace_stream.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "berth/sim/readers/reader_util.h"

namespace berth::sim {
namespace {

int64_t MinGpusOf(const job::JobSpec& j) {
  int64_t n = 0;
  for (const auto& g : j.groups) n += int64_t{g.gang_min()} * g.gpus;
  return n;
}

// Tenant names to indexes, in the order first seen.
class TenantIndex {
 public:
  int32_t Of(const std::string& name, std::vector<std::string>& names) {
    auto [it, fresh] = index_.emplace(name, static_cast<int32_t>(names.size()));
    if (fresh) names.push_back(name);
    return it->second;
  }

 private:
  std::unordered_map<std::string, int32_t> index_;  // looked up, never iterated
};

JobFacts FactsOf(const job::JobSpec& j, int32_t tenant) {
  return JobFacts{j.submit_time, j.duration, j.total_milli_gpu(), MinGpusOf(j), tenant};
}

TimeUs Rescaled(TimeUs t, TimeUs first, double scale) {
  return first + static_cast<TimeUs>(std::llround(static_cast<double>(t - first) / scale));
}

}  // namespace

JobTable JobTable::Of(std::span<const job::JobSpec> jobs) {
  JobTable t;
  t.jobs.reserve(jobs.size());
  TenantIndex index;
  for (const auto& j : jobs) t.jobs.push_back(FactsOf(j, index.Of(j.tenant, t.tenants)));
  return t;
}

Status StreamedTrace::Streamable() const {
  if (!sorted) return FailedPrecondition(path + ": submit times are not in file order");
  if (!head.workflows.empty()) return FailedPrecondition(path + ": the trace has workflows");
  if (elastic) return FailedPrecondition(path + ": the trace has elastic jobs");
  if (service) return FailedPrecondition(path + ": the trace has services");
  return Status::Ok();
}

void StreamedTrace::Rescale(double scale) {
  rate_scale = scale;
  if (scale == 1) return;
  for (JobFacts& f : table.jobs) f.submit_time = Rescaled(f.submit_time, first_submit, scale);
}

StatusOr<StreamedTrace> ScanNativeTrace(const std::string& path, const ReadOptions& read, JobAdjust adjust) {
  BERTH_ASSIGN_OR_RETURN(std::unique_ptr<NativeJobReader> reader, NativeJobReader::Open(path, read));
  StreamedTrace t;
  t.path = path;
  t.read = read;
  t.adjust = std::move(adjust);
  t.head.format = "native";
  TenantIndex tenants;
  framework::WorkloadFacts facts;
  job::JobSpec j;
  while (true) {
    BERTH_ASSIGN_OR_RETURN(const bool more, reader->Next(j));
    if (!more) break;
    if (t.adjust) t.adjust(j);
    if (!t.table.jobs.empty() && j.submit_time < t.table.jobs.back().submit_time) t.sorted = false;
    t.elastic = t.elastic || j.elastic();
    t.service = t.service || j.service.has_value();
    t.first_submit = t.table.jobs.empty() ? j.submit_time : std::min(t.first_submit, j.submit_time);
    t.table.jobs.push_back(FactsOf(j, tenants.Of(j.tenant, t.table.tenants)));
    facts.Add(j);
  }
  t.facts = std::make_shared<const framework::WorkloadFacts>(std::move(facts));
  t.table.jobs.shrink_to_fit();
  t.duplicate_lines = reader->duplicate_lines();
  t.head.report = std::move(reader->report());
  t.head.workflows = std::move(reader->workflows());
  t.head.report.jobs = static_cast<int64_t>(t.table.jobs.size());
  // The end-of-read check of every reader: an error when no job is left.
  if (t.table.jobs.empty()) BERTH_RETURN_IF_ERROR(FinishRead(path, t.head, /*has_header=*/false));
  return t;
}

// Batches of parsed jobs between the read-ahead thread and Take. The thread
// stops after the end of the file, an error (kept as the last item) or when
// the feed is destroyed.
struct JobFeed::Ahead {
  static constexpr size_t kBatch = 256;   // jobs per batch
  static constexpr size_t kBatches = 8;   // batches held at most
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::vector<StatusOr<job::JobSpec>>> full;
  std::vector<StatusOr<job::JobSpec>> taking;  // the batch Take reads from
  size_t at = 0;                               // its next item
  bool ended = false;                          // the thread pushed its last batch
  bool stop = false;
  std::thread thread;
};

JobFeed::JobFeed(const StreamedTrace& trace) : trace_(trace) {}

StatusOr<std::unique_ptr<JobFeed>> JobFeed::Open(const StreamedTrace& trace, bool read_ahead) {
  std::unique_ptr<JobFeed> feed(new JobFeed(trace));
  BERTH_ASSIGN_OR_RETURN(feed->reader_, NativeJobReader::Open(trace.path, trace.read, /*check_names=*/false));
  feed->reader_->SkipLines(trace.duplicate_lines);
  if (!read_ahead) return feed;
  feed->ahead_ = std::make_unique<Ahead>();
  JobFeed* self = feed.get();
  feed->ahead_->thread = std::thread([self] {
    Ahead& a = *self->ahead_;
    bool last = false;
    while (!last) {
      std::vector<StatusOr<job::JobSpec>> batch;
      batch.reserve(Ahead::kBatch);
      while (batch.size() < Ahead::kBatch) {
        job::JobSpec j;
        StatusOr<bool> more = self->ReadNext(j);
        if (!more.ok()) {
          batch.emplace_back(more.status());
          last = true;
          break;
        }
        if (!*more) {
          last = true;
          break;
        }
        batch.emplace_back(std::move(j));
      }
      std::unique_lock<std::mutex> lock(a.mu);
      a.cv.wait(lock, [&] { return a.stop || a.full.size() < Ahead::kBatches; });
      if (a.stop) return;
      a.full.push_back(std::move(batch));
      a.ended = last;
      a.cv.notify_all();
    }
  });
  return feed;
}

JobFeed::~JobFeed() {
  if (!ahead_) return;
  {
    std::lock_guard<std::mutex> lock(ahead_->mu);
    ahead_->stop = true;
  }
  ahead_->cv.notify_all();
  ahead_->thread.join();
}

StatusOr<bool> JobFeed::ReadNext(job::JobSpec& j) {
  BERTH_ASSIGN_OR_RETURN(const bool more, reader_->Next(j));
  if (!more) return false;
  const int64_t i = read_++;
  if (trace_.adjust) trace_.adjust(j);
  if (trace_.rate_scale != 1) j.submit_time = Rescaled(j.submit_time, trace_.first_submit, trace_.rate_scale);
  if (i >= static_cast<int64_t>(trace_.table.jobs.size()) || j.submit_time != trace_.table.jobs[i].submit_time)
    return Internal(trace_.path + ": job " + std::to_string(i) + " has another submit time than on the first read "
                                  "(was the file changed?)");
  return true;
}

StatusOr<job::JobSpec> JobFeed::Take(size_t i) {
  if (next_ > static_cast<int64_t>(i))
    return Internal("streamed trace: job " + std::to_string(i) + " asked for after job " + std::to_string(next_ - 1));
  while (true) {
    job::JobSpec j;
    if (ahead_) {
      Ahead& a = *ahead_;
      if (a.at == a.taking.size()) {
        std::unique_lock<std::mutex> lock(a.mu);
        a.cv.wait(lock, [&] { return !a.full.empty() || a.ended; });
        if (a.full.empty())
          return Internal(trace_.path + ": the file ended before job " + std::to_string(i) + " (was it changed?)");
        a.taking = std::move(a.full.front());
        a.full.pop_front();
        a.at = 0;
        a.cv.notify_all();
        if (a.taking.empty())
          return Internal(trace_.path + ": the file ended before job " + std::to_string(i) + " (was it changed?)");
      }
      StatusOr<job::JobSpec>& item = a.taking[a.at++];
      if (!item.ok()) {
        --a.at;  // the same error on the next call
        return item.status();
      }
      j = std::move(item).value();
    } else {
      BERTH_ASSIGN_OR_RETURN(const bool more, ReadNext(j));
      if (!more)
        return Internal(trace_.path + ": the file ended before job " + std::to_string(i) + " (was it changed?)");
    }
    if (next_++ == static_cast<int64_t>(i)) return j;
  }
}

}  // namespace berth::sim
