// The backfill plugin: reservations for blocked jobs, admission of the jobs
// behind them, and the figures of how predictions held.
#include "berth/plugins/backfill/backfill.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstdio>

#include "berth/common/bits.h"

namespace berth::plugins::backfill {
namespace {

constexpr int32_t kMaxReservations = 32;  // one bit each in a node mask

std::string Seconds(TimeUs t) {
  char buf[48];
  if (t % kUsPerSecond == 0) {
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(t / kUsPerSecond));
  } else {
    std::snprintf(buf, sizeof buf, "%.3fs", UsToSeconds(t));
  }
  return buf;
}

std::string Label(const job::JobSpec& job) {
  if (!job.name.empty()) return job.name;
  std::string label = "#";
  label += std::to_string(job.id.value());
  return label;
}

// Can some GPU task of `job` sit on a GPU type the demand accepts?
bool TypesOverlap(const job::JobSpec& job, const GpuDemand& demand) {
  for (const auto& g : job.groups) {
    if (g.gpus <= 0) continue;
    for (const auto& d : demand.groups)
      if (g.gpu_types.empty() || d.types.empty() || (g.gpu_types.bits() & d.types.bits()) != 0) return true;
  }
  return false;
}

}  // namespace

StatusOr<BackfillOptions> BackfillOptions::FromArgs(const framework::PluginArgs& args) {
  BackfillOptions o;
  BERTH_ASSIGN_OR_RETURN(o.predictor, RuntimePredictorOptions::FromArgs(args));
  for (const auto& [key, value] : args) {
    if (key == "quantile" || key == "window" || key == "min_samples" || key == "default_runtime_s") continue;
    if (key != "reservations") return InvalidArgument("backfill: unknown argument '" + key + "'");
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), o.reservations);
    if (ec != std::errc() || p != value.data() + value.size() || o.reservations < 1 ||
        o.reservations > kMaxReservations)
      return InvalidArgument("backfill: reservations must be an integer in 1.." + std::to_string(kMaxReservations) +
                             ", not '" + value + "'");
  }
  return o;
}

BackfillPlugin::BackfillPlugin(BackfillOptions options) : options_(options), predictor_(options.predictor) {}

TimeUs BackfillPlugin::PredictedEnd(const framework::RunningJob& r) {
  auto it = predicted_.find(r.spec->id);
  const TimeUs predicted = it != predicted_.end() ? it->second : predictor_.Predict(*r.spec).runtime;
  const TimeUs remaining = std::max<TimeUs>(predicted - r.work_done, 0);
  if (r.run_start + remaining > now_) return r.run_start + remaining;
  // Past its prediction: twice as long, then four times, ...
  TimeUs span = std::max<TimeUs>(remaining, kUsPerSecond);
  while (r.run_start + span <= now_) span *= 2;
  return r.run_start + span;
}

void BackfillPlugin::BuildTimeline(const framework::SchedulerView& view) {
  const state::ClusterState& state = view.state;
  const cluster::Cluster& cl = state.cluster();
  const int32_t n = cl.num_nodes();
  timeline_.type.resize(n);
  timeline_.free_now.resize(n);
  timeline_.rank.resize(n);
  timeline_.releases.clear();
  for (int32_t i = 0; i < n; ++i) {
    const NodeId node(i);
    timeline_.type[i] = cl.node(node).gpu_count > 0 ? cl.node(node).gpu_type : GpuTypeId();
    timeline_.free_now[i] = state.up(node) ? state.full_free_gpus(node) : 0;
    timeline_.rank[i] = view.node_rank.empty() ? i : view.node_rank[i];
  }
  for (const framework::RunningJob& r : view.running) {
    const TimeUs end = PredictedEnd(r);
    for (const framework::TaskPlacement& p : r.placements) {
      if (p.alloc.milli_per_gpu != kMilliPerGpu || p.alloc.gpu_mask == 0 || !state.up(p.alloc.node)) continue;
      timeline_.releases.push_back({end, p.alloc.node.value(), PopCount(p.alloc.gpu_mask)});
    }
  }
  timeline_.Prepare();
  timeline_valid_ = true;
  timeline_state_ = {state.free_full_gpus_total(), state.allocated_milli(), state.num_tasks()};
}

