// The allocation policies (see allocation_policy.h).
#include "berth/hetero/allocation_policy.h"

#include <algorithm>
#include <numeric>

#include "berth/hetero/lp.h"

namespace berth::hetero {

Status AllocationPolicyRegistry::Register(const std::string& name, Factory f, std::string description) {
  if (entries_.count(name)) return AlreadyExists("allocation policy '" + name + "' registered twice");
  entries_.emplace(name, std::make_pair(std::move(f), std::move(description)));
  return Status::Ok();
}

StatusOr<std::unique_ptr<AllocationPolicy>> AllocationPolicyRegistry::Create(const std::string& name,
                                                                              const PolicyOptions& o) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    std::string known;
    for (const auto& n : Names()) known += (known.empty() ? "" : ", ") + n;
    return NotFound("unknown policy '" + name + "' for this workload (known: " + known + ")");
  }
  return it->second.first(o);
}

std::vector<std::string> AllocationPolicyRegistry::Names() const {
  std::vector<std::string> out;
  for (const auto& [n, e] : entries_) out.push_back(n);
  return out;
}

std::string AllocationPolicyRegistry::Description(const std::string& name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? std::string() : it->second.second;
}

std::vector<double> BlindShares(std::span<const PolicyJob> jobs, double total) {
  std::vector<double> share(jobs.size(), 0.0);
  double demand = 0, weights = 0;
  for (const auto& j : jobs) demand += j.scale, weights += j.weight;
  if (demand <= total) {
    std::fill(share.begin(), share.end(), 1.0);
    return share;
  }
  // Exact water-filling: x_j = min(1, lambda * w_j / s_j) with
  // sum_j s_j x_j = total. Jobs with the largest w/s reach 1 first; with k of
  // them capped, lambda = (total - their GPUs) / (the others' weights).
  std::vector<size_t> order(jobs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto ratio = [&](size_t i) { return jobs[i].weight / jobs[i].scale; };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return ratio(a) != ratio(b) ? ratio(a) > ratio(b) : a < b;
  });
  double capped_gpus = 0, lambda = total / weights;
  for (size_t k = 0; k < order.size(); ++k) {
    lambda = (total - capped_gpus) / weights;
    if (lambda * ratio(order[k]) < 1.0) break;  // order[k] and the rest stay below 1
    capped_gpus += jobs[order[k]].scale;
    weights -= jobs[order[k]].weight;
  }
  for (size_t i = 0; i < jobs.size(); ++i) share[i] = std::min(1.0, lambda * ratio(i));
  return share;
}

namespace {

double Total(std::span<const double> cap) { return std::accumulate(cap.begin(), cap.end(), 0.0); }

// x[j][t] = share_j * cap_t / total, limited to types the job can run on.
Allocation Spread(std::span<const PolicyJob> jobs, std::span<const double> cap, const std::vector<double>& share) {
  Allocation a;
  const size_t nt = cap.size();
  a.x.assign(jobs.size(), std::vector<double>(nt, 0.0));
  for (size_t j = 0; j < jobs.size(); ++j) {
    double room = 0;
    for (size_t t = 0; t < nt; ++t)
      if (jobs[j].steps_per_s[t] > 0) room += cap[t];
    if (room <= 0) continue;
    for (size_t t = 0; t < nt; ++t)
      if (jobs[j].steps_per_s[t] > 0) a.x[j][t] = share[j] * cap[t] / room;
  }
  return a;
}

class BlindLas final : public AllocationPolicy {
 public:
  std::string_view Name() const override { return "las"; }
  bool HeterogeneityAware() const override { return false; }
  StatusOr<Allocation> Allocate(const PolicyInput& in) override {
    return Spread(in.jobs, in.capacity, BlindShares(in.jobs, Total(in.capacity)));
  }
};

// LP policies differ only in their coefficients and objective.
class LpPolicy final : public AllocationPolicy {
 public:
  using Coef = std::function<std::vector<double>(const PolicyJob&, double blind_tput)>;
  LpPolicy(std::string name, LpObjective obj, Coef coef, bool progress, bool aggregate)
      : name_(std::move(name)), obj_(obj), coef_(std::move(coef)), progress_(progress), aggregate_(aggregate) {}
  std::string_view Name() const override { return name_; }
  bool NeedsProgress() const override { return progress_; }
  StatusOr<Allocation> Allocate(const PolicyInput& in) override {
    const size_t nt = in.capacity.size();
    // The blind allocation's throughput, for Gavel's LAS normalization.
    Allocation blind = Spread(in.jobs, in.capacity, BlindShares(in.jobs, Total(in.capacity)));
    lp_jobs_.resize(in.jobs.size());
    for (size_t j = 0; j < in.jobs.size(); ++j) {
      double bt = 0;
      for (size_t t = 0; t < nt; ++t) bt += blind.x[j][t] * in.jobs[j].steps_per_s[t];
      lp_jobs_[j].coef = coef_(in.jobs[j], bt);
      lp_jobs_[j].scale = in.jobs[j].scale;
      lp_jobs_[j].count = 1;
    }
    LpOptions o;
    o.objective = obj_;
    o.aggregate = aggregate_;
    BERTH_ASSIGN_OR_RETURN(LpSolution s, SolveAllocationLp(lp_jobs_, in.capacity, o));
    Allocation a;
    a.x = std::move(s.x);
    a.lp_rows = s.rows_solved;
    return a;
  }

