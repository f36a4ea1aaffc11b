// The built-in `expect` checks of scenario files: job states (with the reason
// of the last verdict), placements, the jobs a cycle started, free and
// allocated capacity (cluster, node, type, topology domain), job counts, and
// how many nodes or domains a job spans.
#include <algorithm>
#include <set>

#include "berth/common/csv.h"
#include "berth/testing/scenario.h"

namespace berth::testing {
namespace {

using Args = ScenarioArgs;
using Runner = ScenarioRunner;
using scheduler::JobRecord;

StatusOr<const JobRecord*> Record(Runner& r, const std::string& name) {
  BERTH_ASSIGN_OR_RETURN(scheduler::Scheduler * s, r.Sched());
  BERTH_ASSIGN_OR_RETURN(JobId id, r.JobByName(name));
  const JobRecord* rec = s->Find(id);
  if (!rec) return Internal("job '" + name + "' is not known to the scheduler");
  return rec;
}

std::string Describe(const JobRecord& rec) {
  std::string out = job::JobStateName(rec.state);
  if (!rec.last_verdict.ok()) {
    out += " (last verdict: ";
    out += framework::VerdictCodeName(rec.last_verdict.code);
    if (!rec.last_verdict.plugin.empty()) out += " from " + rec.last_verdict.plugin;
    out += ": " + rec.last_verdict.reason + ")";
  }
  return out;
}

StatusOr<int64_t> Count(Args& a, const char* usage) {
  if (a.words().size() != 1) return InvalidArgument(std::string("usage: ") + usage);
  int64_t n = 0;
  if (!ParseInt64(a.words()[0], n).ok()) return InvalidArgument(std::string("usage: ") + usage);
  return n;
}

Status Compare(const std::string& what, int64_t got, int64_t want) {
  if (got == want) return Status::Ok();
  return FailedPrecondition(what + " is " + std::to_string(got) + ", expected " + std::to_string(want));
}

// expect STATE JOB... [reason~TEXT | reason=TEXT] [verdict=CODE] [plugin=NAME]
Runner::Handler StateIs(job::JobState want) {
  return [want](Runner& r, Args& a) -> Status {
    if (a.words().empty()) return InvalidArgument(std::string("usage: expect ") + job::JobStateName(want) + " JOB...");
    const ScenarioArgs::Pair* reason = a.Find("reason");
    const auto verdict = a.Get("verdict");
    const auto plugin = a.Get("plugin");
    for (const std::string& name : a.words()) {
      BERTH_ASSIGN_OR_RETURN(const JobRecord* rec, Record(r, name));
      if (rec->state != want)
        return FailedPrecondition(name + " is " + Describe(*rec) + ", not " + job::JobStateName(want));
      const auto& v = rec->last_verdict;
      if (reason) {
        const bool match = reason->op == '~' ? v.reason.find(reason->value) != std::string::npos : v.reason == reason->value;
        if (!match)
          return FailedPrecondition(name + ": reason \"" + v.reason + "\" does not " +
                                    (reason->op == '~' ? "contain" : "equal") + " \"" + reason->value + "\"");
      }
      if (verdict && *verdict != framework::VerdictCodeName(v.code))
        return FailedPrecondition(name + ": verdict is " + framework::VerdictCodeName(v.code) + ", not " + *verdict);
      if (plugin && *plugin != v.plugin)
        return FailedPrecondition(name + ": verdict came from '" + v.plugin + "', not '" + *plugin + "'");
    }
    return Status::Ok();
  };
}

// expect placed JOB[.TASK] NODE [gpus=0,1,...] [milli=N]
Status Placed(Runner& r, Args& a) {
  if (a.words().size() != 2) return InvalidArgument("usage: expect placed JOB[.TASK] NODE [gpus=I,J] [milli=N]");
  const std::string& ref = a.words()[0];
  const size_t dot = ref.find('.');
  const std::string name = ref.substr(0, dot);
  int64_t task = -1;
  if (dot != std::string::npos && !ParseInt64(ref.substr(dot + 1), task).ok())
    return InvalidArgument("expected JOB.TASK such as a.0, got '" + ref + "'");
  BERTH_ASSIGN_OR_RETURN(const JobRecord* rec, Record(r, name));
  BERTH_ASSIGN_OR_RETURN(NodeId want, r.NodeByName(a.words()[1]));
  std::optional<uint64_t> want_mask;
  if (auto g = a.Get("gpus")) {
    want_mask = 0;
    size_t start = 0;
    while (start <= g->size()) {
      size_t comma = g->find(',', start);
      if (comma == std::string::npos) comma = g->size();
      int64_t idx = 0;
      if (!ParseInt64(g->substr(start, comma - start), idx).ok() || idx < 0 || idx > 63)
        return InvalidArgument("gpus: expected GPU indexes such as 0,1");
      *want_mask |= uint64_t{1} << idx;
      start = comma + 1;
    }
  }
  BERTH_ASSIGN_OR_RETURN(std::optional<int64_t> milli, a.GetInt("milli"));
  const auto& cluster = *r.cluster();
  int checked = 0;
  for (const auto& p : rec->placements) {
    if (task >= 0 && p.task.index != task) continue;
    ++checked;
    const std::string who = name + "." + std::to_string(p.task.index);
    if (p.alloc.node != want)
      return FailedPrecondition(who + " is on " + cluster.node(p.alloc.node).name + ", not " + a.words()[1]);
    if (want_mask && p.alloc.gpu_mask != *want_mask) {
      std::string got;
      for (int g = 0; g < 64; ++g)
        if ((p.alloc.gpu_mask >> g) & 1) got += (got.empty() ? "" : ",") + std::to_string(g);
      return FailedPrecondition(who + " holds GPUs {" + got + "}");
    }
    if (milli && p.alloc.milli_per_gpu != *milli)
      return FailedPrecondition(who + " holds " + std::to_string(p.alloc.milli_per_gpu) + " milli-GPU per GPU");
  }
  if (checked == 0) return FailedPrecondition(ref + " holds nothing (" + name + " is " + Describe(*rec) + ")");
  return Status::Ok();
}

// expect started JOB... | expect started none: the jobs the last `schedule` started, in order.
Status Started(Runner& r, Args& a) {
  if (a.words().empty()) return InvalidArgument("usage: expect started JOB... | none");
  std::vector<std::string> want = a.words();
  if (want.size() == 1 && want[0] == "none") want.clear();
  std::vector<std::string> got;
  for (JobId id : r.last_started()) got.push_back(r.JobName(id));
  if (got == want) return Status::Ok();
  std::string g;
  for (const auto& n : got) g += (g.empty() ? "" : " ") + n;
  return FailedPrecondition("the last schedule started [" + g + "]");
}

// The domain named `name` at `level`; an error if none or several.
StatusOr<DomainId> DomainByName(const cluster::Cluster& c, cluster::Level level, const std::string& name) {
  std::optional<DomainId> found;
  for (DomainId d : c.domains_at(level)) {
    if (c.domain(d).name != name) continue;
    if (found) return InvalidArgument(std::string("several ") + cluster::LevelName(level) + "s named '" + name + "'");
    found = d;
  }
  if (!found) return NotFound(std::string("no ") + cluster::LevelName(level) + " named '" + name + "'");
  return *found;
}

// expect free-gpus N [node=NAME | type=T | region|cluster|spine|leaf|nvlink=NAME]: fully free GPUs on up nodes.
Status FreeGpus(Runner& r, Args& a) {
  BERTH_ASSIGN_OR_RETURN(int64_t want, Count(a, "expect free-gpus N [node=|type=|leaf=...]"));
  BERTH_ASSIGN_OR_RETURN(scheduler::Scheduler * s, r.Sched());
  const auto& st = s->state();
  if (auto node = a.Get("node")) {
    BERTH_ASSIGN_OR_RETURN(NodeId n, r.NodeByName(*node));
    return Compare("free GPUs on " + *node, st.up(n) ? st.full_free_gpus(n) : 0, want);
  }
  if (auto type = a.Get("type")) {
    auto t = s->cluster().FindGpuType(*type);
    if (!t) return NotFound("no GPU type '" + *type + "'");
    return Compare("free " + *type + " GPUs", st.type_full_free_gpus(*t), want);
  }
  for (int l = 0; l < cluster::kNumLevels; ++l) {
    const auto level = static_cast<cluster::Level>(l);
    if (auto name = a.Get(cluster::LevelName(level))) {
      BERTH_ASSIGN_OR_RETURN(DomainId d, DomainByName(s->cluster(), level, *name));
      return Compare(std::string("free GPUs in ") + cluster::LevelName(level) + " " + *name,
                     st.domain_full_free_gpus(d), want);
    }
  }
  return Compare("free GPUs", st.free_full_gpus_total(), want);
}

// expect free-milli N [node=NAME | type=T]: free milli-GPU on up nodes.
Status FreeMilli(Runner& r, Args& a) {
  BERTH_ASSIGN_OR_RETURN(int64_t want, Count(a, "expect free-milli N [node=|type=]"));
  BERTH_ASSIGN_OR_RETURN(scheduler::Scheduler * s, r.Sched());
  const auto& st = s->state();
  if (auto node = a.Get("node")) {
    BERTH_ASSIGN_OR_RETURN(NodeId n, r.NodeByName(*node));
    return Compare("free milli-GPU on " + *node, st.up(n) ? st.node_free_milli(n) : 0, want);
  }
  if (auto type = a.Get("type")) {
    auto t = s->cluster().FindGpuType(*type);
    if (!t) return NotFound("no GPU type '" + *type + "'");
    return Compare("free " + *type + " milli-GPU", st.type_free_milli(*t), want);
  }
  int64_t total = 0;
  for (size_t t = 0; t < s->cluster().gpu_types().size(); ++t) total += st.type_free_milli(GpuTypeId(static_cast<int16_t>(t)));
  return Compare("free milli-GPU", total, want);
}

// expect free-gpu-mem N node=NAME gpu=G: unallocated memory (MiB) of one GPU.
Status FreeGpuMem(Runner& r, Args& a) {
  BERTH_ASSIGN_OR_RETURN(int64_t want, Count(a, "expect free-gpu-mem N node=NAME gpu=G"));
  BERTH_ASSIGN_OR_RETURN(scheduler::Scheduler * s, r.Sched());
  auto node = a.Get("node");
  auto gpu = a.Get("gpu");
  if (!node || !gpu) return InvalidArgument("usage: expect free-gpu-mem N node=NAME gpu=G");
  BERTH_ASSIGN_OR_RETURN(NodeId n, r.NodeByName(*node));
  int64_t g = -1;
  if (!ParseInt64(*gpu, g).ok() || g < 0 || g >= s->cluster().node(n).gpu_count)
    return InvalidArgument("gpu: node " + *node + " has no GPU '" + *gpu + "'");
  return Compare("free GPU memory of " + *node + " GPU " + *gpu, s->state().gpu_memory_free(n, static_cast<int>(g)),
                 want);
}

Status AllocatedMilli(Runner& r, Args& a) {
  BERTH_ASSIGN_OR_RETURN(int64_t want, Count(a, "expect allocated-milli N"));
  BERTH_ASSIGN_OR_RETURN(scheduler::Scheduler * s, r.Sched());
  return Compare("allocated milli-GPU", s->state().allocated_milli(), want);
}

// expect jobs running=N pending=M ...: how many jobs are in each named state.
Status Jobs(Runner& r, Args& a) {
  if (!a.words().empty() || a.pairs().empty()) return InvalidArgument("usage: expect jobs STATE=N ...");
  BERTH_ASSIGN_OR_RETURN(scheduler::Scheduler * s, r.Sched());
  for (ScenarioArgs::Pair& p : a.pairs()) {
    p.used = true;
    int64_t want = 0;
    if (p.op != '=' || !ParseInt64(p.value, want).ok()) return InvalidArgument(p.key + ": expected STATE=N");
    std::optional<job::JobState> state;
    for (int k = 0; k <= static_cast<int>(job::JobState::kCancelled); ++k)
      if (p.key == job::JobStateName(static_cast<job::JobState>(k))) state = static_cast<job::JobState>(k);
    if (!state) return InvalidArgument("unknown job state '" + p.key + "'");
    int64_t got = 0;
    for (const auto& [id, name] : r.job_names()) {
      const JobRecord* rec = s->Find(JobId(id));
      got += rec && rec->state == *state;
    }
    BERTH_RETURN_IF_ERROR(Compare(std::string(p.key) + " jobs", got, want));
  }
  return Status::Ok();
}

// expect nodes JOB N: the job's tasks sit on N distinct nodes.
Status Nodes(Runner& r, Args& a) {
  if (a.words().size() != 2) return InvalidArgument("usage: expect nodes JOB N");
  BERTH_ASSIGN_OR_RETURN(const JobRecord* rec, Record(r, a.words()[0]));
  int64_t want = 0;
  if (!ParseInt64(a.words()[1], want).ok()) return InvalidArgument("usage: expect nodes JOB N");
  std::set<int32_t> nodes;
  for (const auto& p : rec->placements) nodes.insert(p.alloc.node.value());
  return Compare(a.words()[0] + " spans nodes: count", static_cast<int64_t>(nodes.size()), want);
}

// expect workers JOB N [resizes=R] [shrinks=S]: the tasks an elastic job holds now.
Status Workers(Runner& r, Args& a) {
  if (a.words().size() != 2) return InvalidArgument("usage: expect workers JOB N [resizes=R] [shrinks=S]");
  BERTH_ASSIGN_OR_RETURN(const JobRecord* rec, Record(r, a.words()[0]));
  int64_t want = 0;
  if (!ParseInt64(a.words()[1], want).ok()) return InvalidArgument("usage: expect workers JOB N");
  BERTH_RETURN_IF_ERROR(Compare(a.words()[0] + " workers", static_cast<int64_t>(rec->placements.size()), want));
  for (ScenarioArgs::Pair& p : a.pairs()) {
    p.used = true;
    int64_t v = 0;
    if (!ParseInt64(p.value, v).ok()) return InvalidArgument(p.key + ": expected a count");
    if (p.key == "resizes") {
      BERTH_RETURN_IF_ERROR(Compare(a.words()[0] + " resizes", rec->resizes, v));
    } else if (p.key == "shrinks") {
      BERTH_RETURN_IF_ERROR(Compare(a.words()[0] + " shrinks", rec->shrinks, v));
    } else {
      return InvalidArgument("unknown argument '" + p.key + "'");
    }
  }
  return Status::Ok();
}

// expect spans JOB LEVEL=N ...: the job's tasks touch N distinct domains of each level.
Status Spans(Runner& r, Args& a) {
  if (a.words().size() != 1 || a.pairs().empty()) return InvalidArgument("usage: expect spans JOB leaf=N [spine=M]...");
  BERTH_ASSIGN_OR_RETURN(const JobRecord* rec, Record(r, a.words()[0]));
  for (ScenarioArgs::Pair& p : a.pairs()) {
    p.used = true;
    auto level = cluster::ParseLevel(p.key);
    int64_t want = 0;
    if (!level) return InvalidArgument("unknown level '" + p.key + "'");
    if (!ParseInt64(p.value, want).ok()) return InvalidArgument(p.key + ": expected a count");
    std::set<int32_t> domains;
    for (const auto& t : rec->placements)
      domains.insert(r.cluster()->node(t.alloc.node).domain[static_cast<int>(*level)].value());
    BERTH_RETURN_IF_ERROR(Compare(a.words()[0] + " spans " + cluster::LevelName(*level) + " domains: count",
                                  static_cast<int64_t>(domains.size()), want));
  }
  return Status::Ok();
}

}  // namespace

void RegisterScenarioExpectations(ScenarioRunner& r) {
  for (int k = 0; k <= static_cast<int>(job::JobState::kCancelled); ++k) {
    const auto state = static_cast<job::JobState>(k);
    r.AddExpectation(job::JobStateName(state), StateIs(state));
  }
  r.AddExpectation("placed", Placed);
  r.AddExpectation("started", Started);
  r.AddExpectation("free-gpus", FreeGpus);
  r.AddExpectation("free-milli", FreeMilli);
  r.AddExpectation("free-gpu-mem", FreeGpuMem);
  r.AddExpectation("allocated-milli", AllocatedMilli);
  r.AddExpectation("jobs", Jobs);
  r.AddExpectation("nodes", Nodes);
  r.AddExpectation("workers", Workers);
  r.AddExpectation("spans", Spans);
}

}  // namespace berth::testing
