// Normalized quota in scenario files: running jobs are charged to their
// queue's quota by the GPU type they were placed on, in reference-GPU
// equivalents of their class (hetero::QuotaLedger).
//
//   hetero-model [reference=H100] [catalog=FILE] [throughputs=FILE]
//   hetero-quota QUEUE [fungible=REF_GPUS] [weight=W] [TYPE=GPUS]...
//   hetero-charge            # charge every running job not charged yet
//   hetero-accrue T          # usage accrues for T (e.g. 1h)
//   expect charge QUEUE [gpus=N] [milli-ref=N] [fungible-milli-ref=N] [type-gpus=N] [below=QUEUE]
//   expect fair-share QUEUE...   # the ledger's fair-share order, most deserving first
//
// A job's queue is its `queue`, else its `tenant`; its class is its `class`
// at a scale of its GPU count. Finished jobs are released at the next
// hetero-charge or expectation.
#include "berth/testing/scenario_hetero.h"

#include <cmath>
#include <memory>
#include <set>

#include "berth/hetero/accounting.h"
#include "berth/hetero/catalog.h"
#include "berth/hetero/normalize.h"
#include "berth/common/csv.h"
#include "berth/hetero/throughput.h"
#include "berth/testing/paths.h"

namespace berth::testing {
namespace {

struct HeteroState {
  std::unique_ptr<hetero::ThroughputModel> model;
  std::unique_ptr<hetero::Normalizer> normalizer;
  std::unique_ptr<hetero::QuotaLedger> ledger;
  std::set<int64_t> charged;  // job ids held in the ledger
};
using StatePtr = std::shared_ptr<HeteroState>;

Status NeedLedger(const HeteroState& s) {
  return s.ledger ? Status::Ok() : FailedPrecondition("no throughput model: run hetero-model first");
}

Status Model(const StatePtr& s, ScenarioRunner& r, ScenarioArgs& a) {
  if (!a.words().empty()) return InvalidArgument("usage: hetero-model [reference=TYPE] [catalog=F] [throughputs=F]");
  const std::string reference = a.Get("reference").value_or("H100");
  auto path = [&](const char* key, std::string fallback) {
    auto v = a.Get(key);
    return v ? r.ResolvePath(*v) : fallback;
  };
  const std::string catalog_path = path("catalog", SourceDir() + "/data/accelerators.yaml");
  const std::string table_path = path("throughputs", DataDir() + "/gavel/simulation_throughputs.json");
  BERTH_RETURN_IF_ERROR(a.CheckAllUsed());
  BERTH_ASSIGN_OR_RETURN(hetero::Catalog catalog, hetero::LoadCatalog(catalog_path));
  BERTH_ASSIGN_OR_RETURN(hetero::MeasuredTable table, hetero::LoadGavelThroughputs(table_path, catalog));
  BERTH_ASSIGN_OR_RETURN(hetero::ThroughputModel model, hetero::ThroughputModel::Fit(catalog, table));
  s->ledger.reset();
  s->normalizer.reset();
  s->charged.clear();
  s->model = std::make_unique<hetero::ThroughputModel>(std::move(model));
  BERTH_ASSIGN_OR_RETURN(hetero::Normalizer n, hetero::Normalizer::Create(*s->model, reference));
  s->normalizer = std::make_unique<hetero::Normalizer>(std::move(n));
  s->ledger = std::make_unique<hetero::QuotaLedger>(*s->normalizer);
  return Status::Ok();
}

Status Quota(const StatePtr& s, ScenarioRunner&, ScenarioArgs& a) {
  BERTH_RETURN_IF_ERROR(NeedLedger(*s));
  if (a.words().size() != 1) return InvalidArgument("usage: hetero-quota QUEUE [fungible=REF_GPUS] [weight=W] [TYPE=GPUS]...");
  hetero::QueueQuota q;
  for (ScenarioArgs::Pair& p : a.pairs()) {
    p.used = true;
    double v = 0;
    if (p.op != '=' || !ParseDouble(p.value, v).ok() || v < 0)
      return InvalidArgument(p.key + ": expected a non-negative number, not '" + p.value + "'");
    if (p.key == "fungible") {
      q.fungible = static_cast<hetero::MilliRef>(std::llround(v * hetero::kMilliPerRef));
    } else if (p.key == "weight") {
      if (v <= 0) return InvalidArgument("weight: must be positive");
      q.weight = v;
    } else {
      if (v != std::floor(v)) return InvalidArgument(p.key + ": a type quota is whole GPUs");
      q.type_gpus[p.key] = static_cast<int64_t>(v);
    }
  }
  return s->ledger->SetQuota(a.words()[0], std::move(q));
}

// Releases finished jobs; with `admit`, charges running jobs not yet charged.
Status Sync(const StatePtr& s, ScenarioRunner& r, bool admit) {
  BERTH_RETURN_IF_ERROR(NeedLedger(*s));
  BERTH_ASSIGN_OR_RETURN(scheduler::Scheduler * sched, r.Sched());
  for (auto it = s->charged.begin(); it != s->charged.end();) {
    const scheduler::JobRecord* rec = sched->Find(JobId(*it));
    if (rec && rec->state == job::JobState::kRunning) {
      ++it;
      continue;
    }
    BERTH_RETURN_IF_ERROR(s->ledger->Release(JobId(*it)));
    it = s->charged.erase(it);
  }
  if (!admit) return Status::Ok();
  for (const auto& [id, name] : r.job_names()) {
    const scheduler::JobRecord* rec = sched->Find(JobId(id));
    if (!rec || rec->state != job::JobState::kRunning || s->charged.count(id) || rec->placements.empty()) continue;
    const auto& node = r.cluster()->node(rec->placements.front().alloc.node);
    if (!node.gpu_type.valid()) return FailedPrecondition(name + " runs on a node without GPUs");
    int64_t gpus = 0;
    for (const auto& p : rec->placements) {
      if (r.cluster()->node(p.alloc.node).gpu_type != node.gpu_type)
        return FailedPrecondition(name + " spans GPU types; a charge is for one type");
      gpus += p.alloc.gpu_count();
    }
    const std::string queue = !rec->spec.queue.empty() ? rec->spec.queue : rec->spec.tenant;
    if (queue.empty()) return FailedPrecondition(name + " has no queue or tenant to charge");
    const hetero::JobClass cls{rec->spec.job_class, static_cast<int32_t>(gpus)};
    const std::string& type = r.cluster()->gpu_type(node.gpu_type).name;
    auto charge = s->ledger->Admit(queue, JobId(id), cls, type, gpus);
    if (!charge.ok()) return Status(charge.status().code(), name + ": " + charge.status().message());
    s->charged.insert(id);
  }
  return Status::Ok();
}

Status Accrue(const StatePtr& s, ScenarioRunner& r, ScenarioArgs& a) {
  if (a.words().size() != 1) return InvalidArgument("usage: hetero-accrue T");
  BERTH_ASSIGN_OR_RETURN(TimeUs t, ParseScenarioTime(a.words()[0]));
  BERTH_RETURN_IF_ERROR(Sync(s, r, false));
  s->ledger->Accrue(static_cast<double>(t) / 1e6);
  return Status::Ok();
}

Status ExpectCharge(const StatePtr& s, ScenarioRunner& r, ScenarioArgs& a) {
  if (a.words().size() != 1) return InvalidArgument("usage: expect charge QUEUE [gpus=N] [milli-ref=N] ...");
  BERTH_RETURN_IF_ERROR(Sync(s, r, false));
  const std::string& queue = a.words()[0];
  const hetero::QueueUsage* u = s->ledger->usage(queue);
  const hetero::QueueUsage empty;
  if (!u) u = &empty;
  auto check = [&](const char* key, int64_t found) -> Status {
    BERTH_ASSIGN_OR_RETURN(std::optional<int64_t> want, a.GetInt(key));
    if (want && *want != found)
      return FailedPrecondition(queue + " holds " + key + " " + std::to_string(found) + ", not " +
                                std::to_string(*want));
    return Status::Ok();
  };
  BERTH_RETURN_IF_ERROR(check("gpus", u->gpus_in_use));
  BERTH_RETURN_IF_ERROR(check("milli-ref", u->equivalents_in_use));
  BERTH_RETURN_IF_ERROR(check("fungible-milli-ref", u->fungible_in_use));
  int64_t type_gpus = 0;
  for (const auto& [type, n] : u->type_gpus_in_use) type_gpus += n;
  BERTH_RETURN_IF_ERROR(check("type-gpus", type_gpus));
  if (auto other = a.Get("below")) {
    const hetero::QueueUsage* o = s->ledger->usage(*other);
    const int64_t theirs = o ? o->equivalents_in_use : 0;
    if (!(u->equivalents_in_use < theirs))
      return FailedPrecondition(queue + " holds " + std::to_string(u->equivalents_in_use) + " milli-ref, not below " +
                                *other + "'s " + std::to_string(theirs));
  }
  return a.CheckAllUsed();
}

Status ExpectFairShare(const StatePtr& s, ScenarioRunner&, ScenarioArgs& a) {
  BERTH_RETURN_IF_ERROR(NeedLedger(*s));
  BERTH_RETURN_IF_ERROR(a.CheckAllUsed());
  const std::vector<std::string> order = s->ledger->FairShareOrder();
  auto join = [](const std::vector<std::string>& v) {
    std::string out;
    for (const auto& x : v) out += (out.empty() ? "" : " ") + x;
    return out;
  };
  if (order != a.words()) return FailedPrecondition("fair-share order is " + join(order) + ", not " + join(a.words()));
  return Status::Ok();
}

}  // namespace

void RegisterScenarioHetero(ScenarioRunner& r) {
  auto s = std::make_shared<HeteroState>();
  auto bind = [s](Status (*f)(const StatePtr&, ScenarioRunner&, ScenarioArgs&)) {
    return [s, f](ScenarioRunner& runner, ScenarioArgs& args) { return f(s, runner, args); };
  };
  r.AddCommand("hetero-model", bind(Model));
  r.AddCommand("hetero-quota", bind(Quota));
  r.AddCommand("hetero-charge", [s](ScenarioRunner& runner, ScenarioArgs& args) -> Status {
    if (!args.words().empty() || !args.pairs().empty()) return InvalidArgument("usage: hetero-charge");
    return Sync(s, runner, true);
  });
  r.AddCommand("hetero-accrue", bind(Accrue));
  r.AddExpectation("charge", bind(ExpectCharge));
  r.AddExpectation("fair-share", bind(ExpectFairShare));
}

}  // namespace berth::testing
