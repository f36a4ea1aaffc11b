// goodput: sizes elastic jobs (and their batch sizes) to maximise cluster
// goodput, after Pollux's scheduler (Qiao et al., OSDI'21, section 4.2).
//
// Every round (arg `round_s`, default 60) it sees every elastic job, pending
// or running, with its progress. For each job and each size w it can take
// (1, 2, 4, ... up to a node's GPUs, then whole nodes), the job's best batch
// at w gives its goodput (elastic/goodput.h); its speedup is that over the
// goodput on one GPU. The round maximises the generalised mean of the
// speedups with power p = -1 (Pollux's fitness; a job without GPUs has
// speedup 0, so every job gets a GPU before any gets a second one):
//   1. every job, oldest first (running before pending on ties), gets one
//      GPU while GPUs remain;
//   2. then the GPUs are divided among the jobs that got one so that
//      sum 1/speedup is least, by an exact search over every job's sizes
//      (elastic/allocation_search.h). A running job's growth counts at its
//      speedup times Pollux's re-allocation factor
//      (age - resizes * R) / (age + R), R = its resize_cost, so a job grows
//      only when worth its restart and the GPUs it would not use go to
//      others; its current size counts as it is; shrinks carry no factor.
//      When jobs x GPUs is too large for the search (arg `exact_cells`,
//      default 20,000,000), GPUs go step by step to the job whose next size
//      lowers sum 1/speedup the most per GPU added, and a growth not worth
//      its restart is dropped afterwards.
// Jobs without a goodput model keep their size.
//
// Admit (same instance): a pending elastic job starts only once a round gave
// it GPUs, at the size the round chose; other jobs are not gated.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>

#include "berth/elastic/allocation_search.h"
#include "berth/elastic/goodput.h"
#include "berth/plugins/builtin.h"

namespace berth::plugins {
namespace {

using framework::ElasticJob;
using framework::SizeTarget;

class GoodputPolicy final : public framework::AdmitPlugin, public framework::ResizePlugin {
 public:
  static constexpr std::string_view kName = "goodput";
  GoodputPolicy(const elastic::GoodputCatalog* cat, TimeUs round, int64_t exact_cells)
      : cat_(cat), round_(round), exact_cells_(exact_cells) {}
  std::string_view Name() const override { return kName; }
  TimeUs RoundInterval() const override { return round_; }

  framework::Verdict Admit(const job::JobSpec& job, const state::ClusterState&, TimeUs) override {
    if (!job.elastic() || cat_ == nullptr || cat_->Find(job.job_class) == nullptr) return framework::Verdict::Success();
    auto it = allowed_.find(job.id);
    if (it != allowed_.end() && it->second) return framework::Verdict::Success();
    return framework::Verdict::Unschedulable(std::string(kName), "waiting for the next goodput round to size it");
  }

  void Counters(framework::PluginCounters& out) const override {
    out.push_back({"goodput_rounds", static_cast<double>(rounds_)});
    out.push_back({"goodput_resizes", static_cast<double>(resizes_)});
    out.push_back({"goodput_exact_rounds", static_cast<double>(exact_rounds_)});
  }