bool BackfillPlugin::TimelineCurrent(const framework::SchedulerView& view) const {
  if (!timeline_valid_) return false;
  const state::ClusterState& state = view.state;
  if (timeline_state_ != std::array<int64_t, 3>{state.free_full_gpus_total(), state.allocated_milli(), state.num_tasks()})
    return false;
  return timeline_.releases.empty() || timeline_.releases.front().time > now_;
}

void BackfillPlugin::BeginPass(const framework::SchedulerView& view) {
  now_ = view.now;
  for (const Reservation& r : reservations_)
    for (const NodeGpus& g : r.nodes) node_bits_[g.node] = 0;
  reservations_.clear();
  off_counts_.clear();
  node_bits_.resize(view.state.cluster().num_nodes(), 0);
  admitted_ = {};
  restricted_job_ = JobId();
  restricted_bits_ = 0;
}

void BackfillPlugin::OnBlocked(const job::JobSpec& job, const framework::Verdict& verdict,
                               const framework::SchedulerView& view) {
  if (static_cast<int32_t>(reservations_.size()) >= options_.reservations) return;
  if (verdict.code == framework::VerdictCode::kUnresolvable || verdict.code == framework::VerdictCode::kError) return;
  for (const Reservation& r : reservations_)
    if (r.job == job.id) return;
  GpuDemand demand = GpuDemand::Of(job);
  if (demand.empty()) return;
  if (!TimelineCurrent(view)) BuildTimeline(view);
  const TimeUs runtime = predictor_.Predict(job).runtime;
  std::vector<Hold> holds;
  holds.reserve(reservations_.size());
  for (const Reservation& r : reservations_) holds.push_back({r.start, r.end, r.nodes});
  std::optional<ReservationPlan> plan = EarliestStart(timeline_, demand, now_, runtime, holds);
  // Fits now (blocked by something else than whole GPUs), or never fits.
  if (!plan || plan->start <= now_) return;
  const uint32_t bit = uint32_t{1} << reservations_.size();
  for (const NodeGpus& g : plan->nodes) node_bits_[g.node] |= bit;
  reservations_.push_back({job.id, "the reservation of job " + Label(job) + " at t=" + Seconds(plan->start),
                           plan->start, plan->start + runtime, std::move(demand), std::move(plan->nodes), plan->extra});
  ++reservations_made_;
  auto [it, inserted] = reserved_.try_emplace(job.id);
  if (inserted) it->second.first_shadow = plan->start;
}

framework::Verdict BackfillPlugin::Admit(const job::JobSpec& job, const state::ClusterState& state, TimeUs now) {
  admitted_ = {job.id, 0, 0};
  restricted_job_ = job.id;
  restricted_bits_ = 0;
  if (reservations_.empty()) return framework::Verdict::Success();
  const TimeUs end = now + PredictPending(job);
  const int64_t gpus = job.total_gpus();
  uint32_t spare_bits = 0;
  for (size_t i = 0; i < reservations_.size(); ++i) {
    const Reservation& r = reservations_[i];
    if (r.job == job.id || gpus == 0 || end <= r.start || !TypesOverlap(job, r.demand)) continue;
    if (gpus > r.spare) {
      return framework::Verdict::Wait(
          std::string(kName), "would delay " + r.what + " (predicted to run until t=" + Seconds(end) + " on " + std::to_string(gpus) +
                                  " GPUs; " + std::to_string(std::max<int64_t>(r.spare, 0)) + " spare then)");
    }
    spare_bits |= uint32_t{1} << i;
  }
  if (spare_bits != 0 && used_as_filter_ && !FitsOffReserved(job, state, spare_bits)) {
    const Reservation& r = reservations_[std::countr_zero(spare_bits)];
    return framework::Verdict::Wait(std::string(kName), "would delay " + r.what + " (fits now only on its nodes)");
  }
  admitted_.spare_bits = spare_bits;
  admitted_.gpus = gpus;
  restricted_bits_ = spare_bits;
  return framework::Verdict::Success();
}

