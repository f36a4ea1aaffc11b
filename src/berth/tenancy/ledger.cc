// Quota arithmetic and usage accounting of the queue tree.
#include "berth/tenancy/ledger.h"

#include <algorithm>
#include <cmath>

namespace berth::tenancy {

Ledger::Ledger(QueueTree tree, const cluster::Cluster& cluster, TimeUs half_life,
               std::shared_ptr<const SpeedModel> speeds)
    : tree_(std::move(tree)), cluster_(&cluster), half_life_(half_life) {
  if (normalized()) {
    speeds_ = std::move(speeds);
    unit_word_ = (tree_.reference().empty() ? std::string("reference") : tree_.reference()) + "-equivalents";
  }
  capacity_.assign(tree_.num_dims(), 0);
  for (const auto& n : cluster.nodes()) {
    if (n.gpu_count == 0 || !n.gpu_type.valid() || n.gpu_type.value() >= tree_.num_types()) continue;
    int64_t milli = int64_t{n.gpu_count} * kMilliPerGpu;
    if (speeds_) milli = ScaleMilli(milli, speeds_->CapacityPerMillion(n.gpu_type));
    capacity_[n.gpu_type.value()] += milli;
    capacity_[tree_.all_types_dim()] += milli;
  }
  price_.assign(cluster.gpu_types().size(), 0);
  for (size_t t = 0; t < price_.size(); ++t)
    price_[t] = std::max<int64_t>(0, tree_.PriceOf(GpuTypeId(static_cast<int16_t>(t)), cluster));
  std::vector<int32_t> parents;
  std::vector<std::optional<BudgetSpec>> budgets;
  for (int32_t q = 0; q < tree_.size(); ++q) {
    parents.push_back(tree_.node(q).parent);
    budgets.push_back(tree_.node(q).budget);
  }
  budgets_ = Budgets(std::move(parents), std::move(budgets));
  if (tree_.entitlement() == EntitlementMode::kReachable) {
    entitle_ = Entitlement(cluster, speeds_.get());
    reachable_ = entitle_.usable();
  }
  Grow();
  Recompute(own_, held_, top_taken_);  // guarantees kept back from lending are held from the start
}

void Ledger::Grow() {
  // An auto leaf has no quota: it holds nothing until charged.
  const size_t want = static_cast<size_t>(tree_.size()) * num_dims();
  usage_.resize(want, 0);
  own_.resize(want, 0);
  held_.resize(want, 0);
  top_taken_.resize(num_dims(), 0);
  decayed_.resize(tree_.size(), 0.0);
  entitled_.resize(tree_.size(), 0.0);
  entitled_seconds_.resize(tree_.size(), 0.0);
  while (budgets_.size() < tree_.size()) budgets_.AddQueue(tree_.node(budgets_.size()).parent);
}

int64_t Ledger::Taken(int32_t queue, int32_t dim, int64_t held) const {
  const QueueNode& n = tree_.node(queue);
  if (!n.has_quota[dim] || n.quota[dim].lend_limit == kUnlimited) return held;
  return std::max(held, n.quota[dim].guarantee - n.quota[dim].lend_limit);
}

void Ledger::Recompute(const std::vector<int64_t>& own, std::vector<int64_t>& held, std::vector<int64_t>& top) const {
  held.assign(own.size(), 0);
  top.assign(num_dims(), 0);
  // Post-order without recursion: a queue after all of its children.
  std::vector<int32_t> order, stack;
  for (int32_t q = 0; q < tree_.size(); ++q)
    if (tree_.node(q).parent < 0) stack.push_back(q);
  while (!stack.empty()) {
    const int32_t q = stack.back();
    stack.pop_back();
    order.push_back(q);
    for (int32_t c : tree_.node(q).children) stack.push_back(c);
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int32_t q = *it;
    for (int32_t d = 0; d < num_dims(); ++d) {
      int64_t h = own[Index(q, d)];
      for (int32_t c : tree_.node(q).children) h += Taken(c, d, held[Index(c, d)]);
      held[Index(q, d)] = h;
      if (tree_.node(q).parent < 0) top[d] += Taken(q, d, h);
    }
  }
}

int64_t Ledger::Amount(const job::JobSpec& job, GpuTypeId type, int64_t milli) const {
  if (!speeds_ || !type.valid()) return milli;
  return ScaleMilli(milli, speeds_->PerMillion(job, type));
}

int64_t Ledger::LeastAmount(const job::JobSpec& job, int64_t milli) const {
  if (!speeds_) return milli;
  int64_t least = -1;
  for (int32_t t = 0; t < tree_.num_types(); ++t) {
    if (capacity_[t] <= 0) continue;
    const GpuTypeId type(static_cast<int16_t>(t));
    bool accepted = false;
    for (const auto& g : job.groups) accepted = accepted || (g.gpus > 0 && g.gpu_types.Accepts(type));
    if (!accepted) continue;
    const int64_t a = Amount(job, type, milli);
    if (least < 0 || a < least) least = a;
  }
  return least < 0 ? milli : least;
}

int32_t Ledger::QueueFor(const job::JobSpec& job) {
  int32_t q = tree_.LeafFor(job);
  if (q < 0 && tree_.auto_leaves()) {
    q = tree_.AutoLeaf(job.queue.empty() ? job.tenant : job.queue);
    Grow();
  }
  return q;
}

int64_t Ledger::guarantee(int32_t queue, int32_t dim) const {
  const QueueNode& n = tree_.node(queue);
  return n.has_quota[dim] ? n.quota[dim].guarantee : 0;
}

int64_t Ledger::borrowed(int32_t queue, int32_t dim) const {
  if (!tree_.node(queue).has_quota[dim]) return 0;
  return std::max<int64_t>(0, usage(queue, dim) - guarantee(queue, dim));
}

void Ledger::Add(int32_t queue, int32_t dim, int64_t delta) {
  own_[Index(queue, dim)] += delta;
  for (int32_t q = queue; q >= 0; q = tree_.node(q).parent) usage_[Index(q, dim)] += delta;
  // Held capacity: the change of taken() goes up until a kept-back guarantee absorbs it.
  int64_t dh = delta;
  for (int32_t q = queue; q >= 0 && dh != 0; q = tree_.node(q).parent) {
    int64_t& h = held_[Index(q, dim)];
    const int64_t before = Taken(q, dim, h);
    h += dh;
    dh = Taken(q, dim, h) - before;
    if (tree_.node(q).parent < 0) top_taken_[dim] += dh;
  }
}

void Ledger::Charge(int32_t queue, GpuTypeId type, int64_t milli, TimeUs now, int64_t gpu_milli) {
  Advance(now);
  if (budgets_.any()) budgets_.Charge(queue, milli, (gpu_milli < 0 ? milli : gpu_milli) * price(type), now);
  if (type.valid() && type.value() < tree_.num_types()) Add(queue, type.value(), milli);
  Add(queue, all_types_dim(), milli);
}

void Ledger::Uncharge(int32_t queue, GpuTypeId type, int64_t milli, TimeUs now, int64_t gpu_milli) {
  Charge(queue, type, -milli, now, gpu_milli < 0 ? -1 : -gpu_milli);
}

void Ledger::Advance(TimeUs now) {
  AdvanceUsage(now);
  if (reachable_ && entitle_.version() != solved_version_ &&
      (!refreshed_ || now - last_refresh_ >= tree_.entitlement_refresh())) {
    last_refresh_ = now;
    refreshed_ = true;
    RefreshEntitlement();
  }
}

void Ledger::AdvanceUsage(TimeUs now) {
  if (!advanced_) {
    advanced_ = true;
    last_advance_ = now;
    return;
  }
  if (now <= last_advance_) return;
  const double dt = UsToSeconds(now - last_advance_);
  last_advance_ = now;
  if (reachable_)
    for (int32_t q = 0; q < tree_.size(); ++q) entitled_seconds_[q] += entitled_[q] * dt;
  const int32_t all = all_types_dim();
  if (half_life_ <= 0) {
    for (int32_t q = 0; q < tree_.size(); ++q) decayed_[q] += static_cast<double>(usage(q, all)) * dt;
    return;
  }
  const double lambda = std::log(2.0) / UsToSeconds(half_life_);
  const double keep = std::exp(-lambda * dt);
  const double gain = (1.0 - keep) / lambda;
  for (int32_t q = 0; q < tree_.size(); ++q)
    decayed_[q] = decayed_[q] * keep + static_cast<double>(usage(q, all)) * gain;
}

DemandToken Ledger::AddDemand(int32_t queue, const job::JobSpec& job) {
  if (!reachable_ || queue < 0) return {};
  DemandToken t = entitle_.DemandOf(job);
  entitle_.Add(queue, t, +1);
  return t;
}

void Ledger::RemoveDemand(int32_t queue, const DemandToken& token) {
  if (reachable_) entitle_.Add(queue, token, -1);
}

void Ledger::RefreshEntitlement() {
  if (!reachable_) return;
  solved_version_ = entitle_.version();
  const int32_t n = tree_.size();
  // Level by level (FillTree): siblings share their parent's entitlement.
  std::vector<int32_t> parent(n);
  std::vector<double> weight(n);
  for (int32_t q = 0; q < n; ++q) {
    parent[q] = tree_.node(q).parent;
    weight[q] = tree_.node(q).weight;
  }
  const FillProblem problem = entitle_.Problem(weight);
  std::vector<std::map<uint32_t, double>> demand(n);
  for (int32_t q = 0; q < n && q < static_cast<int32_t>(problem.queues.size()); ++q)
    if (tree_.node(q).is_leaf()) demand[q] = problem.queues[q].demand;
  const TreeFill fill = FillTree(problem.capacity, parent, weight, demand);
  const std::vector<double>& e = fill.e;
  const std::vector<std::vector<double>>& split = fill.split;
  const int32_t types = tree_.num_types();
  entitled_.assign(n, 0.0);
  entitled_type_.assign(static_cast<size_t>(n) * types, 0.0);
  for (int32_t q = 0; q < n && q < static_cast<int32_t>(e.size()); ++q) {
    if (!tree_.node(q).is_leaf()) continue;
    for (int32_t a = q; a >= 0; a = tree_.node(a).parent) {
      entitled_[a] += e[q];
      for (int32_t c = 0; c < entitle_.num_classes(); ++c) {
        const GpuTypeId t = entitle_.node_class(c).type;
        if (t.value() < types) entitled_type_[static_cast<size_t>(a) * types + t.value()] += split[q][c];
      }
    }
  }
}

double Ledger::DominantShare(int32_t queue) const {
  double share = 0;
  for (int32_t d = 0; d < num_dims(); ++d)
    if (capacity_[d] > 0) share = std::max(share, static_cast<double>(usage(queue, d)) / static_cast<double>(capacity_[d]));
  return share / tree_.node(queue).weight;
}

std::string Ledger::DimName(int32_t dim) const {
  if (dim == all_types_dim()) return "all GPU types";
  return cluster_->gpu_type(GpuTypeId(static_cast<int16_t>(dim))).name;
}

namespace {
std::string Gpus(int64_t milli) {
  std::string s = std::to_string(milli / kMilliPerGpu);
  if (milli % kMilliPerGpu) {
    std::string frac = std::to_string(1000 + std::abs(milli % kMilliPerGpu)).substr(1);
    while (frac.back() == '0') frac.pop_back();
    s = (milli < 0 && milli > -kMilliPerGpu ? "-" : "") + s + "." + frac;
  }
  return s;
}
}  // namespace

std::string Ledger::BudgetWord(int32_t q) const {
  const BudgetSpec* b = budgets_.spec(q);
  if (b && b->money) return "money";
  return normalized() ? (tree_.reference().empty() ? std::string("reference") : tree_.reference()) + "-equivalent-hours"
                      : std::string("GPU-hours");
}

std::string Ledger::BudgetWhy(int32_t q, TimeUs now) const {
  const BudgetSpec* b = budgets_.spec(q);
  if (!b) return "";
  auto micro = [](int64_t v) { return Gpus((v + (v >= 0 ? 500 : -500)) / 1000); };  // to three decimals
  std::string s = "queue '" + tree_.node(q).name + "': budget of " + micro(b->amount) + " " + BudgetWord(q) + " per " +
                  PeriodName(*b) + " spent (" + micro(budgets_.Spent(q, now)) + " used since " +
                  FormatUtc(std::max<TimeUs>(0, budgets_.CurrentPeriodStart(q, now))) + "; ";
  s += b->period == BudgetPeriod::kRolling ? "the window moves on at " : "renews at ";
  s += FormatUtc(budgets_.NextRenewal(q, now)) + ")";
  if (b->when_spent == WhenSpent::kIdle) s += "; new work runs only on idle capacity";
  return s;
}

Status Ledger::CheckDim(int32_t queue, int32_t dim, int64_t x) const {
  if (x <= 0) return Status::Ok();
  int64_t growth = x;      // growth of held() at the queue the walk is at
  bool admitted = false;   // the new use fits a guarantee on the way up
  int32_t borrower = -1;   // the first queue on the way that borrows
  for (int32_t q = queue; q >= 0; q = tree_.node(q).parent) {
    const QueueNode& n = tree_.node(q);
    const bool has = n.has_quota[dim];
    const Quota& quota = n.quota[dim];
    auto where = [&] { return "queue '" + n.name + "' (" + DimName(dim) + "): "; };
    if (has && quota.limit != kUnlimited && usage(q, dim) + x > quota.limit)
      return ResourceExhausted(where() + "would use " + Gpus(usage(q, dim) + x) + " " + unit_word_ +
                               ", over its limit of " + Gpus(quota.limit));
    if (admitted) continue;
    const int64_t held_before = held_[Index(q, dim)];
    const int64_t held_after = held_before + growth;
    if (has) {
      const int64_t excess = held_after - quota.guarantee;
      if (excess <= 0) {
        admitted = true;  // within its guarantee: what others borrowed of it is reclaimed
        continue;
      }
      if (quota.borrow_limit != kUnlimited && excess > quota.borrow_limit) {
        std::string why = where() + "would borrow " + Gpus(excess) + " " + unit_word_ +
                          ", over its borrowing limit of " + Gpus(quota.borrow_limit);
        const int64_t kept = held_after - (usage(q, dim) + x);
        if (kept > 0)
          why += " (it would use " + Gpus(usage(q, dim) + x) + "; its queues keep " + Gpus(kept) +
                 " of their guarantees from lending)";
        return ResourceExhausted(why);
      }
      if (borrower < 0) borrower = q;
    }
    growth = Taken(q, dim, held_after) - Taken(q, dim, held_before);
  }
  if (admitted || borrower < 0) return Status::Ok();
  const int64_t pool = capacity_[dim] - top_taken_[dim];
  if (growth <= pool) return Status::Ok();
  const QueueNode& b = tree_.node(borrower);
  const int64_t excess = held_[Index(borrower, dim)] + x - b.quota[dim].guarantee;
  return ResourceExhausted("queue '" + b.name + "' (" + DimName(dim) + "): would borrow " + Gpus(excess) +
                           " " + unit_word_ + " beyond its guarantee of " + Gpus(b.quota[dim].guarantee) +
                           ", but only " + Gpus(std::max<int64_t>(0, pool)) + " " + unit_word_ +
                           " are left to borrow (idle guarantees within their lending limits, and capacity "
                           "guaranteed to no queue)");
}

Status Ledger::CheckFits(int32_t queue, GpuTypeId type, int64_t milli, int64_t pending_extra) const {
  return CheckFits(queue, type, milli, pending_extra, pending_extra);
}

Status Ledger::CheckFits(int32_t queue, GpuTypeId type, int64_t milli, int64_t pending_type,
                         int64_t pending_all) const {
  if (queue < 0 || queue >= tree_.size()) return InvalidArgument("no queue " + std::to_string(queue));
  if (type.valid() && type.value() < tree_.num_types())
    BERTH_RETURN_IF_ERROR(CheckDim(queue, type.value(), milli + pending_type));
  return CheckDim(queue, all_types_dim(), milli + pending_all);
}

Status Ledger::CheckConsistency() const {
  std::vector<int64_t> sum(usage_.size(), 0);
  for (int32_t q = 0; q < tree_.size(); ++q)
    for (int32_t d = 0; d < num_dims(); ++d)
      for (int32_t a = q; a >= 0; a = tree_.node(a).parent) sum[Index(a, d)] += own_[Index(q, d)];
  std::vector<int64_t> held, top;
  Recompute(own_, held, top);
  for (int32_t q = 0; q < tree_.size(); ++q) {
    for (int32_t d = 0; d < num_dims(); ++d) {
      const std::string what = "ledger: queue '" + tree_.node(q).name + "' " + DimName(d) + ": ";
      if (sum[Index(q, d)] != usage_[Index(q, d)])
        return Internal(what + "usage " + std::to_string(usage_[Index(q, d)]) + ", recomputed " +
                        std::to_string(sum[Index(q, d)]));
      if (held[Index(q, d)] != held_[Index(q, d)])
        return Internal(what + "held " + std::to_string(held_[Index(q, d)]) + ", recomputed " +
                        std::to_string(held[Index(q, d)]));
    }
  }
  for (int32_t d = 0; d < num_dims(); ++d)
    if (top[d] != top_taken_[d])
      return Internal("ledger: " + DimName(d) + ": top queues take " + std::to_string(top_taken_[d]) +
                      ", recomputed " + std::to_string(top[d]));
  return Status::Ok();
}

}  // namespace berth::tenancy