  std::vector<SizeTarget> Round(const framework::ResizeContext& ctx) override {
    ++rounds_;
    const int32_t per_node = std::max(1, ctx.gpus_per_node);
    struct Cand {
      const ElasticJob* job;
      const elastic::GoodputModel* model;
      std::vector<int32_t> sizes;    // allowed sizes, increasing
      std::vector<double> speedup;   // at each size (relative to one GPU)
      std::vector<int32_t> batch;    // best batch at each size
      int32_t at = -1;               // index into sizes of the planned size (-1: none)
    };
    std::vector<Cand> cands;
    int64_t free = ctx.total_gpus;
    for (const ElasticJob& j : ctx.jobs) {
      const elastic::GoodputModel* m = cat_ ? cat_->Find(j.spec->job_class) : nullptr;
      if (m == nullptr) {
        free -= j.workers;  // not ours to size
        continue;
      }
      Cand c{&j, m, {}, {}, {}, -1};
      const int32_t cap = static_cast<int32_t>(std::min<int64_t>(j.spec->max_workers, ctx.total_gpus));
      for (int32_t w = 1; w <= cap; w = w < per_node ? w * 2 : w + per_node) {
        if (w < j.spec->elastic_min()) continue;
        c.sizes.push_back(w);
      }
      // A running job may stay as it is even at a size the ladder skips.
      if (j.running && j.workers > 0 && j.workers <= cap && j.workers >= j.spec->elastic_min() &&
          !std::binary_search(c.sizes.begin(), c.sizes.end(), j.workers))
        c.sizes.insert(std::lower_bound(c.sizes.begin(), c.sizes.end(), j.workers), j.workers);
      if (c.sizes.empty()) continue;
      double base = 0;
      for (int32_t w : c.sizes) {
        const int32_t nodes = j.running && w == j.workers ? std::max(1, j.nodes) : (w + per_node - 1) / per_node;
        const int32_t b = m->BestBatch(w, nodes, j.progress);
        c.batch.push_back(b);
        c.speedup.push_back(b > 0 ? m->Goodput(w, nodes, b, j.progress) : 0);
      }
      const int32_t b1 = m->BestBatch(1, 1, j.progress);
      base = b1 > 0 ? m->Goodput(1, 1, b1, j.progress) : c.speedup.front();
      for (double& s : c.speedup) s = base > 0 ? s / base : 0;
      cands.push_back(std::move(c));
    }
    // 1. One step each, oldest first.
    std::vector<int32_t> order(cands.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = static_cast<int32_t>(k);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      const ElasticJob& x = *cands[a].job;
      const ElasticJob& y = *cands[b].job;
      if (x.submit_time != y.submit_time) return x.submit_time < y.submit_time;
      return x.spec->id < y.spec->id;
    });
    for (int32_t k : order) {
      Cand& c = cands[k];
      if (c.sizes.front() <= free && c.speedup.front() > 0) {
        c.at = 0;
        free -= c.sizes.front();
      }
    }
    // 2. The exact search when it is small enough, else marginal gains.
    const bool exact = ExactSearch(cands, order, free, ctx.view.now);
    if (exact) ++exact_rounds_;
    while (!exact && free > 0) {
      int32_t best = -1;
      double best_gain = 0;
      for (int32_t k : order) {
        const Cand& c = cands[k];
        if (c.at < 0 || c.at + 1 >= static_cast<int32_t>(c.sizes.size())) continue;
        const int32_t add = c.sizes[c.at + 1] - c.sizes[c.at];
        if (add > free) continue;
        const double s0 = c.speedup[c.at], s1 = c.speedup[c.at + 1];
        if (s1 <= s0) continue;
        const double gain = (1.0 / s0 - 1.0 / s1) / add;
        if (gain > best_gain * (1 + 1e-12)) {
          best_gain = gain;
          best = k;
        }
      }
      if (best < 0) break;
      Cand& c = cands[best];
      free -= c.sizes[c.at + 1] - c.sizes[c.at];
      ++c.at;
    }
    // The targets, with the restart factor for running jobs.
    std::vector<SizeTarget> out;
    for (const Cand& c : cands) {
      const ElasticJob& j = *c.job;
      int32_t w = c.at < 0 ? 0 : c.sizes[c.at];
      int32_t batch = c.at < 0 ? 0 : c.batch[c.at];
      if (!exact && j.running && w > j.workers) {
        const double factor = RestartFactor(j, ctx.view.now);
        // Current speedup: the nearest allowed size at or below what it holds.
        double now_s = 0;
        for (size_t k = 0; k < c.sizes.size(); ++k)
          if (c.sizes[k] <= j.workers) now_s = c.speedup[k];
        if (c.speedup[c.at] * factor <= now_s) {
          w = j.workers;
          const int32_t nodes = std::max(1, j.nodes);
          batch = c.model->BestBatch(w, nodes, j.progress);
        }
      }
      allowed_[j.spec->id] = w > 0;
      if (j.running && w != j.workers) ++resizes_;
      if (j.running || w > 0) out.push_back({j.spec->id, w, batch});
    }
    return out;
  }

 private:
  // Pollux's re-allocation factor for a running job changed now.
  static double RestartFactor(const ElasticJob& j, TimeUs now) {
    const double age = UsToSeconds(now - j.submit_time);
    const double r = std::max<double>(0, UsToSeconds(std::max<TimeUs>(0, j.spec->resize_cost)));
    return age + r > 0 ? std::max(0.0, (age - j.resizes * r) / (age + r)) : 1.0;
  }

