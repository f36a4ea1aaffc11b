// Measured throughput tables, the spec-based fit, and its held-out accuracy.
#include "berth/hetero/throughput.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

namespace berth::hetero {

// ---- MeasuredTable ----

void MeasuredTable::Set(const JobClass& c, const std::string& type, bool consolidated, double steps_per_s) {
  values_[Key{c, type, consolidated}] = steps_per_s;
}

std::optional<double> MeasuredTable::Get(const JobClass& c, std::string_view type, bool consolidated) const {
  auto it = values_.find(Key{c, std::string(type), consolidated});
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::vector<JobClass> MeasuredTable::Classes() const {
  std::set<JobClass> s;
  for (const auto& [k, v] : values_) s.insert(k.c);
  return {s.begin(), s.end()};
}

std::vector<std::string> MeasuredTable::Types() const {
  std::set<std::string> s;
  for (const auto& [k, v] : values_) s.insert(k.type);
  return {s.begin(), s.end()};
}

namespace {

// "('ResNet-50 (batch size 64)', 1)" -> {"ResNet-50 (batch size 64)", 1}.
std::optional<JobClass> ParseGavelKey(const std::string& key) {
  size_t q1 = key.find('\'');
  size_t q2 = key.rfind('\'');
  size_t comma = key.rfind(',');
  size_t close = key.rfind(')');
  if (q1 == std::string::npos || q2 == q1 || comma == std::string::npos || close == std::string::npos || comma < q2)
    return std::nullopt;
  JobClass c;
  c.model = key.substr(q1 + 1, q2 - q1 - 1);
  try {
    c.scale = std::stoi(key.substr(comma + 1, close - comma - 1));
  } catch (...) {
    return std::nullopt;
  }
  if (c.scale <= 0) return std::nullopt;
  return c;
}

}  // namespace

StatusOr<MeasuredTable> LoadGavelThroughputs(const std::string& path, const Catalog& catalog) {
  std::ifstream f(path);
  if (!f) return NotFound(path + ": cannot open throughput table");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(path + ": " + e.what());
  }
  if (!j.is_object()) return InvalidArgument(path + ": expected an object of worker types");
  MeasuredTable t;
  const std::string kSpread = "_unconsolidated";
  for (const auto& [worker, jobs] : j.items()) {
    bool consolidated = true;
    std::string type_name = worker;
    if (worker.size() > kSpread.size() && worker.ends_with(kSpread)) {
      consolidated = false;
      type_name = worker.substr(0, worker.size() - kSpread.size());
    }
    const AcceleratorSpec* spec = catalog.Find(type_name);
    if (!spec) return InvalidArgument(path + ": worker type '" + worker + "' is not in the accelerator catalog");
    if (!jobs.is_object()) return InvalidArgument(path + ": '" + worker + "' must map job keys to objects");
    for (const auto& [key, entry] : jobs.items()) {
      std::optional<JobClass> c = ParseGavelKey(key);
      if (!c) return InvalidArgument(path + ": '" + worker + "': bad job key " + key);
      if (!entry.is_object() || !entry.contains("null") || !entry["null"].is_number())
        return InvalidArgument(path + ": '" + worker + "' " + key + ": missing numeric \"null\" throughput");
      double v = entry["null"].get<double>();
      if (v < 0 || !std::isfinite(v)) return InvalidArgument(path + ": '" + worker + "' " + key + ": bad throughput");
      t.Set(*c, spec->name, consolidated, v);
    }
  }
  return t;
}

const char* SourceName(Source s) {
  switch (s) {
    case Source::kMeasured: return "measured";
    case Source::kFitted: return "fitted";
    case Source::kSpecsOnly: return "specs";
    case Source::kUnknown: return "unknown";
  }
  return "?";
}

// ---- ThroughputModel ----

double ThroughputModel::Mix(double f, const AcceleratorSpec& t) const {
  return f * pivot_flops_ / t.PeakTflops(options_.precision) + (1 - f) * pivot_bw_ / t.memory_bw_gbs;
}

double ThroughputModel::FittedThroughput(const ClassFit& fit, const AcceleratorSpec& t) const {
  return std::exp(fit.log_scale) * efficiency(t.name) / Mix(fit.f, t);
}

double ThroughputModel::efficiency(std::string_view type) const {
  const AcceleratorSpec* s = catalog_.Find(type);
  if (!s) return 1;
  auto it = eta_.find(s->name);
  return it == eta_.end() ? 1.0 : it->second;
}

double ThroughputModel::compute_fraction(const JobClass& c) const {
  auto it = fits_.find(c);
  return it == fits_.end() ? median_f_ : it->second.f;
}

StatusOr<ThroughputModel> ThroughputModel::Fit(const Catalog& catalog, const MeasuredTable& table,
                                               FitOptions options) {
  if (options.grid < 2 || options.iterations < 1) return InvalidArgument("fit: grid >= 2 and iterations >= 1");
  ThroughputModel m;
  m.catalog_ = catalog;
  m.table_ = table;
  m.options_ = options;

  // Measured types, the pivot, and the points (consolidated, > 0).
  std::vector<const AcceleratorSpec*> types;
  for (const auto& name : table.Types()) {
    const AcceleratorSpec* s = catalog.Find(name);
    if (!s) return InvalidArgument("fit: measured type '" + name + "' is not in the catalog");
    types.push_back(s);
  }
  if (types.empty()) {
    // Nothing measured: the model answers Relative() from specs alone.
    const AcceleratorSpec& first = catalog.types().front();
    m.pivot_ = first.name;
    m.pivot_flops_ = first.PeakTflops(options.precision);
    m.pivot_bw_ = first.memory_bw_gbs;
    return m;
  }
  const AcceleratorSpec* pivot = types[0];
  for (const auto* s : types)
    if (s->PeakTflops(options.precision) > pivot->PeakTflops(options.precision)) pivot = s;
  m.pivot_ = pivot->name;
  m.pivot_flops_ = pivot->PeakTflops(options.precision);
  m.pivot_bw_ = pivot->memory_bw_gbs;

  const int nt = static_cast<int>(types.size());
  const int ng = options.grid + 1;
  // log D(f_g, t) for every grid point and measured type.
  std::vector<double> log_mix(static_cast<size_t>(ng) * nt);
  for (int g = 0; g < ng; ++g)
    for (int t = 0; t < nt; ++t) log_mix[g * nt + t] = std::log(m.Mix(double(g) / options.grid, *types[t]));

  struct Point { int t; double y; };
  std::vector<JobClass> classes = table.Classes();
  std::vector<std::vector<Point>> points(classes.size());
  for (size_t k = 0; k < classes.size(); ++k)
    for (int t = 0; t < nt; ++t) {
      auto v = table.Get(classes[k], types[t]->name, true);
      if (v && *v > 0) points[k].push_back({t, std::log(*v)});
    }

  std::vector<double> log_eta(nt, 0.0), a(classes.size(), 0.0);
  std::vector<int> fg(classes.size(), ng / 2);
  int median_g = ng / 2;
  int pivot_t = static_cast<int>(std::find(types.begin(), types.end(), pivot) - types.begin());
  for (int it = 0; it < options.iterations; ++it) {
    // Per class: the best f on the grid (classes with < 2 points take the median).
    std::vector<int> multi;
    for (size_t k = 0; k < classes.size(); ++k) {
      const auto& pts = points[k];
      if (pts.empty()) continue;
      auto eval = [&](int g, double& a_out) {
        double sum = 0;
        for (const auto& p : pts) sum += p.y - log_eta[p.t] + log_mix[g * nt + p.t];
        a_out = sum / pts.size();
        double sse = 0;
        for (const auto& p : pts) {
          double r = p.y - log_eta[p.t] + log_mix[g * nt + p.t] - a_out;
          sse += r * r;
        }
        return sse;
      };
      if (pts.size() < 2) {
        fg[k] = median_g;
        eval(median_g, a[k]);
        continue;
      }
      double best = INFINITY, best_a = 0;
      int best_g = 0;
      for (int g = 0; g < ng; ++g) {
        double ak;
        double sse = eval(g, ak);
        if (sse < best - 1e-12) best = sse, best_a = ak, best_g = g;
      }
      fg[k] = best_g;
      a[k] = best_a;
      multi.push_back(best_g);
    }
    if (!multi.empty()) {
      std::sort(multi.begin(), multi.end());
      median_g = multi[multi.size() / 2];
    }
    // Per type: efficiency relative to the pivot.
    for (int t = 0; t < nt; ++t) {
      if (t == pivot_t) continue;
      double sum = 0;
      int n = 0;
      for (size_t k = 0; k < classes.size(); ++k)
        for (const auto& p : points[k])
          if (p.t == t) sum += p.y - a[k] + log_mix[fg[k] * nt + t], ++n;
      log_eta[t] = n > 0 ? sum / n : 0.0;
    }
  }
  double sse = 0;
  int n = 0;
  for (size_t k = 0; k < classes.size(); ++k) {
    for (const auto& p : points[k]) {
      double r = p.y - (a[k] + log_eta[p.t] - log_mix[fg[k] * nt + p.t]);
      sse += r * r, ++n;
    }
  }
  m.fit_rmse_log_ = n > 0 ? std::sqrt(sse / n) : 0;
  m.median_f_ = double(median_g) / options.grid;
  for (int t = 0; t < nt; ++t) m.eta_[types[t]->name] = std::exp(log_eta[t]);
  for (size_t k = 0; k < classes.size(); ++k) {
    if (points[k].empty()) continue;
    ClassFit fit;
    fit.log_scale = a[k];
    fit.f = double(fg[k]) / options.grid;
    // Spread penalty: geometric mean of unconsolidated / consolidated.
    double ls = 0;
    int ns = 0;
    for (int t = 0; t < nt; ++t) {
      auto c = table.Get(classes[k], types[t]->name, true);
      auto u = table.Get(classes[k], types[t]->name, false);
      if (c && u && *c > 0 && *u > 0) ls += std::log(*u / *c), ++ns;
    }
    fit.spread_penalty = ns > 0 ? std::exp(ls / ns) : 1.0;
    m.fits_.emplace(classes[k], fit);
  }
  return m;
}

Estimate ThroughputModel::Throughput(const JobClass& c, std::string_view type, bool consolidated) const {
  const AcceleratorSpec* spec = catalog_.Find(type);
  if (!spec) return {};
  if (auto v = table_.Get(c, spec->name, consolidated)) return {*v, Source::kMeasured};
  auto it = fits_.find(c);
  if (it == fits_.end()) return {};
  if (!consolidated) {
    Estimate base = Throughput(c, type, true);
    if (base.source == Source::kMeasured) base.source = Source::kFitted;
    base.steps_per_s *= it->second.spread_penalty;
    return base;
  }
  const bool measured_type = eta_.count(spec->name) > 0;
  return {FittedThroughput(it->second, *spec), measured_type ? Source::kFitted : Source::kSpecsOnly};
}

double ThroughputModel::Relative(const JobClass& c, std::string_view type, std::string_view ref) const {
  const AcceleratorSpec* t = catalog_.Find(type);
  const AcceleratorSpec* r = catalog_.Find(ref);
  if (!t || !r) return -1;
  if (fits_.count(c)) {
    double num = Throughput(c, type).steps_per_s;
    double den = Throughput(c, ref).steps_per_s;
    return den > 0 ? num / den : 0;
  }
  return (efficiency(t->name) / Mix(median_f_, *t)) / (efficiency(r->name) / Mix(median_f_, *r));
}

// ---- Held-out accuracy ----

double HeldOutReport::Row::abs_pct_error() const {
  return measured > 0 ? 100.0 * std::fabs(predicted - measured) / measured : 0;
}

StatusOr<HeldOutReport> EvaluateHeldOut(const Catalog& catalog, const MeasuredTable& table, bool leave_type_out,
                                        FitOptions options) {
  HeldOutReport rep;
  rep.mode = leave_type_out ? "leave-one-type-out" : "leave-one-pair-out";
  const auto classes = table.Classes();
  const auto types = table.Types();
  auto without = [&](auto skip) {
    MeasuredTable t;
    for (const auto& c : classes)
      for (const auto& ty : types)
        for (bool cons : {true, false})
          if (auto v = table.Get(c, ty, cons); v && !skip(c, ty)) t.Set(c, ty, cons, *v);
    return t;
  };
  if (leave_type_out) {
    for (const auto& ty : types) {
      MeasuredTable t = without([&](const JobClass&, const std::string& x) { return x == ty; });
      BERTH_ASSIGN_OR_RETURN(ThroughputModel m, ThroughputModel::Fit(catalog, t, options));
      for (const auto& c : classes) {
        auto v = table.Get(c, ty, true);
        if (!v || *v <= 0) continue;
        Estimate e = m.Throughput(c, ty, true);
        if (e.source == Source::kUnknown) continue;
        rep.rows.push_back({c, ty, *v, e.steps_per_s});
      }
    }
  } else {
    for (const auto& c : classes) {
      for (const auto& ty : types) {
        auto v = table.Get(c, ty, true);
        if (!v || *v <= 0) continue;
        MeasuredTable t = without([&](const JobClass& x, const std::string& y) { return x == c && y == ty; });
        BERTH_ASSIGN_OR_RETURN(ThroughputModel m, ThroughputModel::Fit(catalog, t, options));
        Estimate e = m.Throughput(c, ty, true);
        if (e.source == Source::kUnknown) continue;
        rep.rows.push_back({c, ty, *v, e.steps_per_s});
      }
    }
  }
  if (rep.rows.empty()) return rep;
  std::vector<double> errs;
  std::map<std::string, std::pair<double, int>> by_type;
  for (const auto& r : rep.rows) {
    double e = r.abs_pct_error();
    errs.push_back(e);
    by_type[r.type].first += e;
    ++by_type[r.type].second;
  }
  double sum = 0;
  int within = 0;
  for (double e : errs) sum += e, within += e <= 25.0;
  std::sort(errs.begin(), errs.end());
  rep.mean_abs_pct_error = sum / errs.size();
  rep.median_abs_pct_error = errs[errs.size() / 2];
  rep.p90_abs_pct_error = errs[std::min(errs.size() - 1, static_cast<size_t>(0.9 * errs.size()))];
  rep.within_25pct = double(within) / errs.size();
  for (const auto& [t, se] : by_type) rep.mean_abs_pct_error_by_type[t] = se.first / se.second;
  return rep;
}

}  // namespace berth::hetero