bool BackfillPlugin::FitsOffReserved(const job::JobSpec& job, const state::ClusterState& state, uint32_t bits) {
  const cluster::Cluster& cl = state.cluster();
  bool have_nodes = false;
  for (const auto& g : job.groups) {
    if (g.gpus <= 0 || g.is_sharing() || g.gang_min() <= 0) continue;
    auto cached = std::find_if(off_counts_.begin(), off_counts_.end(), [&](const OffCount& c) {
      return c.gpus == g.gpus && c.types == g.gpu_types.bits() && c.bits == bits;
    });
    if (cached == off_counts_.end()) {
      if (!have_nodes) {
        off_nodes_.clear();
        for (size_t i = 0; i < reservations_.size(); ++i)
          if ((bits >> i) & 1)
            for (const NodeGpus& n : reservations_[i].nodes) off_nodes_.push_back(n.node);
        std::sort(off_nodes_.begin(), off_nodes_.end());
        off_nodes_.erase(std::unique(off_nodes_.begin(), off_nodes_.end()), off_nodes_.end());
        have_nodes = true;
      }
      int64_t fit = 0;
      const auto num_types = static_cast<int16_t>(cl.gpu_types().size());
      for (int16_t t = 0; t < num_types; ++t) {
        const GpuTypeId type(t);
        if (!g.gpu_types.Accepts(type)) continue;
        for (int j = g.gpus; j <= state.max_full_free(type); ++j)
          fit += int64_t{state.nodes_with_full_free(type, j).Count()} * (j / g.gpus);
      }
      for (int32_t n : off_nodes_) {
        const NodeId node(n);
        if (state.up(node) && g.gpu_types.Accepts(cl.node(node).gpu_type)) fit -= state.full_free_gpus(node) / g.gpus;
      }
      off_counts_.push_back({g.gpus, g.gpu_types.bits(), bits, fit});
      cached = off_counts_.end() - 1;
    }
    if (cached->fit < g.gang_min()) return false;
  }
  return true;
}

TimeUs BackfillPlugin::PredictPending(const job::JobSpec& job) {
  if (pending_version_ != predictor_.samples_learned()) {
    pending_predictions_.clear();
    pending_version_ = predictor_.samples_learned();
  }
  auto [it, fresh] = pending_predictions_.try_emplace(job.id, 0);
  if (fresh) it->second = predictor_.Predict(job).runtime;
  return it->second;
}

bool BackfillPlugin::Filter(const framework::CycleContext& ctx, const framework::TaskRequest& req,
                            NodeId node) const {
  used_as_filter_ = true;
  if (restricted_bits_ == 0 || ctx.job.id != restricted_job_) return true;
  return (node_bits_[node.value()] & restricted_bits_) == 0;
}

void BackfillPlugin::OnStart(const job::JobSpec& job) {
  timeline_valid_ = false;
  off_counts_.clear();
  predicted_[job.id] = predictor_.Predict(job).runtime;
  if (!reservations_.empty() && admitted_.job == job.id) {
    if (admitted_.spare_bits != 0) {
      ++backfilled_spare_;
      for (size_t i = 0; i < reservations_.size(); ++i)
        if ((admitted_.spare_bits >> i) & 1) reservations_[i].spare -= admitted_.gpus;
    }
    // The reservations it promised to clear by their shadow times.
    std::vector<Promise> promises;
    for (size_t i = 0; i < reservations_.size(); ++i) {
      const Reservation& r = reservations_[i];
      if ((admitted_.spare_bits >> i) & 1 || r.job == job.id || admitted_.gpus == 0 || !TypesOverlap(job, r.demand))
        continue;
      promises.push_back({r.job, r.start});
    }
    if (admitted_.spare_bits == 0 && !promises.empty()) ++backfilled_short_;
    if (!promises.empty()) promises_[job.id] = std::move(promises);
    ++jobs_backfilled_;
  }
  auto it = reserved_.find(job.id);
  if (it != reserved_.end() && it->second.started < 0) it->second.started = now_;
  restricted_job_ = JobId();
  restricted_bits_ = 0;
}

