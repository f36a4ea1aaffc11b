// GLPK model of the allocation program (see lp.h).
#include "berth/hetero/lp.h"

#include <glpk.h>

#include <algorithm>
#include <map>
#include <memory>

namespace berth::hetero {
namespace {

struct GlpDeleter {
  void operator()(glp_prob* p) const { glp_delete_prob(p); }
};

}  // namespace

StatusOr<LpSolution> SolveAllocationLp(std::span<const LpJob> jobs, std::span<const double> capacity,
                                       const LpOptions& options) {
  LpSolution sol;
  const int nt = static_cast<int>(capacity.size());
  sol.x.assign(jobs.size(), std::vector<double>(nt, 0.0));
  if (jobs.empty() || nt == 0) return sol;
  for (const auto& j : jobs)
    if (static_cast<int>(j.coef.size()) != nt || j.scale <= 0 || j.count <= 0)
      return InvalidArgument("allocation LP: each job needs one coefficient per type, scale > 0, count > 0");

  // Rows: merge identical (scale, coef) when asked.
  std::vector<int> row_of(jobs.size());
  std::vector<LpJob> rows;
  if (options.aggregate) {
    std::map<std::pair<int32_t, std::vector<double>>, int> seen;
    for (size_t i = 0; i < jobs.size(); ++i) {
      auto [it, fresh] = seen.try_emplace({jobs[i].scale, jobs[i].coef}, static_cast<int>(rows.size()));
      if (fresh) {
        rows.push_back(jobs[i]);
      } else {
        rows[it->second].count += jobs[i].count;
      }
      row_of[i] = it->second;
    }
  } else {
    rows.assign(jobs.begin(), jobs.end());
    for (size_t i = 0; i < jobs.size(); ++i) row_of[i] = static_cast<int>(i);
  }
  const int nr = static_cast<int>(rows.size());
  sol.rows_solved = nr;

  glp_term_out(GLP_OFF);
  std::unique_ptr<glp_prob, GlpDeleter> lp(glp_create_prob());
  glp_set_obj_dir(lp.get(), GLP_MAX);
  const bool maxmin = options.objective == LpObjective::kMaxMin;
  // Columns: x[r][t] (1-based: 1 + r*nt + t), then z.
  const int ncols = nr * nt + (maxmin ? 1 : 0);
  glp_add_cols(lp.get(), ncols);
  for (int r = 0; r < nr; ++r)
    for (int t = 0; t < nt; ++t) {
      const int col = 1 + r * nt + t;
      if (rows[r].coef[t] > 0) {
        glp_set_col_bnds(lp.get(), col, GLP_DB, 0.0, 1.0);
      } else {
        glp_set_col_bnds(lp.get(), col, GLP_FX, 0.0, 0.0);
      }
      glp_set_obj_coef(lp.get(), col, maxmin ? 0.0 : rows[r].coef[t] * rows[r].count);
    }
  const int zcol = ncols;
  if (maxmin) {
    glp_set_col_bnds(lp.get(), zcol, GLP_LO, 0.0, 0.0);
    glp_set_obj_coef(lp.get(), zcol, 1.0);
  }
  // Rows: per job (<= 1), per type (<= cap), per job rate - z >= 0 (maxmin).
  std::vector<bool> can_run(nr, false);
  for (int r = 0; r < nr; ++r)
    for (int t = 0; t < nt; ++t) can_run[r] = can_run[r] || rows[r].coef[t] > 0;
  int nrate = 0;
  if (maxmin)
    for (int r = 0; r < nr; ++r) nrate += can_run[r];
  glp_add_rows(lp.get(), nr + nt + nrate);
  std::vector<int> ia{0}, ja{0};
  std::vector<double> ar{0.0};
  auto put = [&](int row, int col, double v) { ia.push_back(row), ja.push_back(col), ar.push_back(v); };
  for (int r = 0; r < nr; ++r) {
    glp_set_row_bnds(lp.get(), 1 + r, GLP_UP, 0.0, 1.0);
    for (int t = 0; t < nt; ++t) put(1 + r, 1 + r * nt + t, 1.0);
  }
  for (int t = 0; t < nt; ++t) {
    glp_set_row_bnds(lp.get(), 1 + nr + t, GLP_UP, 0.0, std::max(0.0, capacity[t]));
    for (int r = 0; r < nr; ++r) put(1 + nr + t, 1 + r * nt + t, double(rows[r].scale) * rows[r].count);
  }
  if (maxmin) {
    int row = 1 + nr + nt;
    for (int r = 0; r < nr; ++r) {
      if (!can_run[r]) continue;
      glp_set_row_bnds(lp.get(), row, GLP_LO, 0.0, 0.0);
      for (int t = 0; t < nt; ++t)
        if (rows[r].coef[t] > 0) put(row, 1 + r * nt + t, rows[r].coef[t]);
      put(row, zcol, -1.0);
      ++row;
    }
  }
  glp_load_matrix(lp.get(), static_cast<int>(ia.size()) - 1, ia.data(), ja.data(), ar.data());
  glp_scale_prob(lp.get(), GLP_SF_AUTO);
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.presolve = GLP_OFF;
  // GLPK's primal simplex can stall on these degenerate programs (it did, for
  // minutes, on a warm start of the second phase): bound the iterations and
  // restart once from a fresh basis.
  parm.it_lim = 50 * (glp_get_num_rows(lp.get()) + glp_get_num_cols(lp.get())) + 1000;
  auto solve = [&]() {
    glp_adv_basis(lp.get(), 0);
    int rc = glp_simplex(lp.get(), &parm);
    if (rc == GLP_EITLIM) {
      glp_adv_basis(lp.get(), 0);
      parm.r_test = GLP_RT_STD;
      rc = glp_simplex(lp.get(), &parm);
      parm.r_test = GLP_RT_HAR;
    }
    return rc == 0 && glp_get_status(lp.get()) == GLP_OPT;
  };
  glp_adv_basis(lp.get(), 0);
  int rc = glp_simplex(lp.get(), &parm);
  if (rc == GLP_EITLIM || (rc == 0 && glp_get_status(lp.get()) != GLP_OPT)) rc = solve() ? 0 : 1;
  if (rc != 0 || glp_get_status(lp.get()) != GLP_OPT)
    return Internal("allocation LP: GLPK simplex failed (code " + std::to_string(rc) + ", status " +
                    std::to_string(glp_get_status(lp.get())) + ")");
  sol.simplex_iterations = glp_get_it_cnt(lp.get());
  sol.objective = glp_get_obj_val(lp.get());
  std::vector<std::vector<double>> xr(nr, std::vector<double>(nt));
  auto read_x = [&]() {
    for (int r = 0; r < nr; ++r)
      for (int t = 0; t < nt; ++t) xr[r][t] = std::clamp(glp_get_col_prim(lp.get(), 1 + r * nt + t), 0.0, 1.0);
  };
  read_x();
  if (maxmin && options.second_phase && nrate > 0) {
    // Keep the minimum (less a hair for round-off) and use the rest of the capacity.
    const double z = glp_get_col_prim(lp.get(), zcol);
    glp_set_col_bnds(lp.get(), zcol, GLP_LO, z * (1.0 - 1e-7), 0.0);
    glp_set_obj_coef(lp.get(), zcol, 0.0);
    for (int r = 0; r < nr; ++r)
      for (int t = 0; t < nt; ++t)
        if (rows[r].coef[t] > 0) glp_set_obj_coef(lp.get(), 1 + r * nt + t, rows[r].coef[t] * rows[r].count);
    rc = glp_simplex(lp.get(), &parm);  // warm: from the first phase's basis
    const bool ok = rc == 0 && glp_get_status(lp.get()) == GLP_OPT;
    // The first phase's answer stays valid (max-min optimal) if the second
    // does not finish; the second only hands out leftover capacity.
    if (ok || solve()) read_x();
    sol.simplex_iterations = glp_get_it_cnt(lp.get());
    sol.objective = z;
  }
  for (size_t i = 0; i < jobs.size(); ++i) sol.x[i] = xr[row_of[i]];
  return sol;
}

}  // namespace berth::hetero
