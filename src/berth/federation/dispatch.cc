// Dispatch policies (dispatch.h) and the batch assignment through GLPK.
#include "berth/federation/dispatch.h"

#include <glpk.h>

#include <algorithm>
#include <memory>

namespace berth::federation {
namespace {

constexpr std::pair<Policy, const char*> kPolicies[] = {
    {Policy::kGlobal, "global"},           {Policy::kGlobalCost, "global-cost"},
    {Policy::kMultiKueue, "multikueue"},   {Policy::kKarmadaWeights, "karmada-weights"},
    {Policy::kRoundRobin, "round-robin"},  {Policy::kLeastLoaded, "least-loaded"},
    {Policy::kDataLocal, "data-local"},    {Policy::kCheapest, "cheapest"},
    {Policy::kFastest, "fastest"},
};

struct GlpDeleter {
  void operator()(glp_prob* p) const { glp_delete_prob(p); }
};

bool HasReplica(const Federation& fed, int32_t ds, int32_t m) {
  if (ds < 0) return false;
  const auto& regions = fed.datasets[ds].regions;
  return std::find(regions.begin(), regions.end(), fed.members[m].region) != regions.end();
}

int64_t SeenFree(const EstimateContext& ctx, int32_t m) {
  const Digest& v = ctx.views[m];
  return v.version == 0 ? ctx.fed->members[m].cluster->total_gpus() : v.free_gpus;
}

}  // namespace

std::optional<Policy> ParsePolicy(const std::string& name) {
  for (const auto& [p, n] : kPolicies)
    if (name == n) return p;
  return std::nullopt;
}

const char* PolicyName(Policy p) {
  for (const auto& [q, n] : kPolicies)
    if (p == q) return n;
  return "?";
}

std::string PolicyNames() {
  std::string s;
  for (const auto& [p, n] : kPolicies) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

std::vector<int32_t> Dispatcher::Allowed(const EstimateContext& ctx, const Request& r) const {
  std::vector<int32_t> out;
  for (int32_t m = 0; m < static_cast<int32_t>(fed_.members.size()); ++m) {
    if (std::find(r.excluded.begin(), r.excluded.end(), m) != r.excluded.end()) continue;
    if (static_cast<size_t>(m) < ctx.down.size() && ctx.down[m]) continue;
    if (MemberAllowed(ctx, *r.spec, m)) out.push_back(m);
  }
  return out;
}

Choice Dispatcher::ChooseOne(const EstimateContext& ctx, const Request& r) {
  Choice c;
  const std::vector<int32_t> allowed = Allowed(ctx, r);
  if (allowed.empty()) return c;
  const job::JobSpec& j = *r.spec;
  auto estimate = [&](int32_t m) { return EstimateOn(ctx, j, r.dataset, m, CardChoice::kFastest, r.checkpoint); };
  switch (policy_) {
    case Policy::kGlobal:
    case Policy::kGlobalCost:
    case Policy::kCheapest:
    case Policy::kFastest: {
      // Cost-driven rules also weigh each member's cheapest card per unit of work.
      const bool by_price = policy_ == Policy::kGlobalCost || policy_ == Policy::kCheapest;
      std::vector<Estimate> es;
      for (int32_t m : allowed) {
        Estimate e = estimate(m);
        if (e.feasible) es.push_back(e);
        if (!by_price) continue;
        Estimate cheap = EstimateOn(ctx, j, r.dataset, m, CardChoice::kCheapest, r.checkpoint);
        if (cheap.feasible && cheap.type != e.type) es.push_back(cheap);
      }
      if (es.empty()) return c;
      // Budget: keep the members within it, if any.
      if (j.budget_cents >= 0 && (policy_ == Policy::kGlobal || policy_ == Policy::kGlobalCost)) {
        const double budget = static_cast<double>(j.budget_cents) / 100.0;
        std::vector<Estimate> within;
        for (const auto& e : es)
          if (e.cost_usd() <= budget) within.push_back(e);
        if (!within.empty()) es.swap(within);
      }
      auto by_finish = [](const Estimate& a, const Estimate& b) {
        if (a.finish != b.finish) return a.finish < b.finish;
        if (a.cost_usd() != b.cost_usd()) return a.cost_usd() < b.cost_usd();
        return a.member < b.member;
      };
      auto by_cost = [&](const Estimate& a, const Estimate& b) {
        if (a.cost_usd() != b.cost_usd()) return a.cost_usd() < b.cost_usd();
        return by_finish(a, b);
      };
      const Estimate* best = nullptr;
      if (policy_ == Policy::kGlobal) {
        best = &*std::min_element(es.begin(), es.end(), by_finish);
      } else if (policy_ == Policy::kGlobalCost) {
        if (j.deadline > 0) {
          const TimeUs due = j.submit_time + j.deadline;
          for (const auto& e : es)
            if (e.finish <= due && (best == nullptr || by_cost(e, *best))) best = &e;
        }
        if (best == nullptr) best = &*std::min_element(es.begin(), es.end(), by_finish);
      } else if (policy_ == Policy::kCheapest) {
        best = &*std::min_element(es.begin(), es.end(), by_cost);
      } else {
        best = &*std::min_element(es.begin(), es.end(), [](const Estimate& a, const Estimate& b) {
          if (a.run != b.run) return a.run < b.run;
          return a.member < b.member;
        });
      }
      c.member = best->member;
      c.estimate = *best;
      const bool global = policy_ == Policy::kGlobal || policy_ == Policy::kGlobalCost;
      c.promise = global && best->fits_now &&
                  std::max(best->data.ready, best->ckpt.ready) <= ctx.now + ctx.fed->lease_ttl / 2;
      return c;
    }
    case Policy::kLeastLoaded:
    case Policy::kDataLocal: {
      std::vector<int32_t> pool;
      if (policy_ == Policy::kDataLocal)
        for (int32_t m : allowed)
          if (HasReplica(fed_, r.dataset, m)) pool.push_back(m);
      if (pool.empty()) pool = allowed;
      int32_t best = pool.front();
      for (int32_t m : pool)
        if (SeenFree(ctx, m) > SeenFree(ctx, best)) best = m;
      c.member = best;
      break;
    }
    case Policy::kRoundRobin:
      c.member = allowed[static_cast<size_t>(cursor_++ % static_cast<int64_t>(allowed.size()))];
      break;
    case Policy::kKarmadaWeights: {
      double total = 0;
      int32_t best = -1;
      for (int32_t m : allowed) {
        credit_[m] += fed_.members[m].weight;
        total += fed_.members[m].weight;
        if (best < 0 || credit_[m] > credit_[best]) best = m;
      }
      credit_[best] -= total;
      c.member = best;
      break;
    }
    case Policy::kMultiKueue:
      c.member = allowed.front();
      break;
  }
  c.estimate = estimate(c.member);
  return c;
}

StatusOr<std::vector<std::pair<int32_t, int32_t>>> Dispatcher::AssignBatch(const EstimateContext& ctx,
                                                                           std::span<const Request> batch) {
  // Candidate pairs: the job starts on arrival at the member.
  struct Pair {
    int32_t job, member;
    double finish_s;
    int64_t gpus;
  };
  std::vector<Pair> pairs;
  double worst = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    for (int32_t m : Allowed(ctx, batch[i])) {
      Estimate e = EstimateOn(ctx, *batch[i].spec, batch[i].dataset, m, CardChoice::kFastest, batch[i].checkpoint);
      if (!e.feasible || !e.fits_now) continue;
      int64_t gpus = 0;
      for (const auto& g : batch[i].spec->groups) gpus += int64_t{g.gang_min()} * std::max(g.gpus, 1);
      pairs.push_back({static_cast<int32_t>(i), m, UsToSeconds(e.finish - ctx.now), gpus});
      worst = std::max(worst, pairs.back().finish_s);
    }
  }
  std::vector<std::pair<int32_t, int32_t>> out;
  if (pairs.empty()) return out;
  // max sum (worst + 1 - finish) x  s.t. each job at most once, each member's free GPUs (net of in-flight).
  glp_term_out(GLP_OFF);
  std::unique_ptr<glp_prob, GlpDeleter> lp(glp_create_prob());
  glp_set_obj_dir(lp.get(), GLP_MAX);
  const int njobs = static_cast<int>(batch.size());
  const int nmem = static_cast<int>(fed_.members.size());
  glp_add_rows(lp.get(), njobs + nmem);
  for (int i = 0; i < njobs; ++i) glp_set_row_bnds(lp.get(), i + 1, GLP_UP, 0, 1);
  for (int m = 0; m < nmem; ++m) {
    int64_t free = SeenFree(ctx, m);
    for (const auto& f : ctx.in_flight[m]) free -= f.gpus;
    glp_set_row_bnds(lp.get(), njobs + m + 1, GLP_UP, 0, static_cast<double>(std::max<int64_t>(0, free)));
  }
  glp_add_cols(lp.get(), static_cast<int>(pairs.size()));
  std::vector<int> ia{0}, ja{0};
  std::vector<double> ar{0};
  for (size_t k = 0; k < pairs.size(); ++k) {
    const int col = static_cast<int>(k) + 1;
    glp_set_col_bnds(lp.get(), col, GLP_DB, 0, 1);
    glp_set_obj_coef(lp.get(), col, worst + 1 - pairs[k].finish_s);
    ia.push_back(pairs[k].job + 1), ja.push_back(col), ar.push_back(1);
    ia.push_back(njobs + pairs[k].member + 1), ja.push_back(col), ar.push_back(static_cast<double>(pairs[k].gpus));
  }
  glp_load_matrix(lp.get(), static_cast<int>(ia.size()) - 1, ia.data(), ja.data(), ar.data());
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  if (glp_simplex(lp.get(), &parm) != 0 || glp_get_status(lp.get()) != GLP_OPT)
    return Internal("federation: the batch assignment LP did not solve");
  std::vector<std::pair<double, int32_t>> order;  // (-x, pair index)
  for (size_t k = 0; k < pairs.size(); ++k) {
    const double x = glp_get_col_prim(lp.get(), static_cast<int>(k) + 1);
    if (x > 1e-6) order.push_back({-x, static_cast<int32_t>(k)});
  }
  std::sort(order.begin(), order.end());
  std::vector<bool> taken(batch.size(), false);
  for (const auto& [negx, k] : order) {
    if (taken[pairs[k].job]) continue;
    taken[pairs[k].job] = true;
    out.push_back({pairs[k].job, pairs[k].member});
  }
  return out;
}

bool DispatchBatch(Dispatcher& d, const std::function<EstimateContext()>& context, std::span<const Request> reqs,
                   int32_t batch_min, const std::function<void(size_t i, const Choice& c)>& send) {
  const bool global = d.policy() == Policy::kGlobal || d.policy() == Policy::kGlobalCost;
  std::vector<bool> done(reqs.size(), false);
  bool solved = false;
  if (global && static_cast<int64_t>(reqs.size()) >= batch_min) {
    StatusOr<std::vector<std::pair<int32_t, int32_t>>> plan = d.AssignBatch(context(), reqs);
    if (plan.ok()) {
      solved = true;
      for (const auto& [i, m] : *plan) {
        // Re-check against the ledger as it stands after the earlier assignments.
        const EstimateContext ctx = context();
        const Estimate e = EstimateOn(ctx, *reqs[i].spec, reqs[i].dataset, m, CardChoice::kFastest, reqs[i].checkpoint);
        if (!e.feasible || !e.fits_now || std::max(e.data.ready, e.ckpt.ready) > ctx.now + ctx.fed->lease_ttl / 2)
          continue;
        if (reqs[i].spec->budget_cents >= 0 && e.cost_usd() > static_cast<double>(reqs[i].spec->budget_cents) / 100.0)
          continue;
        Choice c;
        c.member = m;
        c.promise = true;
        c.estimate = e;
        send(static_cast<size_t>(i), c);
        done[i] = true;
      }
    }
  }
  for (size_t i = 0; i < reqs.size(); ++i)
    if (!done[i]) send(i, d.ChooseOne(context(), reqs[i]));
  return solved;
}

}  // namespace berth::federation