 private:
  std::string name_;
  LpObjective obj_;
  Coef coef_;
  bool progress_;
  bool aggregate_;
  std::vector<LpJob> lp_jobs_;
};

// FIFO: arrival order; `aware` picks the fastest type with room and re-decides
// every call; blind picks a random type with room and keeps it.
class Fifo final : public AllocationPolicy {
 public:
  Fifo(bool aware, uint64_t seed) : aware_(aware), rng_(seed) {}
  std::string_view Name() const override { return aware_ ? "gavel-fifo" : "fifo"; }
  bool HeterogeneityAware() const override { return aware_; }
  StatusOr<Allocation> Allocate(const PolicyInput& in) override {
    const size_t nt = in.capacity.size();
    std::vector<double> free(in.capacity.begin(), in.capacity.end());
    std::map<JobId, int> kept;
    std::map<JobId, size_t> index;
    for (size_t j = 0; j < in.jobs.size(); ++j) index.emplace(in.jobs[j].id, j);
    Allocation a;
    a.x.assign(in.jobs.size(), std::vector<double>(nt, 0.0));
    std::vector<char> skip(in.jobs.size(), 0);
    if (!aware_) {
      // Jobs still active keep their type.
      for (const auto& j : in.jobs) {
        auto it = assigned_.find(j.id);
        if (it != assigned_.end()) kept.emplace(j.id, it->second), free[it->second] -= j.scale;
      }
      // As in Gavel's FIFO, each finished job (by id) hands its type to the
      // next waiting job, which takes it if it fits there and is otherwise
      // passed over until the next call.
      size_t head = 0;
      for (const auto& [id, type] : assigned_) {
        if (index.count(id)) continue;
        while (head < in.jobs.size() && kept.count(in.jobs[head].id)) ++head;
        if (head >= in.jobs.size()) break;
        const PolicyJob& job = in.jobs[head];
        if (free[type] >= job.scale && job.steps_per_s[type] > 0) {
          a.x[head][type] = 1.0;
          free[type] -= job.scale;
          kept.emplace(job.id, type);
        } else {
          skip[head] = 1;
        }
        ++head;
      }
    }
    std::vector<int> options;
    for (size_t j = 0; j < in.jobs.size(); ++j) {
      const PolicyJob& job = in.jobs[j];
      if (auto it = kept.find(job.id); it != kept.end()) {
        a.x[j][it->second] = 1.0;
        continue;
      }
      if (skip[j]) continue;
      options.clear();
      for (size_t t = 0; t < nt; ++t)
        if (free[t] >= job.scale && job.steps_per_s[t] > 0) options.push_back(static_cast<int>(t));
      if (options.empty()) {
        // Strict FIFO: nobody behind may jump ahead of a job that cannot start.
        bool fits_somewhere_ever = false;
        for (size_t t = 0; t < nt; ++t) fits_somewhere_ever |= in.capacity[t] >= job.scale && job.steps_per_s[t] > 0;
        if (fits_somewhere_ever) break;
        continue;
      }
      int pick = options[0];
      if (aware_) {
        for (int t : options)
          if (job.steps_per_s[t] > job.steps_per_s[pick]) pick = t;
      } else {
        pick = options[rng_.Uniform(options.size())];
      }
      a.x[j][pick] = 1.0;
      free[pick] -= job.scale;
      kept.emplace(job.id, pick);
    }
    if (!aware_) assigned_ = std::move(kept);
    return a;
  }

