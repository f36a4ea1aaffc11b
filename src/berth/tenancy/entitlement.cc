// Reachable entitlement: node classes, demand by fit mask, water-filling.
#include "berth/tenancy/entitlement.h"

#include <algorithm>
#include <array>
#include <limits>

namespace berth::tenancy {

std::vector<double> WaterFill(const FillProblem& p) {
  const int32_t n = static_cast<int32_t>(p.queues.size());
  const int32_t num_classes = static_cast<int32_t>(p.capacity.size());
  std::vector<double> e(n, 0.0);
  if (n == 0 || num_classes == 0 || num_classes > 30) return e;
  const uint32_t sets = uint32_t{1} << num_classes;
  double fleet = 0;
  for (double c : p.capacity) fleet += std::max(0.0, c);
  const double eps = 1e-9 * std::max(1.0, fleet);
  // Capacity of each set of classes, and per set and queue the demand that
  // fits some class outside the set (it need not be served inside).
  std::vector<double> cap(sets, 0.0);
  for (uint32_t k = 1; k < sets; ++k) {
    const int32_t low = __builtin_ctz(k);
    cap[k] = cap[k & (k - 1)] + std::max(0.0, p.capacity[low]);
  }
  std::vector<double> total(n, 0.0);
  std::vector<double> out(static_cast<size_t>(sets) * n, 0.0);
  for (int32_t q = 0; q < n; ++q) {
    for (const auto& [mask, amount] : p.queues[q].demand) {
      if (amount <= 0 || (mask & (sets - 1)) == 0) continue;
      total[q] += amount;
      for (uint32_t k = 1; k < sets; ++k)
        if (mask & ~k & (sets - 1)) out[static_cast<size_t>(k) * n + q] += amount;
    }
  }
  std::vector<bool> active(n, false);
  int32_t num_active = 0;
  for (int32_t q = 0; q < n; ++q) {
    active[q] = total[q] > eps && p.queues[q].weight > 0;
    num_active += active[q];
  }
  const double inf = std::numeric_limits<double>::infinity();
  auto level_of = [&](int32_t q, double level) { return std::min(p.queues[q].weight * level, total[q]); };
  // What the entitlements need of set k at `level` (frozen queues at e).
  auto need = [&](uint32_t k, double level) {
    double s = 0;
    const double* o = &out[static_cast<size_t>(k) * n];
    for (int32_t q = 0; q < n; ++q) s += std::max(0.0, (active[q] ? level_of(q, level) : e[q]) - o[q]);
    return s;
  };
  std::vector<double> points;
  while (num_active > 0) {
    double level = inf;
    for (int32_t q = 0; q < n; ++q)
      if (active[q]) level = std::min(level, total[q] / p.queues[q].weight);
    // The highest level every set allows: need(k, .) is continuous,
    // non-decreasing and linear between the breakpoints of the active queues.
    for (uint32_t k = 1; k < sets; ++k) {
      if (need(k, level) <= cap[k] + eps) continue;
      const double* o = &out[static_cast<size_t>(k) * n];
      points.clear();
      for (int32_t q = 0; q < n; ++q) {
        if (!active[q]) continue;
        const double w = p.queues[q].weight;
        if (o[q] / w < level) points.push_back(o[q] / w);
        if (total[q] / w < level) points.push_back(total[q] / w);
      }
      points.push_back(level);
      std::sort(points.begin(), points.end());
      double lo = 0, f_lo = need(k, 0);
      if (f_lo > cap[k] + eps) {  // frozen queues alone fill it: no growth
        level = 0;
        break;
      }
      for (double x : points) {
        if (x <= lo) continue;
        const double f = need(k, x);
        if (f > cap[k] + eps) {
          level = lo + (x - lo) * (cap[k] - f_lo) / (f - f_lo);
          break;
        }
        lo = x;
        f_lo = f;
      }
    }
    // Raise, then stop the queues whose demand is met or that need more of a full set.
    std::vector<bool> stop(n, false);
    for (int32_t q = 0; q < n; ++q) {
      if (!active[q]) continue;
      e[q] = level_of(q, level);
      if (e[q] >= total[q] - eps) stop[q] = true;
    }
    for (uint32_t k = 1; k < sets; ++k) {
      if (need(k, level) < cap[k] - eps) continue;
      const double* o = &out[static_cast<size_t>(k) * n];
      for (int32_t q = 0; q < n; ++q)
        if (active[q] && p.queues[q].weight * level >= o[q] - eps) stop[q] = true;
    }
    bool any = false;
    for (int32_t q = 0; q < n; ++q) any = any || stop[q];
    for (int32_t q = 0; q < n; ++q) {
      if (!active[q] || (any && !stop[q])) continue;
      active[q] = false;
      --num_active;
    }
  }
  return e;
}

std::vector<std::vector<double>> SplitByClass(const FillProblem& p, const std::vector<double>& e) {
  const int32_t n = static_cast<int32_t>(p.queues.size());
  const int32_t num_classes = static_cast<int32_t>(p.capacity.size());
  std::vector<std::vector<double>> x(n, std::vector<double>(num_classes, 0.0));
  // Flow network: source -> queue (e) -> (queue, mask) (demand) -> class (unbounded) -> sink (capacity).
  struct Arc {
    int32_t to;
    double cap;
  };
  std::vector<Arc> arcs;
  std::vector<std::vector<int32_t>> out;
  auto node = [&]() {
    out.emplace_back();
    return static_cast<int32_t>(out.size()) - 1;
  };
  auto arc = [&](int32_t a, int32_t b, double cap) {
    out[a].push_back(static_cast<int32_t>(arcs.size()));
    arcs.push_back({b, cap});
    out[b].push_back(static_cast<int32_t>(arcs.size()));
    arcs.push_back({a, 0.0});
    return static_cast<int32_t>(arcs.size()) - 2;
  };
  const int32_t source = node(), sink = node();
  std::vector<int32_t> class_node(num_classes);
  for (int32_t c = 0; c < num_classes; ++c) {
    class_node[c] = node();
    arc(class_node[c], sink, std::max(0.0, p.capacity[c]));
  }
  // (queue, class, arc index) of every mask -> class arc, to read the flow back.
  std::vector<std::array<int32_t, 3>> reads;
  for (int32_t q = 0; q < n && q < static_cast<int32_t>(e.size()); ++q) {
    if (e[q] <= 0) continue;
    const int32_t qn = node();
    arc(source, qn, e[q]);
    for (const auto& [mask, amount] : p.queues[q].demand) {
      if (amount <= 0) continue;
      const int32_t mn = node();
      arc(qn, mn, amount);
      for (int32_t c = 0; c < num_classes; ++c)
        if (mask >> c & 1) reads.push_back({q, c, arc(mn, class_node[c], std::numeric_limits<double>::infinity())});
    }
  }
  double fleet = 0;
  for (double c : p.capacity) fleet += std::max(0.0, c);
  const double eps = 1e-9 * std::max(1.0, fleet);
  // Edmonds-Karp: shortest augmenting paths, arcs in the order added.
  std::vector<int32_t> via(out.size());
  for (;;) {
    std::fill(via.begin(), via.end(), -1);
    std::vector<int32_t> frontier = {source};
    via[source] = -2;
    for (size_t i = 0; i < frontier.size() && via[sink] == -1; ++i)
      for (int32_t a : out[frontier[i]])
        if (arcs[a].cap > eps && via[arcs[a].to] == -1) {
          via[arcs[a].to] = a;
          frontier.push_back(arcs[a].to);
        }
    if (via[sink] == -1) break;
    double push = std::numeric_limits<double>::infinity();
    for (int32_t v = sink; v != source; v = arcs[via[v] ^ 1].to) push = std::min(push, arcs[via[v]].cap);
    for (int32_t v = sink; v != source; v = arcs[via[v] ^ 1].to) {
      arcs[via[v]].cap -= push;
      arcs[via[v] ^ 1].cap += push;
    }
  }
  for (const auto& [q, c, a] : reads) x[q][c] += arcs[a ^ 1].cap;
  return x;
}

TreeFill FillTree(const std::vector<double>& capacity, const std::vector<int32_t>& parent,
                  const std::vector<double>& weight, const std::vector<std::map<uint32_t, double>>& demand) {
  const int32_t n = static_cast<int32_t>(parent.size());
  const int32_t num_classes = static_cast<int32_t>(capacity.size());
  TreeFill out;
  out.e.assign(n, 0.0);
  out.split.assign(n, std::vector<double>(num_classes, 0.0));
  // Children by parent (index n: the root), in node order.
  std::vector<std::vector<int32_t>> children(n + 1);
  for (int32_t q = 0; q < n; ++q) children[parent[q] < 0 ? n : parent[q]].push_back(q);
  // The demand of each subtree: a node's own plus its children's, leaves up.
  std::vector<std::map<uint32_t, double>> sub(n);
  std::vector<int32_t> order;  // parents before children
  order.reserve(n);
  for (int32_t q : children[n]) order.push_back(q);
  for (size_t i = 0; i < order.size(); ++i)
    for (int32_t c : children[order[i]]) order.push_back(c);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int32_t q = *it;
    if (static_cast<size_t>(q) < demand.size())
      for (const auto& [mask, amount] : demand[q]) sub[q][mask] += amount;
    if (parent[q] >= 0)
      for (const auto& [mask, amount] : sub[q]) sub[parent[q]][mask] += amount;
  }
  // Top down: the children of each node share its split.
  auto fill = [&](int32_t node, const std::vector<double>& cap) {
    const std::vector<int32_t>& kids = children[node < 0 ? n : node];
    if (kids.empty()) return;
    FillProblem p;
    p.capacity = cap;
    p.queues.resize(kids.size());
    double sum = 0;
    for (int32_t k : kids) sum += weight[k];
    for (size_t i = 0; i < kids.size(); ++i) {
      p.queues[i].weight = sum > 0 ? weight[kids[i]] / sum : 0.0;
      p.queues[i].demand = sub[kids[i]];
    }
    const std::vector<double> e = WaterFill(p);
    const std::vector<std::vector<double>> x = SplitByClass(p, e);
    for (size_t i = 0; i < kids.size(); ++i) {
      out.e[kids[i]] = e[i];
      out.split[kids[i]] = x[i];
    }
  };
  fill(-1, capacity);
  for (int32_t q : order) fill(q, out.split[q]);
  return out;
}