void BackfillPlugin::OnRunEnded(const job::JobSpec& job, TimeUs start, TimeUs end, bool completed) {
  timeline_valid_ = false;
  off_counts_.clear();
  TimeUs predicted = -1;
  if (auto it = predicted_.find(job.id); it != predicted_.end()) {
    predicted = it->second;
    predicted_.erase(it);
  }
  TimeUs runtime = end - start;
  auto partial = partial_.find(job.id);
  if (partial != partial_.end()) runtime += partial->second;
  if (completed) {
    if (partial != partial_.end()) partial_.erase(partial);
    predictor_.Learn(job, runtime);
    if (predicted >= 0) {
      ++runs_predicted_;
      if (runtime > predicted) ++runs_underpredicted_;
    }
  } else {
    partial_[job.id] = runtime;
  }
  auto p = promises_.find(job.id);
  if (p == promises_.end()) return;
  for (const Promise& promise : p->second) {
    if (end <= promise.shadow) continue;
    ++too_short_;
    ReservedStats& s = reserved_[promise.reserved];
    if (s.started >= 0 && s.started <= promise.shadow) continue;  // the reserved job was not waiting
    ++too_short_waiting_;
    s.harmed = true;
    s.harm_from = std::min(s.harm_from, promise.shadow);
    s.harm_until = std::max(s.harm_until, end);
  }
  promises_.erase(p);
}

void BackfillPlugin::Counters(framework::PluginCounters& out) const {
  int64_t started = 0, late = 0, delayed = 0;
  TimeUs late_sum = 0, delay_sum = 0, delay_max = 0;
  for (const auto& [id, s] : reserved_) {
    if (s.started >= 0) {
      ++started;
      if (s.started > s.first_shadow) {
        ++late;
        late_sum += s.started - s.first_shadow;
      }
    }
    if (!s.harmed) continue;
    const TimeUs until = s.started >= 0 ? std::min(s.started, s.harm_until) : s.harm_until;
    const TimeUs d = std::max<TimeUs>(0, until - s.harm_from);
    if (d == 0) continue;
    ++delayed;
    delay_sum += d;
    delay_max = std::max(delay_max, d);
  }
  auto add = [&](const char* name, double v) { out.emplace_back(std::string("backfill.") + name, v); };
  add("reservations", static_cast<double>(reservations_made_));
  add("reserved_jobs", static_cast<double>(reserved_.size()));
  add("reserved_started", static_cast<double>(started));
  add("reserved_late", static_cast<double>(late));
  add("reserved_late_sum_s", UsToSeconds(late_sum));
  add("jobs_backfilled", static_cast<double>(jobs_backfilled_));
  add("backfilled_short", static_cast<double>(backfilled_short_));
  add("backfilled_spare", static_cast<double>(backfilled_spare_));
  add("predictions_too_short", static_cast<double>(too_short_));
  add("too_short_while_waiting", static_cast<double>(too_short_waiting_));
  add("delayed_reserved_jobs", static_cast<double>(delayed));
  add("misprediction_delay_sum_s", UsToSeconds(delay_sum));
  add("misprediction_delay_max_s", UsToSeconds(delay_max));
  add("runs_predicted", static_cast<double>(runs_predicted_));
  add("runs_underpredicted", static_cast<double>(runs_underpredicted_));
}

}  // namespace berth::plugins::backfill
