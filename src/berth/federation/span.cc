// Splitting a gang across regions and the spanning run's model (span.h).
#include "berth/federation/span.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>

namespace berth::federation {
namespace {

// Tasks of `task_gpus` GPUs member `m` holds on one accepted type: now (its
// digest's free capacity net of the in-flight ledger; 0 when the digest is
// stale) or ever (the empty cluster).
int64_t TasksHeld(const EstimateContext& ctx, const job::JobSpec& j, int32_t m, bool now) {
  const Member& mem = ctx.fed->members[m];
  const cluster::Cluster& c = *mem.cluster;
  const int32_t task_gpus = std::max(1, j.groups.front().gpus);
  const int b = BlockIndex(task_gpus);
  const Digest& v = ctx.views[m];
  if (now && (v.version == 0 || (m < static_cast<int32_t>(ctx.stale.size()) && ctx.stale[m]))) return 0;
  // In-flight jobs take their GPUs and blocks off their type; one sent without a type (to queue) off every type.
  const InFlightUse used = InFlightOn(ctx, m, c.gpu_types().size());
  int64_t best = 0;
  for (size_t t = 0; t < c.gpu_types().size(); ++t) {
    if (!TypeAccepted(j, c, GpuTypeId(static_cast<int32_t>(t))) || (*ctx.speed)[m][t] <= 0) continue;
    const TypeDigest* d = nullptr;
    if (now && t < v.types.size()) d = &v.types[t];
    if (!now && t < ctx.capacity->at(m).size()) d = &(*ctx.capacity)[m][t];
    if (d == nullptr) continue;
    const int64_t free = now ? d->free - used.gpus[t] - used.untyped_gpus : d->total;
    const int64_t fit = d->fit[b] - (now ? used.blocks[t][b] + used.untyped_blocks[b] : 0);
    best = std::max(best, std::min(free / task_gpus, fit));
  }
  return std::max<int64_t>(0, best);
}

struct Candidate {
  int32_t member;
  int32_t region;
  int64_t tasks;  // held now
};

}  // namespace

bool Splittable(const job::JobSpec& j) {
  if (!j.span_regions || j.groups.size() != 1 || j.elastic()) return false;
  const job::TaskGroup& g = j.groups.front();
  return g.gpus >= 1 && !g.is_sharing() && g.count >= 2 && g.gang_min() == g.count;
}

job::JobSpec PartSpec(const job::JobSpec& j, int32_t tasks) {
  job::JobSpec p = j;
  p.groups.front().count = tasks;
  p.groups.front().min_count = -1;
  return p;
}

SpanRing RingOf(const Federation& fed, std::span<const int32_t> regions) {
  SpanRing r;
  r.bandwidth_gbps = std::numeric_limits<double>::max();
  r.intra_gbps = std::numeric_limits<double>::max();
  for (size_t k = 0; k < regions.size(); ++k) {
    const Link& l = fed.link(regions[k], regions[(k + 1) % regions.size()]);
    r.bandwidth_gbps = std::min(r.bandwidth_gbps, l.bandwidth_gbps);
    r.rtt = std::max(r.rtt, l.rtt);
    r.intra_gbps = std::min(r.intra_gbps, fed.link(regions[k], regions[k]).bandwidth_gbps);
  }
  return r;
}

TimeUs SpanRunTime(const Federation& fed, const SpanRing& ring, TimeUs base, int64_t steps) {
  const double f = fed.span.comm_fraction;
  const double ratio = std::max(1.0, ring.intra_gbps / std::max(1e-9, ring.bandwidth_gbps));
  const double stretched = static_cast<double>(std::max<TimeUs>(0, base)) * ((1 - f) + f * ratio);
  return static_cast<TimeUs>(stretched) + std::max<int64_t>(0, steps) * ring.rtt;
}

SpanTraffic PartTraffic(const Federation& fed, std::span<const int32_t> regions, size_t k, int64_t gpus, TimeUs work) {
  SpanTraffic t;
  const double gib = fed.span.gib_per_gpu_hour * static_cast<double>(gpus) * UsToSeconds(std::max<TimeUs>(0, work)) / 3600.0;
  t.bytes = gib * 1024.0 * 1024.0 * 1024.0;
  t.egress_usd = gib * fed.link(regions[k], regions[(k + 1) % regions.size()]).egress_usd_per_gb;
  return t;
}

SpanPlan PlanSpan(const EstimateContext& ctx, const Request& r) {
  SpanPlan plan;
  const job::JobSpec& j = *r.spec;
  const Federation& fed = *ctx.fed;
  const int64_t want = j.groups.front().count;
  const int32_t nm = static_cast<int32_t>(fed.members.size());
  const job::JobSpec one = PartSpec(j, 1);
  // Could a split ever hold it: the largest member of each region, the largest regions first.
  std::vector<int64_t> ever(fed.regions.size(), 0);
  std::vector<Candidate> cands;
  for (int32_t m = 0; m < nm; ++m) {
    if (std::find(r.excluded.begin(), r.excluded.end(), m) != r.excluded.end()) continue;
    if (!MemberAllowed(ctx, one, m)) continue;
    const int32_t region = fed.members[m].region;
    ever[region] = std::max(ever[region], TasksHeld(ctx, one, m, false));
    const bool down = static_cast<size_t>(m) < ctx.down.size() && ctx.down[m];
    const int64_t now = down ? 0 : TasksHeld(ctx, one, m, true);
    if (now > 0) cands.push_back({m, region, std::min(now, want)});
  }
  std::sort(ever.begin(), ever.end(), std::greater<>());
  int64_t ever_sum = 0;
  const size_t max_parts = static_cast<size_t>(std::max(2, fed.span.max_parts));
  for (size_t k = 0; k < ever.size() && k < max_parts; ++k) ever_sum += ever[k];
  plan.could_ever = ever.size() >= 2 && ever[1] > 0 && ever_sum >= want;
  if (!plan.could_ever) return plan;
  // At most 16 candidates, those holding the most tasks now (ties by id).
  std::stable_sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) { return a.tasks > b.tasks; });
  if (cands.size() > 16) cands.resize(16);
  std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) { return a.member < b.member; });

  struct Scored {
    SpanPlan plan;
    SpanRing ring;
    std::vector<int32_t> members;
  };
  std::optional<Scored> best;
  auto better = [](const Scored& a, const Scored& b) {
    if (a.ring.bandwidth_gbps != b.ring.bandwidth_gbps) return a.ring.bandwidth_gbps > b.ring.bandwidth_gbps;
    if (a.ring.rtt != b.ring.rtt) return a.ring.rtt < b.ring.rtt;
    if (a.plan.finish != b.plan.finish) return a.plan.finish < b.plan.finish;
    return a.members < b.members;
  };
  // Scores one set of candidates (distinct regions, enough tasks together).
  auto score = [&](const std::vector<Candidate>& set) {
    std::vector<Candidate> order = set;  // the largest part first (ties by id)
    std::stable_sort(order.begin(), order.end(), [](const Candidate& a, const Candidate& b) { return a.tasks > b.tasks; });
    Scored s;
    int64_t left = want;
    std::vector<int32_t> regions;
    double slowest = 0;
    TimeUs admitted = 0, delay_max = 0, stream = 0;
    for (const Candidate& c : order) {
      const int32_t tasks = static_cast<int32_t>(std::min(left, c.tasks));
      if (tasks <= 0) return;
      left -= tasks;
      Checkpoint share = r.checkpoint;
      share.mib = r.checkpoint.mib * tasks / want;
      SpanPart p{c.member, tasks, EstimateOn(ctx, PartSpec(j, tasks), r.dataset, c.member, CardChoice::kFastest, share)};
      if (!p.estimate.feasible || !p.estimate.fits_now) return;
      const double sp = (*ctx.speed)[c.member][p.estimate.type];
      slowest = slowest == 0 ? sp : std::min(slowest, sp);
      const TimeUs arrive = std::max(ctx.now + p.estimate.delay, p.estimate.staged_ready());
      admitted = std::max(admitted, arrive + p.estimate.delay);
      delay_max = std::max(delay_max, p.estimate.delay);
      if (p.estimate.data.streamed) stream = std::max(stream, p.estimate.data.transfer);
      regions.push_back(c.region);
      s.members.push_back(c.member);
      s.plan.parts.push_back(std::move(p));
    }
    if (left > 0) return;
    s.ring = RingOf(fed, regions);
    const TimeUs go = admitted + delay_max;
    const TimeUs base = SecondsToUs(UsToSeconds(std::max<TimeUs>(0, j.duration)) / std::max(1e-9, slowest));
    s.plan.run = std::max(SpanRunTime(fed, s.ring, base, j.work_steps), stream);
    s.plan.finish = go + s.plan.run;
    for (size_t k = 0; k < s.plan.parts.size(); ++k) {
      const SpanPart& p = s.plan.parts[k];
      const Member& mem = fed.members[p.member];
      const int64_t gpus = int64_t{p.tasks} * j.groups.front().gpus;
      const TimeUs arrive = std::max(ctx.now + p.estimate.delay, p.estimate.staged_ready());
      const double held_h = UsToSeconds(s.plan.finish - arrive) / 3600.0;
      s.plan.cost_usd += static_cast<double>(gpus) * held_h * mem.Price(mem.cluster->gpu_types()[p.estimate.type].name) +
                         p.estimate.data.egress_usd + p.estimate.ckpt.egress_usd +
                         PartTraffic(fed, regions, k, gpus, j.duration).egress_usd;
    }
    s.plan.could_ever = true;
    if (!best || better(s, *best)) best = std::move(s);
  };
  // The fewest parts first: every set of k candidates in distinct regions.
  std::vector<Candidate> set;
  std::function<void(size_t, size_t, int64_t)> walk = [&](size_t from, size_t k, int64_t held) {
    if (set.size() == k) {
      if (held >= want) score(set);
      return;
    }
    for (size_t i = from; i < cands.size(); ++i) {
      bool same_region = false;
      for (const Candidate& c : set) same_region = same_region || c.region == cands[i].region;
      if (same_region) continue;
      set.push_back(cands[i]);
      walk(i + 1, k, held + cands[i].tasks);
      set.pop_back();
    }
  };
  for (size_t k = 2; k <= max_parts && !best; ++k) walk(0, k, 0);
  if (best) plan = std::move(best->plan);
  return plan;
}

}  // namespace berth::federation