Entitlement::Entitlement(const cluster::Cluster& cluster, const SpeedModel* speeds) : usable_(true) {
  for (const auto& node : cluster.nodes()) {
    if (node.gpu_count == 0 || !node.gpu_type.valid()) continue;
    int32_t c = 0;
    while (c < num_classes() &&
           (classes_[c].type != node.gpu_type || classes_[c].gpus_per_node != node.gpu_count))
      ++c;
    if (c == num_classes()) {
      if (c == kMaxClasses) {
        usable_ = false;
        classes_.clear();
        return;
      }
      classes_.push_back({node.gpu_type, node.gpu_count, 0, 0});
    }
    const int64_t milli = int64_t{node.gpu_count} * kMilliPerGpu;
    classes_[c].gpu_milli += milli;
    classes_[c].capacity += speeds ? ScaleMilli(milli, speeds->CapacityPerMillion(node.gpu_type)) : milli;
  }
  usable_ = !classes_.empty();
}

uint32_t Entitlement::FitMask(const job::TaskGroup& g) const {
  if (g.gpus <= 0 || g.count <= 0) return 0;
  uint32_t mask = 0;
  for (int32_t c = 0; c < num_classes(); ++c)
    if (g.gpu_types.Accepts(classes_[c].type) && (g.is_sharing() || classes_[c].gpus_per_node >= g.gpus))
      mask |= uint32_t{1} << c;
  return mask;
}

