// hetero-speed and hetero-cost: the score plugins, and the policies and
// model loading that make them reachable from simulate and serve.
#include "berth/hetero/speed_score.h"

#include <algorithm>
#include <cmath>

namespace berth::hetero {
namespace {

class SpeedScore final : public framework::ScorePlugin {
 public:
  SpeedScore(std::shared_ptr<const ThroughputModel> model, bool cost)
      : model_(std::move(model)), cost_(cost) {}
  std::string_view Name() const override { return cost_ ? "hetero-cost" : "hetero-speed"; }

  int64_t Score(const framework::CycleContext& ctx, const framework::TaskRequest&, NodeId node) const override {
    const auto& cl = ctx.state.cluster();
    const auto& n = cl.node(node);
    if (!n.gpu_type.valid()) return 0;
    const double per_type = Value(ctx, cl.gpu_type(n.gpu_type).name, n.gpu_type.value());
    return static_cast<int64_t>(std::llround(per_type));
  }
  void Normalize(const framework::CycleContext&, const framework::TaskRequest&, std::span<const NodeId>,
                 std::span<int64_t> scores) const override {
    if (scores.empty()) return;
    auto [lo, hi] = std::minmax_element(scores.begin(), scores.end());
    const int64_t min = *lo, max = *hi;
    for (auto& s : scores) s = max == min ? 0 : (s - min) * 100 / (max - min);
  }

 private:
  // Higher is better: speed (micro-units), or minus cost per unit of work.
  double Value(const framework::CycleContext& ctx, const std::string& type, int16_t type_id) const {
    if (cache_job_ != ctx.job.id.value()) {
      cache_job_ = ctx.job.id.value();
      cache_.assign(ctx.state.cluster().gpu_types().size(), NAN);
    }
    double& v = cache_[type_id];
    if (!std::isnan(v)) return v;
    JobClass c{ctx.job.job_class, static_cast<int32_t>(std::max<int64_t>(1, ctx.job.total_gpus()))};
    Estimate e = model_->Throughput(c, type);
    double speed = e.source != Source::kUnknown ? e.steps_per_s : std::max(0.0, model_->Relative(c, type, model_->pivot()));
    if (!cost_) {
      v = 1e6 * speed;
    } else {
      const AcceleratorSpec* s = model_->catalog().Find(type);
      const double price = s && s->price_per_hour > 0 ? s->price_per_hour : 0;
      v = speed > 0 ? -1e6 * price / speed : -1e18;
    }
    return v;
  }

  std::shared_ptr<const ThroughputModel> model_;
  bool cost_;
  mutable int64_t cache_job_ = -1;
  mutable std::vector<double> cache_;
};

}  // namespace

Status RegisterHeteroPlugins(framework::PluginRegistry& r, std::shared_ptr<const ThroughputModel> model) {
  if (!model) return InvalidArgument("hetero plugins need a throughput model");
  for (bool cost : {false, true}) {
    BERTH_RETURN_IF_ERROR(r.Register(
        cost ? "hetero-cost" : "hetero-speed",
        [model, cost](const framework::PluginArgs&) -> StatusOr<std::unique_ptr<framework::Plugin>> {
          return std::unique_ptr<framework::Plugin>(std::make_unique<SpeedScore>(model, cost));
        }));
  }
  return Status::Ok();
}

Status RegisterHeteroPolicies(framework::PolicyRegistry& r) {
  for (bool cost : {false, true}) {
    framework::Profile p;
    p.queue_sort = "fifo";
    p.filter = {framework::PluginRef{"fit"}};
    p.score = {framework::PluginRef{cost ? "hetero-cost" : "hetero-speed", {}, 100}, framework::PluginRef{"bestfit"}};
    p.permit = {framework::PluginRef{"gang"}};
    BERTH_RETURN_IF_ERROR(r.Register(
        cost ? "hetero-cost" : "hetero-speed", std::move(p),
        cost ? "the accelerator type with the lowest price per unit of the job's work (throughput model), best fit within it"
             : "the accelerator type that runs the job's class fastest (throughput model), best fit within it"));
  }
  return Status::Ok();
}

bool UsesHeteroPlugins(const framework::Profile& p) {
  for (const auto* point : {&p.admit, &p.plan, &p.filter, &p.candidates, &p.score, &p.reserve, &p.permit,
                            &p.post_filter, &p.bind})
    for (const auto& ref : *point)
      if (ref.name == "hetero-speed" || ref.name == "hetero-cost") return true;
  return false;
}

StatusOr<std::shared_ptr<const ThroughputModel>> LoadThroughputModel(const std::string& catalog_path,
                                                                     const std::string& throughputs) {
  BERTH_ASSIGN_OR_RETURN(Catalog catalog, LoadCatalog(catalog_path));
  MeasuredTable table;
  if (!throughputs.empty()) {
    BERTH_ASSIGN_OR_RETURN(table, LoadGavelThroughputs(throughputs, catalog));
  }
  BERTH_ASSIGN_OR_RETURN(ThroughputModel model, ThroughputModel::Fit(catalog, table));
  return std::make_shared<const ThroughputModel>(std::move(model));
}

}  // namespace berth::hetero
