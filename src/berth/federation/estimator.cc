// The finish-time and cost estimate of the global dispatcher (estimator.h).
#include "berth/federation/estimator.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace berth::federation {
namespace {

// The job's GPUs, tasks and largest task.
struct Shape {
  int64_t gpus = 0;
  int32_t tasks = 0;
  int32_t task_gpus = 0;
};

Shape ShapeOf(const job::JobSpec& j) {
  Shape s;
  for (const auto& g : j.groups) {
    const int32_t per = std::max(g.gpus, g.is_sharing() ? 1 : 0);
    s.gpus += int64_t{g.gang_min()} * per;
    s.tasks += g.gang_min();
    s.task_gpus = std::max(s.task_gpus, per);
  }
  return s;
}


bool InList(const std::vector<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

TimeUs TransferTime(const Link& l, MiB mib) {
  const double bits = static_cast<double>(mib) * 1024.0 * 1024.0 * 8.0;
  return SecondsToUs(bits / (l.bandwidth_gbps * 1e9)) + l.rtt;
}

}  // namespace

InFlightUse InFlightOn(const EstimateContext& ctx, int32_t m, size_t types) {
  InFlightUse u;
  u.gpus.assign(types, 0);
  u.blocks.assign(types, {});
  for (const auto& f : ctx.in_flight[m]) {
    u.total_gpus += f.gpus;
    const bool typed = f.type >= 0 && f.type < static_cast<int32_t>(types);
    (typed ? u.gpus[f.type] : u.untyped_gpus) += f.gpus;
    for (size_t k = 0; k < kBlockSizes.size(); ++k) {
      const int64_t per = (std::max(1, f.task_gpus) + kBlockSizes[k] - 1) / kBlockSizes[k];
      (typed ? u.blocks[f.type][k] : u.untyped_blocks[k]) += per * f.tasks;
    }
  }
  return u;
}

bool TypeAccepted(const job::JobSpec& j, const cluster::Cluster& c, GpuTypeId t) {
  for (const auto& g : j.groups) {
    if (g.gpus == 0 || g.gpu_type_spec.empty()) continue;
    cluster::Cluster::TypeSetParse p = c.ParseTypeSet(g.gpu_type_spec);
    if (p.unknown || !p.set.Accepts(t)) return false;
  }
  return true;
}

int32_t JobDataset(const Federation& fed, const job::JobSpec& j, int64_t job_key) {
  if (!j.dataset.empty()) {
    auto it = fed.dataset_index.find(j.dataset);
    if (it != fed.dataset_index.end()) return it->second;
  }
  auto t = fed.tenant_datasets.find(j.tenant);
  if (t == fed.tenant_datasets.end() || t->second.empty()) return -1;
  return t->second[Mix(static_cast<uint64_t>(job_key) + 0x9e3779b97f4a7c15ULL) % t->second.size()];
}

bool MemberAllowed(const EstimateContext& ctx, const job::JobSpec& j, int32_t m) {
  const Federation& fed = *ctx.fed;
  const Member& mem = fed.members[m];
  const std::string& region = fed.regions[mem.region];
  if (!j.regions.empty() && !InList(j.regions, region)) return false;
  if (InList(j.avoid_regions, region)) return false;
  const Shape s = ShapeOf(j);
  if (s.gpus == 0) return true;
  const cluster::Cluster& c = *mem.cluster;
  const std::vector<TypeDigest>& cap = (*ctx.capacity)[m];
  const int b = BlockIndex(std::max(1, s.task_gpus));
  for (size_t t = 0; t < c.gpu_types().size() && t < cap.size(); ++t) {
    if (!TypeAccepted(j, c, GpuTypeId(static_cast<int32_t>(t)))) continue;
    if (cap[t].total >= s.gpus && cap[t].fit[b] >= s.tasks && (*ctx.speed)[m][t] > 0) return true;
  }
  return false;
}

DataMove PlanData(const EstimateContext& ctx, int32_t ds, int32_t m) {
  DataMove d;
  d.ready = ctx.now;
  if (ds < 0) return d;
  const Dataset& set = ctx.fed->datasets[ds];
  const int32_t dst = ctx.fed->members[m].region;
  if (set.size_mib == 0 || std::find(set.regions.begin(), set.regions.end(), dst) != set.regions.end()) return d;
  d.streamed = set.read == ReadPattern::kStreamed;
  d.mib = set.size_mib;
  TimeUs best = std::numeric_limits<TimeUs>::max();
  for (int32_t src : set.regions) {
    const Link& l = ctx.fed->link(src, dst);
    const TimeUs start = d.streamed ? ctx.now : std::max(ctx.now, (*ctx.link_busy)[src][dst]);
    const TimeUs end = start + TransferTime(l, set.size_mib);
    if (end < best || (end == best && l.egress_usd_per_gb < d.egress_usd)) {
      best = end;
      d.from_region = src;
      d.transfer = TransferTime(l, set.size_mib);
      d.ready = end;
      d.egress_usd = static_cast<double>(set.size_mib) / 1024.0 * l.egress_usd_per_gb;
    }
  }
  return d;
}

DataMove PlanCheckpoint(const EstimateContext& ctx, const Checkpoint& c, int32_t m, const DataMove* after) {
  DataMove d;
  d.ready = ctx.now;
  const int32_t dst = ctx.fed->members[m].region;
  if (c.region < 0 || c.mib <= 0 || c.region == dst) return d;
  const Link& l = ctx.fed->link(c.region, dst);
  TimeUs start = std::max(ctx.now, (*ctx.link_busy)[c.region][dst]);
  if (after != nullptr && after->from_region == c.region && !after->streamed) start = std::max(start, after->ready);
  d.from_region = c.region;
  d.mib = c.mib;
  d.transfer = TransferTime(l, c.mib);
  d.ready = start + d.transfer;
  d.egress_usd = static_cast<double>(c.mib) / 1024.0 * l.egress_usd_per_gb;
  return d;
}

Estimate EstimateOn(const EstimateContext& ctx, const job::JobSpec& j, int32_t ds, int32_t m, CardChoice choice,
                    const Checkpoint& ckpt) {
  Estimate e;
  e.member = m;
  const Federation& fed = *ctx.fed;
  const Member& mem = fed.members[m];
  const Digest& v = ctx.views[m];
  e.delay = fed.link(fed.dispatcher_region, mem.region).rtt / 2;
  const Shape s = ShapeOf(j);
  const int b = BlockIndex(std::max(1, s.task_gpus));
  const cluster::Cluster& c = *mem.cluster;
  // In-flight jobs: their GPUs and blocks come off the digest's free capacity.
  const InFlightUse used = InFlightOn(ctx, m, v.types.size());
  const int64_t inflight_gpus = used.total_gpus;
  const std::vector<int64_t>& type_taken = used.gpus;
  const std::vector<std::array<int64_t, 4>>& fit_taken = used.blocks;
  // The fastest accepted type, preferring one that holds the gang now.
  double best_speed = 0, best_now_speed = 0;
  double best_key = 0, best_now_key = 0;  // higher is better: speed, or work per dollar
  int32_t best = -1, best_now = -1;
  for (size_t t = 0; t < c.gpu_types().size(); ++t) {
    const GpuTypeId type(static_cast<int32_t>(t));
    if (!TypeAccepted(j, c, type)) continue;
    const double sp = (*ctx.speed)[m][t];
    if (sp <= 0) continue;
    int64_t total = 0;
    if (t < v.types.size()) total = v.types[t].total;
    if (v.version == 0) total = 1;  // no digest yet: assume the type exists
    if (total == 0) continue;
    const double price = mem.Price(c.gpu_types()[t].name);
    const double key = choice == CardChoice::kFastest ? sp : sp / std::max(1e-9, price);
    if (key > best_key) best_key = key, best_speed = sp, best = static_cast<int32_t>(t);
    const bool stale = m < static_cast<int32_t>(ctx.stale.size()) && ctx.stale[m];
    if (t < v.types.size() && v.version > 0 && !stale) {
      const int64_t free = v.types[t].free - type_taken[t];
      const int64_t fit = v.types[t].fit[b] - fit_taken[t][b];
      if (free >= s.gpus && fit >= s.tasks && key > best_now_key)
        best_now_key = key, best_now_speed = sp, best_now = static_cast<int32_t>(t);
    }
  }
  e.feasible = best >= 0;
  if (!e.feasible) return e;
  e.data = PlanData(ctx, ds, m);
  e.ckpt = PlanCheckpoint(ctx, ckpt, m, &e.data);
  const double dur_s = UsToSeconds(std::max<TimeUs>(0, j.duration));
  if (s.gpus == 0) {
    e.fits_now = true;
    e.type = best;
    e.run = j.duration < 0 ? 0 : j.duration;
  } else if (best_now >= 0) {
    e.fits_now = true;
    e.type = best_now;
    e.run = SecondsToUs(dur_s / best_now_speed);
  } else {
    e.type = best;
    e.run = SecondsToUs(dur_s / best_speed);
    // GPUs that must free up: the queue ahead plus this job, beyond what is free now.
    const int64_t free_now = std::max<int64_t>(0, v.free_gpus - inflight_gpus);
    int64_t need = v.queue_gpus + s.gpus - free_now;
    TimeUs at = -1;
    int64_t freed = 0;
    for (const auto& r : v.releases) {
      freed += r.gpus;
      if (freed >= need) {
        at = r.at;
        break;
      }
    }
    if (at < 0) {
      const double cap = static_cast<double>(std::max<int64_t>(1, v.total_gpus));
      const TimeUs last = v.releases.empty() ? ctx.now : v.releases.back().at;
      at = std::max(ctx.now, last) + SecondsToUs((v.queue_work_gpu_s + static_cast<double>(s.gpus) * dur_s) / cap);
    }
    e.wait = std::max<TimeUs>(0, at - ctx.now);
  }
  if (e.data.streamed) {
    e.run = std::max(e.run, e.data.transfer);
  }
  const TimeUs ready = e.staged_ready();
  e.finish = std::max(ctx.now + e.delay + e.wait, ready) + e.run;
  const std::string& type_name = c.gpu_types()[e.type].name;
  e.gpu_usd = static_cast<double>(s.gpus) * UsToSeconds(e.run) / 3600.0 * mem.Price(type_name);
  return e;
}

}  // namespace berth::federation