DemandToken Entitlement::DemandOf(const job::JobSpec& job) const {
  DemandToken t;
  if (!usable_) return t;
  for (const auto& g : job.groups) {
    const uint32_t mask = FitMask(g);
    if (mask == 0) continue;
    const int64_t milli = int64_t{g.count} * g.milli_per_task();
    auto it = std::find_if(t.parts.begin(), t.parts.end(), [&](const auto& p) { return p.first == mask; });
    if (it == t.parts.end()) t.parts.emplace_back(mask, milli); else it->second += milli;
  }
  return t;
}

void Entitlement::Add(int32_t queue, const DemandToken& token, int sign) {
  if (queue < 0 || token.empty()) return;
  if (static_cast<size_t>(queue) >= demand_.size()) demand_.resize(queue + 1);
  auto& d = demand_[queue];
  for (const auto& [mask, milli] : token.parts) {
    int64_t& v = d[mask];
    v += sign * milli;
    if (v == 0) d.erase(mask);
  }
  ++version_;
}

double Entitlement::SpeedOf(uint32_t mask) const {
  double cap = 0, gpus = 0;
  for (int32_t c = 0; c < num_classes(); ++c) {
    if (!(mask >> c & 1)) continue;
    cap += static_cast<double>(classes_[c].capacity);
    gpus += static_cast<double>(classes_[c].gpu_milli);
  }
  return gpus > 0 ? cap / gpus : 0.0;
}

double Entitlement::DemandIn(int32_t queue) const {
  if (queue < 0 || static_cast<size_t>(queue) >= demand_.size()) return 0;
  double s = 0;
  for (const auto& [mask, milli] : demand_[queue]) s += static_cast<double>(milli) * SpeedOf(mask);
  return s;
}

std::vector<double> Entitlement::Solve(const std::vector<double>& leaf_weights) const {
  return WaterFill(Problem(leaf_weights));
}

FillProblem Entitlement::Problem(const std::vector<double>& leaf_weights) const {
  FillProblem p;
  for (const auto& c : classes_) p.capacity.push_back(static_cast<double>(c.capacity));
  p.queues.resize(leaf_weights.size());
  for (size_t q = 0; q < leaf_weights.size(); ++q) {
    p.queues[q].weight = leaf_weights[q];
    if (leaf_weights[q] <= 0 || q >= demand_.size()) continue;
    for (const auto& [mask, milli] : demand_[q])
      if (milli > 0) p.queues[q].demand[mask] = static_cast<double>(milli) * SpeedOf(mask);
  }
  return p;
}

}  // namespace berth::tenancy