  // Step 2 by the exact search over the jobs that got a GPU in step 1 (their
  // `at` is set to the size chosen, `free` to what is left). False, with
  // nothing changed, when the search would be too large.
  template <typename Cand>
  bool ExactSearch(std::vector<Cand>& cands, const std::vector<int32_t>& order, int64_t& free, TimeUs now) const {
    std::vector<int32_t> served;
    int64_t capacity = free;
    size_t options = 0;
    for (int32_t k : order)
      if (cands[k].at >= 0) {
        served.push_back(k);
        capacity += cands[k].sizes[cands[k].at];
        options += cands[k].sizes.size();
      }
    if (served.empty()) return true;
    if (static_cast<double>(options) * static_cast<double>(capacity + 1) > static_cast<double>(exact_cells_))
      return false;
    std::vector<elastic::AllocationOptions> jobs;
    jobs.reserve(served.size());
    for (int32_t k : served) {
      const Cand& c = cands[k];
      const ElasticJob& j = *c.job;
      const double factor = j.running ? RestartFactor(j, now) : 1.0;
      elastic::AllocationOptions o{c.sizes, c.speedup};
      for (size_t i = 0; i < o.gpus.size(); ++i)
        if (j.running && o.gpus[i] > j.workers) o.speedup[i] *= factor;
      jobs.push_back(std::move(o));
    }
    auto pick = elastic::SearchAllocation(jobs, capacity);
    if (!pick.ok()) return false;  // cannot happen: step 1's sizes fit
    free = capacity;
    for (size_t s = 0; s < served.size(); ++s) {
      Cand& c = cands[served[s]];
      c.at = (*pick)[s];
      free -= c.sizes[c.at];
    }
    return true;
  }

  const elastic::GoodputCatalog* cat_;
  TimeUs round_;
  int64_t exact_cells_;
  int64_t exact_rounds_ = 0;
  std::map<JobId, bool> allowed_;
  int64_t rounds_ = 0;
  int64_t resizes_ = 0;
};

}  // namespace

Status RegisterGoodputPlugins(framework::PluginRegistry& registry) {
  return registry.Register(
      std::string(GoodputPolicy::kName),
      framework::PluginRegistry::ContextFactory(
          [](const framework::PluginArgs& args,
             const framework::PluginContext& ctx) -> StatusOr<std::unique_ptr<framework::Plugin>> {
            double round_s = 60;
            int64_t exact_cells = 20'000'000;
            for (const auto& [k, v] : args) {
              char* end = nullptr;
              if (k == "round_s") {
                round_s = std::strtod(v.c_str(), &end);
                if (end == v.c_str() || *end != '\0' || !(round_s > 0))
                  return InvalidArgument("goodput: round_s must be a positive number of seconds, not '" + v + "'");
              } else if (k == "exact_cells") {
                exact_cells = std::strtoll(v.c_str(), &end, 10);
                if (end == v.c_str() || *end != '\0' || exact_cells < 0)
                  return InvalidArgument("goodput: exact_cells must be a count >= 0 (0: never search), not '" + v +
                                         "'");
              } else {
                return InvalidArgument("goodput: unknown arg '" + k + "' (known: round_s, exact_cells)");
              }
            }
            return std::unique_ptr<framework::Plugin>(
                std::make_unique<GoodputPolicy>(ctx.goodput, SecondsToUs(round_s), exact_cells));
          }));
}

Status RegisterGoodputPolicy(framework::PolicyRegistry& r) {
  framework::Profile p;
  p.queue_sort = "fifo";
  p.admit = {framework::PluginRef{"goodput"}};
  p.plan = {framework::PluginRef{"topology"}};
  p.filter = {framework::PluginRef{"fit"}};
  p.score = {framework::PluginRef{"bestfit"}};
  p.permit = {framework::PluginRef{"gang"}};
  p.resize = {framework::PluginRef{"goodput"}};
  return r.Register("goodput", std::move(p),
                    "Pollux-style goodput rounds: sizes elastic jobs and their batch sizes to maximise the "
                    "generalised mean speedup (p = -1) of throughput x statistical efficiency; FIFO, topology, best fit");
}

}  // namespace berth::plugins