 private:
  bool aware_;
  Rng rng_;
  std::map<JobId, int> assigned_;
};

}  // namespace

Status RegisterAllocationPolicies(AllocationPolicyRegistry& r) {
  BERTH_RETURN_IF_ERROR(r.Register(
      "las", [](const PolicyOptions&) { return std::make_unique<BlindLas>(); },
      "heterogeneity-blind least attained service: equal GPU-time per job, spread over types"));
  BERTH_RETURN_IF_ERROR(r.Register(
      "fifo", [](const PolicyOptions& o) { return std::make_unique<Fifo>(false, o.seed); },
      "heterogeneity-blind FIFO: arrival order, a random type with room, kept until the job ends"));
  BERTH_RETURN_IF_ERROR(r.Register(
      "gavel-fifo", [](const PolicyOptions& o) { return std::make_unique<Fifo>(true, o.seed); },
      "FIFO, each job on the fastest type with room"));
  auto lp = [&](const char* name, LpObjective obj, LpPolicy::Coef coef, bool progress, const char* desc) {
    return r.Register(
        name,
        [name, obj, coef, progress](const PolicyOptions& o) {
          return std::make_unique<LpPolicy>(name, obj, coef, progress, o.aggregate_lp);
        },
        desc);
  };
  BERTH_RETURN_IF_ERROR(lp(
      "gavel-las", LpObjective::kMaxMin,
      [](const PolicyJob& j, double blind) {
        std::vector<double> c(j.steps_per_s.size(), 0.0);
        if (blind <= 0) return c;
        for (size_t t = 0; t < c.size(); ++t) c[t] = j.steps_per_s[t] * j.scale / (j.weight * blind);
        return c;
      },
      false, "heterogeneity-aware LAS (Gavel): max-min of throughput relative to the blind allocation's"));
  BERTH_RETURN_IF_ERROR(lp(
      "gavel-maxmin", LpObjective::kMaxMin,
      [](const PolicyJob& j, double) {
        std::vector<double> c(j.ref_factor.size(), 0.0);
        for (size_t t = 0; t < c.size(); ++t)
          c[t] = j.steps_per_s[t] > 0 ? j.ref_factor[t] * j.scale / j.weight : 0.0;
        return c;
      },
      false, "max-min fairness of reference-equivalent GPUs (normalized units)"));
  BERTH_RETURN_IF_ERROR(lp(
      "gavel-tput", LpObjective::kMaxSum,
      [](const PolicyJob& j, double) {
        std::vector<double> c(j.ref_factor.size(), 0.0);
        for (size_t t = 0; t < c.size(); ++t) c[t] = j.steps_per_s[t] > 0 ? j.ref_factor[t] * j.scale : 0.0;
        return c;
      },
      false, "maximum total reference-equivalent throughput (may starve jobs)"));
  BERTH_RETURN_IF_ERROR(lp(
      "gavel-makespan", LpObjective::kMaxMin,
      [](const PolicyJob& j, double) {
        std::vector<double> c(j.steps_per_s.size(), 0.0);
        if (j.remaining_steps <= 0) return c;
        for (size_t t = 0; t < c.size(); ++t) c[t] = j.steps_per_s[t] / j.remaining_steps;
        return c;
      },
      false, "minimum makespan: max-min of throughput over remaining work (recomputed when jobs arrive or end)"));
  return Status::Ok();
}

}  // namespace berth::hetero
