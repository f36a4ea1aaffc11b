// BuildQueueViews (queue_views.h).
#include "berth/server/queue_views.h"

#include <algorithm>

#include "berth/tenancy/budget.h"

namespace berth::server {

using nlohmann::json;

json QueuesBody(std::map<std::string, json> items, const QueueViews& views) {
  json list = json::array();
  for (auto& [name, item] : items) list.push_back(std::move(item));
  json body = {{"queues", std::move(list)}, {"unit", views.unit}};
  if (!views.reference.empty()) body["reference"] = views.reference;
  return body;
}

QueueViews BuildQueueViews(const tenancy::Ledger& ledger, const cluster::Cluster& cluster, TimeUs now) {
  const tenancy::QueueTree& tree = ledger.tree();
  QueueViews q;
  q.unit = tenancy::UnitName(ledger.unit());
  q.reference = tree.reference();
  auto gpus_or_null = [](int64_t milli) {
    return milli == tenancy::kUnlimited ? json(nullptr) : json(static_cast<double>(milli) / kMilliPerGpu);
  };
  auto gpus = [](int64_t milli) { return static_cast<double>(milli) / kMilliPerGpu; };
  for (int32_t i = 0; i < tree.size(); ++i) {
    const tenancy::QueueNode& n = tree.node(i);
    json dims = json::object();
    for (int32_t d = ledger.num_dims() - 1; d >= 0; --d) {  // "*" first
      const bool all = d == ledger.all_types_dim();
      if (!all && !n.has_quota[d] && ledger.usage(i, d) == 0) continue;
      const tenancy::Quota& quota = n.quota[d];
      dims[all ? "*" : cluster.gpu_type(GpuTypeId(static_cast<int16_t>(d))).name] = {
          {"guarantee", n.has_quota[d] ? json(gpus(quota.guarantee)) : json(nullptr)},
          {"limit", n.has_quota[d] ? gpus_or_null(quota.limit) : json(nullptr)},
          {"borrow_limit", n.has_quota[d] ? gpus_or_null(quota.borrow_limit) : json(nullptr)},
          {"lend_limit", n.has_quota[d] ? gpus_or_null(quota.lend_limit) : json(nullptr)},
          {"usage", gpus(ledger.usage(i, d))},
          {"borrowed", gpus(ledger.borrowed(i, d))}};
    }
    const int32_t all = ledger.all_types_dim();
    q.names.push_back(n.name);
    q.parents.push_back(n.parent);
    q.items.push_back({{"name", n.name},
                       {"parent", n.parent >= 0 ? json(tree.node(n.parent).name) : json(nullptr)},
                       {"leaf", n.is_leaf()},
                       {"weight", n.weight},
                       {"guarantee_gpus", gpus(ledger.guarantee(i, all))},
                       {"usage_gpus", gpus(ledger.usage(i, all))},
                       {"borrowed_gpus", gpus(ledger.borrowed(i, all))},
                       {"unit", q.unit},
                       {"dominant_share", ledger.DominantShare(i)},
                       {"dimensions", dims}});
    if (const tenancy::BudgetSpec* b = ledger.budgets().spec(i)) {
      const double amount = static_cast<double>(b->amount) / 1e6;
      const double spent = static_cast<double>(ledger.budgets().Spent(i, now)) / 1e6;
      const bool exhausted = ledger.budgets().IsSpent(i, now);
      q.items.back()["budget"] = {
          {"amount", amount},
          {"unit", ledger.BudgetWord(i)},
          {"period", tenancy::PeriodName(*b)},
          {"when_spent", tenancy::WhenSpentName(b->when_spent)},
          {"spent", spent},
          {"remaining", std::max(0.0, amount - spent)},
          {"rate_per_hour", static_cast<double>(ledger.budgets().Rate(i)) / 1e6},
          {"period_start", tenancy::FormatUtc(std::max<TimeUs>(0, ledger.budgets().CurrentPeriodStart(i, now)))},
          {"renews_at", tenancy::FormatUtc(ledger.budgets().NextRenewal(i, now))},
          {"exhausted", exhausted}};
      q.budgets.push_back({n.name, ledger.BudgetWord(i), amount, spent, exhausted});
    }
  }
  return q;
}

}  // namespace berth::server
