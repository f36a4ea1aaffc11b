// Per-tenant figures of a replay.
#include "berth/sim/tenant_figures.h"

#include <algorithm>
#include <bit>
#include <map>
#include <string>

#include "berth/common/bits.h"

namespace berth::sim {
namespace {

struct Finished {
  double jct_s = 0;
  double duration_s = 0;
  double gpus = 0;
};

struct Acc {
  std::string queue;
  bool has_queue = false;
  double guarantee_share = 0;
  double entitled_unit_seconds = -1;  // the leaf's integral of its entitlement (-1: flat)
  double ledger_capacity = 0;         // in the tree's unit
  bool normalized = false;
  double ref_seconds = 0;  // reference GPU-seconds received
  int64_t jobs = 0;
  std::vector<double> jct, delay;
  std::vector<Finished> finished;
  double gpu_seconds = 0;
  int64_t preemptions = 0;
  double lost_gpu_seconds = 0;
};

// The queue's guarantee as a share of the ledger's capacity (both in its unit).
double GuaranteeShare(const tenancy::Ledger& ledger, int32_t q) {
  const tenancy::QueueNode& node = ledger.tree().node(q);
  const int32_t all = ledger.all_types_dim();
  const double cap = static_cast<double>(ledger.capacity(all));
  if (cap <= 0) return 0;
  if (node.has_quota[all]) return static_cast<double>(ledger.guarantee(q, all)) / cap;
  int64_t sum = 0;
  for (int32_t d = 0; d < all; ++d) sum += ledger.guarantee(q, d);
  return static_cast<double>(sum) / cap;
}

int64_t HeldMilli(const scheduler::JobRecord& rec) {
  int64_t milli = 0;
  for (const auto& p : rec.placements) milli += int64_t{PopCount(p.alloc.gpu_mask)} * p.alloc.milli_per_gpu;
  return milli;
}

}  // namespace

EndedJob EndedJob::Of(const scheduler::JobRecord& rec) {
  EndedJob e;
  e.kept = true;
  e.state = static_cast<uint8_t>(rec.state);
  e.verdict_code = static_cast<uint8_t>(rec.last_verdict.code);
  e.waited_for_budget = rec.waited_for_budget;
  e.queue = rec.queue;
  e.preemptions = rec.preemptions;
  e.restarts = rec.restarts;
  e.best_effort_starts = rec.best_effort_starts;
  e.over_budget_starts = rec.over_budget_starts;
  e.best_effort_evictions = rec.best_effort_evictions;
  e.first_start_time = rec.first_start_time;
  e.finish_time = rec.finish_time;
  e.attained_gpu_seconds = rec.attained_gpu_seconds;
  e.attained_ref_seconds = rec.attained_ref_seconds;
  e.lost_gpu_seconds = rec.lost_gpu_seconds;
  return e;
}

void EndedJob::Into(scheduler::JobRecord& rec) const {
  rec.state = static_cast<job::JobState>(state);
  rec.last_verdict.code = static_cast<framework::VerdictCode>(verdict_code);
  rec.waited_for_budget = waited_for_budget;
  rec.queue = queue;
  rec.preemptions = preemptions;
  rec.restarts = restarts;
  rec.best_effort_starts = best_effort_starts;
  rec.over_budget_starts = over_budget_starts;
  rec.best_effort_evictions = best_effort_evictions;
  rec.first_start_time = first_start_time;
  rec.finish_time = finish_time;
  rec.start_time = -1;
  rec.attained_gpu_seconds = attained_gpu_seconds;
  rec.attained_ref_seconds = attained_ref_seconds;
  rec.lost_gpu_seconds = lost_gpu_seconds;
  rec.placements.clear();
  rec.ref_charge = 0;
}

void FillTenantFigures(const ReplayRecords& in, PolicyResult& r) {
  std::map<std::string, Acc> by_tenant;  // ordered: tenants by name
  const size_t n = in.jobs.jobs.size();
  for (size_t i = 0; i < n; ++i) {
    if (in.route[i] < -1) continue;  // a workflow stage attempt never released: not a job of the run
    const JobFacts& spec = in.jobs.jobs[i];
    Acc& acc = by_tenant[in.jobs.tenant(i)];
    ++acc.jobs;
    if (in.route[i] < 0) continue;
    const scheduler::Scheduler& sched = *in.schedulers[in.route[i]];
    const scheduler::JobRecord* rec = in.Record(i);
    if (rec == nullptr) continue;
    if (!acc.has_queue && rec->queue >= 0) {
      acc.has_queue = true;
      acc.queue = sched.ledger().tree().node(rec->queue).name;
      acc.guarantee_share = GuaranteeShare(sched.ledger(), rec->queue);
      if (sched.ledger().reachable_entitlement()) {
        acc.entitled_unit_seconds = sched.ledger().entitled_seconds(rec->queue);
        acc.ledger_capacity = static_cast<double>(sched.ledger().capacity(sched.ledger().all_types_dim()));
        acc.normalized = sched.ledger().normalized();
      }
    }
    if (rec->first_start_time >= 0) acc.delay.push_back(UsToSeconds(rec->first_start_time - spec.submit_time));
    if (rec->state == job::JobState::kSucceeded) {
      const double jct = UsToSeconds(rec->finish_time - spec.submit_time);
      acc.jct.push_back(jct);
      acc.finished.push_back({jct, std::max(1.0, UsToSeconds(std::max<TimeUs>(0, spec.duration))),
                              std::max(1e-3, static_cast<double>(spec.milli_gpu) / kMilliPerGpu)});
    }
    acc.gpu_seconds += rec->attained_gpu_seconds;
    acc.ref_seconds += rec->attained_ref_seconds;
    if (rec->state == job::JobState::kRunning) {
      acc.gpu_seconds += static_cast<double>(HeldMilli(*rec)) / kMilliPerGpu * UsToSeconds(in.end - rec->start_time);
      acc.ref_seconds += static_cast<double>(rec->ref_charge) / kMilliPerGpu * UsToSeconds(in.end - rec->start_time);
    }
    acc.preemptions += rec->preemptions;
    acc.lost_gpu_seconds += rec->lost_gpu_seconds;
  }
  const double cluster_gpus = static_cast<double>(in.cluster.total_milli_gpu()) / kMilliPerGpu;
  double cluster_ref = 0;  // reference GPUs of the cluster
  if (in.speeds) {
    for (const auto& node : in.cluster.nodes())
      if (node.gpu_count > 0)
        cluster_ref += static_cast<double>(tenancy::ScaleMilli(int64_t{node.gpu_count} * kMilliPerGpu,
                                                               in.speeds->CapacityPerMillion(node.gpu_type))) /
                       kMilliPerGpu;
  }
  const double span_s = UsToSeconds(in.end - in.start);
  const double equal_split = by_tenant.empty() ? 0 : cluster_gpus / static_cast<double>(by_tenant.size());
  r.tenants.clear();
  for (auto& [tenant, acc] : by_tenant) {
    TenantResult t;
    t.tenant = tenant;
    t.queue = acc.queue;
    t.jobs = acc.jobs;
    t.jobs_finished = static_cast<int64_t>(acc.jct.size());
    t.jct_s = Summarize(std::move(acc.jct));
    t.queue_delay_s = Summarize(std::move(acc.delay));
    t.gpu_share = cluster_gpus > 0 && span_s > 0 ? acc.gpu_seconds / (cluster_gpus * span_s) : 0;
    t.guarantee_share = acc.guarantee_share;
    const double guarantee_gpus = acc.guarantee_share * cluster_gpus;  // the same share of the GPUs
    t.fair_gpus = guarantee_gpus > 0 ? guarantee_gpus : equal_split;
    if (in.speeds && cluster_ref > 0 && span_s > 0) {
      t.normalized_share = acc.ref_seconds / (cluster_ref * span_s);
      t.normalized_entitlement_ratio = t.guarantee_share > 0 ? t.normalized_share / t.guarantee_share : -1;
    }
    if (acc.entitled_unit_seconds >= 0 && acc.ledger_capacity > 0 && span_s > 0) {
      t.entitled_share = acc.entitled_unit_seconds / (acc.ledger_capacity * span_s);
      const double received = acc.normalized ? t.normalized_share : t.gpu_share;
      t.entitled_ratio = t.entitled_share > 0 && received >= 0 ? received / t.entitled_share : -1;
    }
    std::vector<double> rho;
    rho.reserve(acc.finished.size());
    for (const Finished& f : acc.finished) {
      const double isolated = f.duration_s * std::max(1.0, t.fair_gpus > 0 ? f.gpus / t.fair_gpus : 1.0);
      rho.push_back(f.jct_s / isolated);
    }
    t.rho = Summarize(std::move(rho));
    t.preemptions = acc.preemptions;
    t.gpu_hours_lost = acc.lost_gpu_seconds / 3600.0;
    r.tenants.push_back(std::move(t));
  }
}

void FillBudgetFigures(const ReplayRecords& in, PolicyResult& r) {
  std::map<std::string, BudgetResult> by_queue;
  for (const scheduler::Scheduler* sched : in.schedulers) {
    const tenancy::Ledger& ledger = sched->ledger();
    if (!ledger.has_budgets()) continue;
    for (int32_t q = 0; q < ledger.tree().size(); ++q) {
      const tenancy::BudgetSpec* b = ledger.budgets().spec(q);
      if (!b) continue;
      BudgetResult& br = by_queue[ledger.tree().node(q).name];
      br.queue = ledger.tree().node(q).name;
      br.unit = ledger.BudgetWord(q);
      br.period = tenancy::PeriodName(*b);
      br.when_spent = tenancy::WhenSpentName(b->when_spent);
      br.amount = static_cast<double>(b->amount) / 1e6;
      br.spent_total += static_cast<double>(ledger.budgets().TotalSpent(q, in.end)) / 1e6;
      br.spent_period += static_cast<double>(ledger.budgets().Spent(q, in.end)) / 1e6;
      br.exhausted_at_end = br.exhausted_at_end || ledger.budgets().IsSpent(q, in.end);
    }
  }
  if (by_queue.empty()) {
    r.budgets.clear();
    return;
  }
  for (size_t i = 0; i < in.jobs.jobs.size(); ++i) {
    if (in.route[i] < 0) continue;
    const scheduler::Scheduler& sched = *in.schedulers[in.route[i]];
    const scheduler::JobRecord* rec = in.Record(i);
    if (rec == nullptr || rec->queue < 0) continue;
    const tenancy::QueueTree& tree = sched.ledger().tree();
    for (int32_t q = rec->queue; q >= 0; q = tree.node(q).parent) {
      if (!sched.ledger().budgets().spec(q)) continue;
      BudgetResult& br = by_queue[tree.node(q).name];
      br.starts += rec->first_start_time >= 0 ? 1 + rec->preemptions + rec->restarts : 0;
      br.best_effort_starts += rec->best_effort_starts;
      br.over_budget_starts += rec->over_budget_starts;
      br.evictions += rec->preemptions;
      br.best_effort_evictions += rec->best_effort_evictions;
      br.jobs_waited_for_budget += rec->waited_for_budget ? 1 : 0;
    }
  }
  r.budgets.clear();
  for (auto& [name, br] : by_queue) r.budgets.push_back(std::move(br));
}

}  // namespace berth::sim
