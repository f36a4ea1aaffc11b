// Scenario commands for queues, quotas and preemption: the queue tree
// (`queue`, `queues FILE`), its unit (`units gpus|normalized [reference=H100]
// [catalog=F] [throughputs=F]`: normalized quotas are reference GPUs, charged
// from the throughput model), scheduler options (`option`), plugins added to the
// policy's profile (`plugins`, `plugin-args`), and the checks `expect usage`,
// `expect borrowed`, `expect preempted`, `expect preemptions`,
// `expect lost-gpu-seconds`, `expect work-done` (tests/scenarios/README.md).
//
// The set-up commands only record what to build; the tree, options and
// plugins take effect when the scheduler is created (a setup hook), and are
// kept across `reset` like the cluster and the policy.
#include <algorithm>
#include <cmath>
#include <memory>
#include <set>

#include "berth/common/csv.h"
#include "berth/hetero/ledger_speeds.h"
#include "berth/tenancy/queue_yaml.h"
#include "berth/testing/paths.h"
#include "berth/testing/scenario.h"

namespace berth::testing {
namespace {

using Args = ScenarioArgs;
using Runner = ScenarioRunner;
using scheduler::JobRecord;

// What the set-up commands recorded.
struct QueueSetup {
  std::vector<tenancy::QueueSpec> specs;
  tenancy::Unit unit = tenancy::Unit::kGpus;
  std::string reference, catalog, throughputs;
  std::optional<TimeUs> half_life;
  std::optional<TimeUs> grace;
  std::optional<TimeUs> restore;
  std::optional<TimeUs> yield_best_effort;
  std::optional<TimeUs> yield_training;
  // Extension point -> plugins to add, in order.
  std::vector<std::pair<std::string, std::string>> plugins;
  std::optional<std::string> queue_sort;
  std::optional<bool> head_of_line;
  std::map<std::string, framework::PluginArgs> args;  // plugin name -> args
  std::map<std::string, int64_t> prices;  // from queue files (budgets in money)
};

Status Fixed(Runner& r, const char* what) {
  if (r.has_scheduler()) return FailedPrecondition(std::string(what) + " is fixed once jobs run (use reset first)");
  return Status::Ok();
}

// "2", "0.5" GPUs -> milli-GPU.
StatusOr<int64_t> ParseGpus(const std::string& key, const std::string& text) {
  double v = 0;
  if (!ParseDouble(text, v).ok() || !std::isfinite(v) || v < 0)
    return InvalidArgument(key + ": expected a non-negative number of GPUs, got '" + text + "'");
  return static_cast<int64_t>(std::llround(v * kMilliPerGpu));
}

std::string Gpus(int64_t milli) {
  std::string s = std::to_string(milli / kMilliPerGpu);
  if (milli % kMilliPerGpu) {
    std::string frac = std::to_string(1000 + std::abs(milli % kMilliPerGpu)).substr(1);
    while (frac.back() == '0') frac.pop_back();
    s += "." + frac;
  }
  return s;
}

std::vector<std::string> SplitComma(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// queue name=N [parent=P] [weight=W] [tenants=a,b] [type=T|*] [guarantee=G] [limit=L] [borrow=B] [lend=L]
Runner::Handler Queue(std::shared_ptr<QueueSetup> setup) {
  return [setup](Runner& r, Args& a) -> Status {
    BERTH_RETURN_IF_ERROR(Fixed(r, "the queue tree"));
    if (!a.words().empty()) return InvalidArgument("queue takes key=value pairs only, e.g. queue name=a guarantee=8");
    const auto name = a.Get("name");
    if (!name || name->empty()) return InvalidArgument("queue needs name=NAME");
    auto it = std::find_if(setup->specs.begin(), setup->specs.end(), [&](const auto& s) { return s.name == *name; });
    const bool fresh = it == setup->specs.end();
    if (fresh) {
      setup->specs.emplace_back();
      setup->specs.back().name = *name;
      it = setup->specs.end() - 1;
    }
    tenancy::QueueSpec& spec = *it;
    if (auto parent = a.Get("parent")) {
      if (!fresh && spec.parent != *parent)
        return InvalidArgument("queue '" + *name + "': parent: already '" + spec.parent + "'");
      spec.parent = *parent;
    }
    BERTH_ASSIGN_OR_RETURN(std::optional<double> weight, a.GetNumber("weight"));
    if (weight) {
      if (*weight <= 0) return InvalidArgument("weight: must be positive");
      spec.weight = *weight;
    }
    if (auto tenants = a.Get("tenants"))
      for (auto& t : SplitComma(*tenants)) spec.tenants.push_back(std::move(t));
    const std::string type = a.Get("type").value_or("*");
    const struct {
      const char* key;
      int64_t tenancy::Quota::*field;
    } fields[] = {{"guarantee", &tenancy::Quota::guarantee},
                  {"limit", &tenancy::Quota::limit},
                  {"borrow", &tenancy::Quota::borrow_limit},
                  {"lend", &tenancy::Quota::lend_limit}};
    bool any = false;
    tenancy::Quota quota = spec.quotas.count(type) ? spec.quotas[type] : tenancy::Quota{};
    for (const auto& f : fields) {
      auto v = a.Get(f.key);
      if (!v) continue;
      BERTH_ASSIGN_OR_RETURN(quota.*f.field, ParseGpus(f.key, *v));
      any = true;
    }
    if (any) spec.quotas[type] = quota;
    else if (type != "*") return InvalidArgument("type=" + type + " without guarantee=, limit=, borrow= or lend=");
    return Status::Ok();
  };
}

// queues FILE.yaml | queues none
Runner::Handler Queues(std::shared_ptr<QueueSetup> setup) {
  return [setup](Runner& r, Args& a) -> Status {
    BERTH_RETURN_IF_ERROR(Fixed(r, "the queue tree"));
    if (a.words().size() != 1) return InvalidArgument("usage: queues FILE.yaml | queues none");
    if (a.words()[0] == "none") {
      setup->specs.clear();
      setup->half_life.reset();
      return Status::Ok();
    }
    BERTH_ASSIGN_OR_RETURN(tenancy::QueueFile file, tenancy::ReadQueueFile(r.ResolvePath(a.words()[0])));
    for (auto& q : file.queues) {
      for (const auto& s : setup->specs)
        if (s.name == q.name) return InvalidArgument("queue '" + q.name + "' is already defined");
      setup->specs.push_back(std::move(q));
    }
    if (file.has_half_life && !setup->half_life) setup->half_life = file.half_life;
    for (const auto& [type, price] : file.prices) setup->prices.emplace(type, price);
    return Status::Ok();
  };
}

// units gpus|normalized [reference=H100] [catalog=FILE] [throughputs=FILE]
Runner::Handler Units(std::shared_ptr<QueueSetup> setup) {
  return [setup](Runner& r, Args& a) -> Status {
    BERTH_RETURN_IF_ERROR(Fixed(r, "the queue tree's unit"));
    const char* usage = "usage: units gpus|normalized [reference=TYPE] [catalog=FILE] [throughputs=FILE]";
    if (a.words().size() != 1) return InvalidArgument(usage);
    BERTH_ASSIGN_OR_RETURN(setup->unit, tenancy::ParseUnit(a.words()[0]));
    auto path = [&](const char* key, std::string fallback) {
      auto v = a.Get(key);
      return v ? r.ResolvePath(*v) : fallback;
    };
    setup->reference = a.Get("reference").value_or(setup->unit == tenancy::Unit::kNormalized ? "H100" : "");
    setup->catalog = path("catalog", SourceDir() + "/data/accelerators.yaml");
    setup->throughputs = path("throughputs", DataDir() + "/gavel/simulation_throughputs.json");
    return a.CheckAllUsed();
  };
}

// option grace=T restore=T half-life=T yield-best-effort=T yield-training=T
Runner::Handler Option(std::shared_ptr<QueueSetup> setup) {
  return [setup](Runner& r, Args& a) -> Status {
    BERTH_RETURN_IF_ERROR(Fixed(r, "the scheduler options"));
    if (!a.words().empty() || a.pairs().empty())
      return InvalidArgument("usage: option grace=T restore=T half-life=T yield-best-effort=T yield-training=T");
    BERTH_ASSIGN_OR_RETURN(auto grace, a.GetTime("grace"));
    BERTH_ASSIGN_OR_RETURN(auto restore, a.GetTime("restore"));
    BERTH_ASSIGN_OR_RETURN(auto half_life, a.GetTime("half-life"));
    BERTH_ASSIGN_OR_RETURN(auto yield_be, a.GetTime("yield-best-effort"));
    BERTH_ASSIGN_OR_RETURN(auto yield_training, a.GetTime("yield-training"));
    if (yield_be) setup->yield_best_effort = yield_be;
    if (yield_training) setup->yield_training = yield_training;
    if (grace) setup->grace = grace;
    if (restore) setup->restore = restore;
    if (half_life) setup->half_life = half_life;
    return Status::Ok();
  };
}

constexpr const char* kPoints[] = {"admit", "plan", "filter", "candidates", "score",
                                   "reserve", "permit", "post-filter", "bind"};

std::vector<framework::PluginRef>* Point(framework::Profile& p, const std::string& point) {
  if (point == "admit") return &p.admit;
  if (point == "plan") return &p.plan;
  if (point == "filter") return &p.filter;
  if (point == "candidates") return &p.candidates;
  if (point == "score") return &p.score;
  if (point == "reserve") return &p.reserve;
  if (point == "permit") return &p.permit;
  if (point == "post-filter") return &p.post_filter;
  if (point == "bind") return &p.bind;
  return nullptr;
}

// plugins POINT=NAME[,NAME...] ... [queue-sort=NAME] [head-of-line=on|off] | plugins none
Runner::Handler Plugins(std::shared_ptr<QueueSetup> setup) {
  return [setup](Runner& r, Args& a) -> Status {
    BERTH_RETURN_IF_ERROR(Fixed(r, "the plugins"));
    if (a.words().size() == 1 && a.words()[0] == "none" && a.pairs().empty()) {
      setup->plugins.clear();
      setup->queue_sort.reset();
      setup->head_of_line.reset();
      setup->args.clear();
      return Status::Ok();
    }
    if (!a.words().empty() || a.pairs().empty())
      return InvalidArgument("usage: plugins admit=quota reserve=quota post-filter=NAME ... | plugins none");
    for (ScenarioArgs::Pair& p : a.pairs()) {
      p.used = true;
      if (p.op != '=') return InvalidArgument(p.key + ": use key=value");
      if (p.key == "queue-sort") {
        setup->queue_sort = p.value;
      } else if (p.key == "head-of-line") {
        if (p.value != "on" && p.value != "off") return InvalidArgument("head-of-line: expected on or off");
        setup->head_of_line = p.value == "on";
      } else {
        bool known = false;
        for (const char* k : kPoints) known = known || p.key == k;
        if (!known) {
          std::string list = "queue-sort, head-of-line";
          for (const char* k : kPoints) list += std::string(", ") + k;
          return InvalidArgument("unknown extension point '" + p.key + "' (known: " + list + ")");
        }
        for (auto& name : SplitComma(p.value)) setup->plugins.emplace_back(p.key, std::move(name));
      }
    }
    return Status::Ok();
  };
}

// plugin-args NAME key=value ...: arguments of a plugin wherever the profile uses it.
Runner::Handler PluginArgs(std::shared_ptr<QueueSetup> setup) {
  return [setup](Runner& r, Args& a) -> Status {
    BERTH_RETURN_IF_ERROR(Fixed(r, "the plugins"));
    if (a.words().size() != 1 || a.pairs().empty()) return InvalidArgument("usage: plugin-args NAME key=value ...");
    for (ScenarioArgs::Pair& p : a.pairs()) {
      p.used = true;
      setup->args[a.words()[0]][p.key] = p.value;
    }
    return Status::Ok();
  };
}

Status Setup(const QueueSetup& setup, Runner& r, framework::Profile& profile, scheduler::SchedulerOptions& o) {
  if (!setup.specs.empty()) {
    StatusOr<tenancy::QueueTree> tree = tenancy::QueueTree::Create(setup.specs, *r.cluster());
    if (!tree.ok()) return InvalidArgument("queue tree: " + tree.status().message());
    tree->set_unit(setup.unit, setup.reference);
    tree->AddPrices(setup.prices);
    BERTH_ASSIGN_OR_RETURN(o.speeds, hetero::SpeedsForTree(*tree, setup.catalog, setup.throughputs, *r.cluster()));
    o.queues = std::make_shared<const tenancy::QueueTree>(std::move(tree).value());
  }
  if (setup.half_life) o.usage_half_life = *setup.half_life;
  if (setup.grace) o.preemption_grace = *setup.grace;
  if (setup.restore) o.restore_cost = *setup.restore;
  if (setup.yield_best_effort) o.yield_best_effort = *setup.yield_best_effort;
  if (setup.yield_training) o.yield_training_grace = *setup.yield_training;
  if (setup.queue_sort) profile.queue_sort = *setup.queue_sort;
  if (setup.head_of_line) profile.head_of_line_blocking = *setup.head_of_line;
  for (const auto& [point, name] : setup.plugins) {
    std::vector<framework::PluginRef>* refs = Point(profile, point);
    if (std::none_of(refs->begin(), refs->end(), [&](const auto& ref) { return ref.name == name; }))
      refs->push_back(framework::PluginRef{name});
  }
  for (const auto& [name, args] : setup.args) {
    bool found = profile.queue_sort == name;
    if (found)
      for (const auto& [k, v] : args) profile.queue_sort_args[k] = v;
    for (const char* point : kPoints) {
      for (auto& ref : *Point(profile, point)) {
        if (ref.name != name) continue;
        found = true;
        for (const auto& [k, v] : args) ref.args[k] = v;
      }
    }
    if (!found) return InvalidArgument("plugin-args " + name + ": the profile has no plugin '" + name + "'");
  }
  return Status::Ok();
}

// ------------------------------------------------------------ expectations

StatusOr<const JobRecord*> Record(Runner& r, const std::string& name) {
  BERTH_ASSIGN_OR_RETURN(scheduler::Scheduler * s, r.Sched());
  BERTH_ASSIGN_OR_RETURN(JobId id, r.JobByName(name));
  const JobRecord* rec = s->Find(id);
  if (!rec) return Internal("job '" + name + "' is not known to the scheduler");
  return rec;
}

// The queue and the dimension (type=T, default all types) of `expect usage|borrowed QUEUE GPUS [type=T]`.
struct QueueDim {
  const tenancy::Ledger* ledger = nullptr;
  int32_t queue = -1;
  int32_t dim = -1;
  int64_t want = 0;
  std::string what;
};

StatusOr<QueueDim> ParseQueueDim(Runner& r, Args& a, const char* usage) {
  if (a.words().size() != 2) return InvalidArgument(std::string("usage: ") + usage);
  BERTH_ASSIGN_OR_RETURN(scheduler::Scheduler * s, r.Sched());
  QueueDim q;
  q.ledger = &s->ledger();
  q.queue = q.ledger->tree().Find(a.words()[0]);
  if (q.queue < 0) return NotFound("no queue named '" + a.words()[0] + "'");
  q.dim = q.ledger->all_types_dim();
  if (auto type = a.Get("type"); type && *type != "*") {
    auto t = s->cluster().FindGpuType(*type);
    if (!t) return NotFound("no GPU type '" + *type + "'");
    q.dim = t->value();
  }
  BERTH_ASSIGN_OR_RETURN(q.want, ParseGpus("GPUS", a.words()[1]));
  q.what = "queue '" + a.words()[0] + "' (" + q.ledger->DimName(q.dim) + ")";
  return q;
}

Status CompareGpus(const std::string& what, int64_t got, int64_t want) {
  if (got == want) return Status::Ok();
  return FailedPrecondition(what + " is " + Gpus(got) + " GPUs, expected " + Gpus(want));
}

// expect usage QUEUE GPUS [type=T]: what the queue (with its subtree) holds now.
Status Usage(Runner& r, Args& a) {
  BERTH_ASSIGN_OR_RETURN(QueueDim q, ParseQueueDim(r, a, "expect usage QUEUE GPUS [type=T]"));
  return CompareGpus("usage of " + q.what, q.ledger->usage(q.queue, q.dim), q.want);
}

// expect borrowed QUEUE GPUS [type=T]: usage beyond the guarantee.
Status Borrowed(Runner& r, Args& a) {
  BERTH_ASSIGN_OR_RETURN(QueueDim q, ParseQueueDim(r, a, "expect borrowed QUEUE GPUS [type=T]"));
  return CompareGpus("borrowing of " + q.what, q.ledger->borrowed(q.queue, q.dim), q.want);
}

// expect preempted JOB... [by=JOB] | expect preempted none: exactly these jobs
// were evicted since the last `schedule` began (by that pass, or by `preempt`).
Status Preempted(Runner& r, Args& a) {
  if (a.words().empty()) return InvalidArgument("usage: expect preempted JOB... [by=JOB] | none");
  BERTH_ASSIGN_OR_RETURN(scheduler::Scheduler * s, r.Sched());
  std::set<std::string> want(a.words().begin(), a.words().end());
  if (want.size() == 1 && *want.begin() == "none") want.clear();
  for (const auto& name : want) BERTH_RETURN_IF_ERROR(r.JobByName(name).status());
  std::set<std::string> got;
  for (JobId id : s->preempted_in_last_pass()) got.insert(r.JobName(id));
  if (got != want) {
    std::string g;
    for (const auto& n : got) g += (g.empty() ? "" : " ") + n;
    return FailedPrecondition("the jobs evicted in the last pass are [" + g + "]");
  }
  if (auto by = a.Get("by")) {
    BERTH_ASSIGN_OR_RETURN(JobId preemptor, r.JobByName(*by));
    for (const auto& name : want) {
      BERTH_ASSIGN_OR_RETURN(const JobRecord* rec, Record(r, name));
      if (rec->preempted_by != preemptor)
        return FailedPrecondition(name + " was evicted for " +
                                  (rec->preempted_by.valid() ? r.JobName(rec->preempted_by) : std::string("no job")) +
                                  ", not " + *by);
    }
  }
  return Status::Ok();
}

// expect preemptions JOB N: times the job was evicted, over the whole script.
Status Preemptions(Runner& r, Args& a) {
  if (a.words().size() != 2) return InvalidArgument("usage: expect preemptions JOB N");
  BERTH_ASSIGN_OR_RETURN(const JobRecord* rec, Record(r, a.words()[0]));
  int64_t want = 0;
  if (!ParseInt64(a.words()[1], want).ok()) return InvalidArgument("usage: expect preemptions JOB N");
  if (rec->preemptions == want) return Status::Ok();
  return FailedPrecondition(a.words()[0] + " was evicted " + std::to_string(rec->preemptions) + " times, expected " +
                            std::to_string(want));
}

// expect lost-gpu-seconds JOB X: GPU-seconds of work lost at its evictions (to 0.001).
Status LostGpuSeconds(Runner& r, Args& a) {
  if (a.words().size() != 2) return InvalidArgument("usage: expect lost-gpu-seconds JOB X");
  BERTH_ASSIGN_OR_RETURN(const JobRecord* rec, Record(r, a.words()[0]));
  double want = 0;
  if (!ParseDouble(a.words()[1], want).ok()) return InvalidArgument("usage: expect lost-gpu-seconds JOB X");
  if (std::abs(rec->lost_gpu_seconds - want) <= 1e-3) return Status::Ok();
  return FailedPrecondition(a.words()[0] + " lost " + std::to_string(rec->lost_gpu_seconds) +
                            " GPU-seconds, expected " + a.words()[1]);
}

// expect work-done JOB T: runtime saved by checkpoints before its evictions.
Status WorkDone(Runner& r, Args& a) {
  if (a.words().size() != 2) return InvalidArgument("usage: expect work-done JOB T");
  BERTH_ASSIGN_OR_RETURN(const JobRecord* rec, Record(r, a.words()[0]));
  BERTH_ASSIGN_OR_RETURN(TimeUs want, ParseScenarioTime(a.words()[1]));
  if (rec->work_done == want) return Status::Ok();
  return FailedPrecondition(a.words()[0] + " has " + std::to_string(UsToSeconds(rec->work_done)) +
                            "s of work saved, expected " + std::to_string(UsToSeconds(want)) + "s");
}

// expect works-after JOB T: the job's current run works T after it started
// (the yield deadlines of what it evicted, or its restore cost).
Status WorksAfter(Runner& r, Args& a) {
  if (a.words().size() != 2) return InvalidArgument("usage: expect works-after JOB T");
  BERTH_ASSIGN_OR_RETURN(const JobRecord* rec, Record(r, a.words()[0]));
  BERTH_ASSIGN_OR_RETURN(TimeUs want, ParseScenarioTime(a.words()[1]));
  if (rec->startup_delay == want) return Status::Ok();
  return FailedPrecondition(a.words()[0] + " works " + std::to_string(UsToSeconds(rec->startup_delay)) +
                            "s after its start, expected " + std::to_string(UsToSeconds(want)) + "s");
}

// expect class JOB guaranteed|best-effort [reason~TEXT]: the capacity class of its current run.
Status Class(Runner& r, Args& a) {
  if (a.words().size() != 2) return InvalidArgument("usage: expect class JOB guaranteed|best-effort [reason~TEXT]");
  BERTH_ASSIGN_OR_RETURN(const JobRecord* rec, Record(r, a.words()[0]));
  if (rec->state != job::JobState::kRunning) return FailedPrecondition(a.words()[0] + " is not running");
  const std::string got = framework::RunClassName(rec->run_class);
  const std::string reason = framework::RunClassReason(rec->run_class);
  if (got != a.words()[1])
    return FailedPrecondition(a.words()[0] + " runs as " + got + (reason.empty() ? "" : " (" + reason + ")") +
                              ", expected " + a.words()[1]);
  if (auto want = a.Get("reason"); want && reason.find(*want) == std::string::npos)
    return FailedPrecondition(a.words()[0] + " is " + got + " (" + reason + "), expected the reason '" + *want + "'");
  return Status::Ok();
}

// expect budget-spent QUEUE X [total]: what the queue spent in its current
// period (or over the whole script with `total`), in its budget's unit, to 0.001.
Status BudgetSpent(Runner& r, Args& a) {
  const char* usage = "usage: expect budget-spent QUEUE X [total]";
  if (a.words().size() != 2 && a.words().size() != 3) return InvalidArgument(usage);
  BERTH_ASSIGN_OR_RETURN(scheduler::Scheduler * s, r.Sched());
  const tenancy::Ledger& ledger = s->ledger();
  const int32_t q = ledger.tree().Find(a.words()[0]);
  if (q < 0) return NotFound("no queue named '" + a.words()[0] + "'");
  if (!ledger.budgets().spec(q)) return FailedPrecondition("queue '" + a.words()[0] + "' has no budget");
  double want = 0;
  if (!ParseDouble(a.words()[1], want).ok()) return InvalidArgument(usage);
  const bool total = a.words().size() == 3;
  if (total && a.words()[2] != "total") return InvalidArgument(usage);
  const TimeUs now = r.clock().Now();
  const double got =
      static_cast<double>(total ? ledger.budgets().TotalSpent(q, now) : ledger.budgets().Spent(q, now)) / 1e6;
  if (std::abs(got - want) <= 1e-3) return Status::Ok();
  return FailedPrecondition("queue '" + a.words()[0] + "' spent " + std::to_string(got) + " " + ledger.BudgetWord(q) +
                            (total ? " in all" : " this period") + ", expected " + a.words()[1]);
}

}  // namespace

void RegisterScenarioQueueCommands(ScenarioRunner& r) {
  auto setup = std::make_shared<QueueSetup>();
  r.AddCommand("queue", Queue(setup));
  r.AddCommand("queues", Queues(setup));
  r.AddCommand("units", Units(setup));
  r.AddCommand("option", Option(setup));
  r.AddCommand("plugins", Plugins(setup));
  r.AddCommand("plugin-args", PluginArgs(setup));
  r.AddSetupHook([setup](Runner& runner, framework::Profile& profile, scheduler::SchedulerOptions& o) {
    return Setup(*setup, runner, profile, o);
  });
  r.AddExpectation("usage", Usage);
  r.AddExpectation("borrowed", Borrowed);
  r.AddExpectation("preempted", Preempted);
  r.AddExpectation("preemptions", Preemptions);
  r.AddExpectation("lost-gpu-seconds", LostGpuSeconds);
  r.AddExpectation("works-after", WorksAfter);
  r.AddExpectation("work-done", WorkDone);
  r.AddExpectation("class", Class);
  r.AddExpectation("budget-spent", BudgetSpent);
}

}  // namespace berth::testing
