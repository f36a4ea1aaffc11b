// SpeedModel over the throughput model (ledger_speeds.h).
#include "berth/hetero/ledger_speeds.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <vector>

#include "berth/hetero/normalize.h"
#include "berth/hetero/speed_score.h"

namespace berth::hetero {
namespace {

int64_t ToPerMillion(double factor) {
  return std::max<int64_t>(1, std::llround(factor * static_cast<double>(tenancy::kPerMillion)));
}

class LedgerSpeeds final : public tenancy::SpeedModel {
 public:
  LedgerSpeeds(std::shared_ptr<const ThroughputModel> model, Normalizer normalizer, std::vector<std::string> types)
      : model_(std::move(model)), normalizer_(std::move(normalizer)), types_(std::move(types)) {
    for (const auto& t : types_) capacity_.push_back(ToPerMillion(normalizer_.Factor(JobClass{}, t)));
  }

  int64_t PerMillion(const job::JobSpec& job, GpuTypeId type) const override {
    if (!type.valid() || type.value() >= static_cast<int32_t>(types_.size())) return tenancy::kPerMillion;
    if (job.job_class.empty()) return capacity_[type.value()];
    const JobClass c{job.job_class, static_cast<int32_t>(std::max<int64_t>(1, job.total_gpus()))};
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, fresh] = cache_.try_emplace(c);
    if (fresh) {
      it->second.resize(types_.size());
      for (size_t t = 0; t < types_.size(); ++t) {
        const double f = normalizer_.Factor(c, types_[t]);
        // A class measured as unable to run on a type is still charged there
        // (it was placed): at the type's capacity factor.
        it->second[t] = f > 0 ? ToPerMillion(f) : capacity_[t];
      }
    }
    return it->second[type.value()];
  }
  int64_t CapacityPerMillion(GpuTypeId type) const override {
    if (!type.valid() || type.value() >= static_cast<int32_t>(types_.size())) return tenancy::kPerMillion;
    return capacity_[type.value()];
  }
  const std::string& reference() const override { return normalizer_.reference(); }

 private:
  std::shared_ptr<const ThroughputModel> model_;  // kept alive for the normalizer
  Normalizer normalizer_;
  std::vector<std::string> types_;   // per cluster type id: its catalog name
  std::vector<int64_t> capacity_;    // per cluster type id
  mutable std::mutex mu_;
  mutable std::map<JobClass, std::vector<int64_t>> cache_;
};

}  // namespace

StatusOr<std::shared_ptr<const tenancy::SpeedModel>> MakeLedgerSpeeds(std::shared_ptr<const ThroughputModel> model,
                                                                     const std::string& reference,
                                                                     const cluster::Cluster& cluster) {
  if (!model) return InvalidArgument("normalized units: no throughput model");
  BERTH_ASSIGN_OR_RETURN(Normalizer n, Normalizer::Create(*model, reference));
  std::vector<std::string> types;
  for (const auto& t : cluster.gpu_types()) {
    const AcceleratorSpec* s = model->catalog().Find(t.name);
    if (!s)
      return InvalidArgument("normalized units: the cluster's GPU type '" + t.name +
                             "' is not in the accelerator catalog (add it or an alias to --catalog)");
    types.push_back(s->name);
  }
  return std::shared_ptr<const tenancy::SpeedModel>(
      std::make_shared<LedgerSpeeds>(std::move(model), std::move(n), std::move(types)));
}

StatusOr<std::shared_ptr<const tenancy::SpeedModel>> SpeedsForTree(const tenancy::QueueTree& tree,
                                                                  const std::string& catalog,
                                                                  const std::string& throughputs,
                                                                  const cluster::Cluster& cluster) {
  if (tree.unit() != tenancy::Unit::kNormalized && tree.reference().empty())
    return std::shared_ptr<const tenancy::SpeedModel>();
  auto model = LoadThroughputModel(catalog, throughputs);
  if (!model.ok()) return InvalidArgument("queues in normalized units: " + model.status().message());
  return MakeLedgerSpeeds(std::move(model).value(), tree.reference(), cluster);
}

Status AddCatalogPrices(tenancy::QueueTree& tree, const std::string& catalog) {
  if (!tree.has_money_budget()) return Status::Ok();
  StatusOr<Catalog> c = LoadCatalog(catalog);
  if (!c.ok()) return InvalidArgument("budgets in money: " + c.status().message());
  std::map<std::string, int64_t> prices;
  for (const AcceleratorSpec& a : c->types()) {
    if (a.price_per_hour <= 0) continue;
    const auto milli = static_cast<int64_t>(std::llround(a.price_per_hour * 1000));
    prices.emplace(a.name, milli);
    for (const auto& alias : a.aliases) prices.emplace(alias, milli);
  }
  tree.AddPrices(prices);
  return Status::Ok();
}

}  // namespace berth::hetero
