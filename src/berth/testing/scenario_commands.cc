// The built-in scenario commands: set-up (cluster, policy, seed, reset), time,
// jobs (submit, finish, preempt), nodes (node-down, node-up), schedule, and
// helpers (check-indexes, show, expect-error).
#include <cmath>

#include "berth/common/csv.h"
#include "berth/testing/cluster_checks.h"
#include "berth/testing/scenario.h"

namespace berth::testing {
namespace {

using Args = ScenarioArgs;
using Runner = ScenarioRunner;

Status NeedWords(Args& a, size_t min, size_t max, const char* usage) {
  if (a.words().size() < min || a.words().size() > max) return InvalidArgument(std::string("usage: ") + usage);
  return Status::Ok();
}

// cluster SPEC|FILE (a compact spec may hold '=': it is taken whole).
Status Cluster(Runner& r, Args& a) {
  for (ScenarioArgs::Pair& p : a.pairs()) p.used = true;
  if (a.raw().size() != 1) return InvalidArgument("usage: cluster SPEC|FILE");
  return r.SetCluster(a.raw()[0]);
}

Status Policy(Runner& r, Args& a) {
  BERTH_RETURN_IF_ERROR(NeedWords(a, 1, 1, "policy NAME"));
  return r.SetPolicy(a.words()[0]);
}

Status Seed(Runner& r, Args& a) {
  BERTH_RETURN_IF_ERROR(NeedWords(a, 1, 1, "seed N"));
  if (r.has_scheduler()) return FailedPrecondition("the seed is fixed once jobs run (use reset first)");
  int64_t seed = 0;
  if (!ParseInt64(a.words()[0], seed).ok() || seed < 0) return InvalidArgument("seed: expected a non-negative integer");
  r.set_seed(static_cast<uint64_t>(seed));
  return Status::Ok();
}

Status Reset(Runner& r, Args& a) {
  BERTH_RETURN_IF_ERROR(NeedWords(a, 0, 0, "reset"));
  r.Reset();
  return Status::Ok();
}

Status Time(Runner& r, Args& a) {
  BERTH_RETURN_IF_ERROR(NeedWords(a, 1, 1, "time T (e.g. 90s, 5m, 2h)"));
  BERTH_ASSIGN_OR_RETURN(TimeUs t, ParseScenarioTime(a.words()[0]));
  if (t < r.clock().Now()) return InvalidArgument("time cannot go backwards");
  r.clock().Set(t);
  return Status::Ok();
}

Status Advance(Runner& r, Args& a) {
  BERTH_RETURN_IF_ERROR(NeedWords(a, 1, 1, "advance T (e.g. 90s, 5m, 2h)"));
  BERTH_ASSIGN_OR_RETURN(TimeUs t, ParseScenarioTime(a.words()[0]));
  r.clock().Advance(t);
  return Status::Ok();
}

// submit job=NAME [job keys] [group keys] [group=NAME group keys]...
//   job keys:   priority, duration, limit, at, checkpoint, tenant, queue, class,
//               best-effort, service, replica-of, max-per-node
//   group keys: count, min, gpus, milli, cpu (cores), mem (GiB), type
// Group keys before any group= form the group "main"; each group= starts a group.
Status Submit(Runner& r, Args& a) {
  if (!a.words().empty()) return InvalidArgument("submit takes key=value pairs only, e.g. submit job=a gpus=8");
  job::JobSpec spec;
  spec.submit_time = r.clock().Now();
  bool named = false;
  job::TaskGroup* g = nullptr;
  bool milli_set = false, gpus_set = false;
  auto finish_group = [&]() {
    if (g && milli_set && !gpus_set) g->gpus = 1;  // a share implies one GPU
    milli_set = gpus_set = false;
  };
  auto group = [&]() -> job::TaskGroup& {
    if (!g) {
      spec.groups.emplace_back();
      g = &spec.groups.back();
    }
    return *g;
  };
  for (ScenarioArgs::Pair& p : a.pairs()) {
    p.used = true;
    if (p.op != '=') return InvalidArgument(p.key + ": use key=value");
    auto num = [&](int64_t lo, int64_t hi) -> StatusOr<int64_t> {
      int64_t v = 0;
      if (!ParseInt64(p.value, v).ok()) return InvalidArgument(p.key + ": expected an integer, got '" + p.value + "'");
      if (v < lo || v > hi) return InvalidArgument(p.key + ": out of range");
      return v;
    };
    auto real = [&]() -> StatusOr<double> {
      double v = 0;
      if (!ParseDouble(p.value, v).ok() || !std::isfinite(v))
        return InvalidArgument(p.key + ": expected a number, got '" + p.value + "'");
      return v;
    };
    const std::string& k = p.key;
    if (k == "job") {
      if (p.value.empty() || p.value.find('.') != std::string::npos)
        return InvalidArgument("job: a name without dots, e.g. job=a");
      if (r.HasJob(p.value)) return InvalidArgument("job '" + p.value + "' already submitted");
      spec.name = p.value;
      named = true;
    } else if (k == "priority") {
      BERTH_ASSIGN_OR_RETURN(int64_t v, num(INT32_MIN, INT32_MAX));
      spec.priority = static_cast<int32_t>(v);
    } else if (k == "duration" || k == "limit" || k == "at" || k == "checkpoint") {
      BERTH_ASSIGN_OR_RETURN(TimeUs t, ParseScenarioTime(p.value));
      (k == "duration" ? spec.duration
       : k == "limit"  ? spec.runtime_limit
       : k == "at"     ? spec.submit_time
                       : spec.checkpoint_interval) = t;
    } else if (k == "tenant") {
      spec.tenant = p.value;
    } else if (k == "queue") {
      spec.queue = p.value;
    } else if (k == "class") {
      spec.job_class = p.value;
    } else if (k == "best-effort" || k == "service") {
      if (p.value != "on" && p.value != "off") return InvalidArgument(k + ": on or off");
      if (k == "best-effort") {
        spec.best_effort = p.value == "on";
      } else if (p.value == "on") {
        spec.service = job::ServiceSpec{};  // one replica: the scheduler sees a replica job
        spec.service->latency_class = job::LatencyClass::kCritical;
      }
    } else if (k == "replica-of" || k == "max-per-node") {
      // A replica of a named service (a new name is a service without a job of its own).
      if (!spec.service) {
        spec.service = job::ServiceSpec{};
        spec.service->latency_class = job::LatencyClass::kCritical;
      }
      if (k == "max-per-node") {
        BERTH_ASSIGN_OR_RETURN(int64_t v, num(0, INT32_MAX));
        spec.service->max_per_node = static_cast<int32_t>(v);
      } else if (p.value.empty()) {
        return InvalidArgument("replica-of: a service name, e.g. replica-of=chat");
      } else if (r.HasJob(p.value)) {
        BERTH_ASSIGN_OR_RETURN(spec.replica_of, r.JobByName(p.value));
      } else {
        spec.replica_of = r.ReserveJobId();
        r.NameJob(p.value, spec.replica_of);
      }
    } else if (k == "group") {
      finish_group();
      spec.groups.emplace_back();
      g = &spec.groups.back();
      g->name = p.value;
    } else if (k == "count") {
      BERTH_ASSIGN_OR_RETURN(int64_t v, num(INT32_MIN, INT32_MAX));
      group().count = static_cast<int32_t>(v);
    } else if (k == "min") {
      BERTH_ASSIGN_OR_RETURN(int64_t v, num(INT32_MIN, INT32_MAX));
      group().min_count = static_cast<int32_t>(v);
    } else if (k == "gpus") {
      BERTH_ASSIGN_OR_RETURN(int64_t v, num(INT32_MIN, INT32_MAX));
      group().gpus = static_cast<int32_t>(v);
      gpus_set = true;
    } else if (k == "milli") {
      BERTH_ASSIGN_OR_RETURN(int64_t v, num(INT32_MIN, INT32_MAX));
      group().milli_per_gpu = static_cast<MilliGpu>(v);
      milli_set = true;
    } else if (k == "cpu") {
      BERTH_ASSIGN_OR_RETURN(double v, real());
      group().cpu_milli = static_cast<MilliCpu>(std::llround(v * 1000));
    } else if (k == "mem") {
      BERTH_ASSIGN_OR_RETURN(double v, real());
      group().memory_mib = static_cast<MiB>(std::llround(v * 1024));
    } else if (k == "type") {
      group().gpu_type_spec = p.value;
    } else if (k == "level" || k == "prefer" || k == "block-level" || k == "group-level" || k == "group-prefer") {
      auto level = cluster::ParseLevel(p.value);
      if (!level) return InvalidArgument(k + ": expected region, cluster, spine, leaf or nvlink, got '" + p.value + "'");
      if (k == "level") spec.required_level = *level;
      else if (k == "prefer") spec.preferred_level = *level;
      else if (k == "group-level") group().required_level = *level;
      else if (k == "group-prefer") group().preferred_level = *level;
      else group().block_level = *level;
    } else if (k == "min-workers" || k == "max-workers" || k == "batch") {
      BERTH_ASSIGN_OR_RETURN(int64_t v, num(INT32_MIN, INT32_MAX));
      (k == "min-workers" ? spec.min_workers : k == "max-workers" ? spec.max_workers : spec.batch_size) =
          static_cast<int32_t>(v);
    } else if (k == "resize-cost") {
      BERTH_ASSIGN_OR_RETURN(TimeUs t, ParseScenarioTime(p.value));
      spec.resize_cost = t;
    } else if (k == "block") {
      BERTH_ASSIGN_OR_RETURN(int64_t v, num(0, INT32_MAX));
      group().block_tasks = static_cast<int32_t>(v);
    } else if (k == "gpu-mem") {  // GPU memory per GPU, MiB
      BERTH_ASSIGN_OR_RETURN(int64_t v, num(INT64_MIN, INT64_MAX));
      group().gpu_memory_mib = v;
    } else {
      return InvalidArgument("unknown argument '" + k + "'");
    }
  }
  finish_group();
  if (!named) return InvalidArgument("submit needs job=NAME");
  if (spec.groups.empty()) spec.groups.emplace_back();  // one task asking for nothing
  BERTH_ASSIGN_OR_RETURN(scheduler::Scheduler * s, r.Sched());
  spec.id = r.ReserveJobId();
  const std::string name = spec.name;
  const JobId id = spec.id;
  BERTH_RETURN_IF_ERROR(s->Submit(std::move(spec)));
  r.NameJob(name, id);
  return Status::Ok();
}

Status Schedule(Runner& r, Args& a) {
  BERTH_RETURN_IF_ERROR(NeedWords(a, 0, 0, "schedule"));
  BERTH_ASSIGN_OR_RETURN(scheduler::Scheduler * s, r.Sched());
  r.set_last_started(s->Schedule());
  return Status::Ok();
}

Status Finish(Runner& r, Args& a) {
  if (a.words().empty()) return InvalidArgument("usage: finish JOB... [state=succeeded|failed|cancelled]");
  job::JobState state = job::JobState::kSucceeded;
  if (auto v = a.Get("state")) {
    if (*v == "failed") state = job::JobState::kFailed;
    else if (*v == "cancelled") state = job::JobState::kCancelled;
    else if (*v != "succeeded") return InvalidArgument("state: expected succeeded, failed or cancelled");
  }
  BERTH_ASSIGN_OR_RETURN(scheduler::Scheduler * s, r.Sched());
  for (const std::string& name : a.words()) {
    BERTH_ASSIGN_OR_RETURN(JobId id, r.JobByName(name));
    BERTH_RETURN_IF_ERROR(s->Finish(id, state));
  }
  return Status::Ok();
}

Status Preempt(Runner& r, Args& a) {
  if (a.words().empty()) return InvalidArgument("usage: preempt JOB...");
  BERTH_ASSIGN_OR_RETURN(scheduler::Scheduler * s, r.Sched());
  for (const std::string& name : a.words()) {
    BERTH_ASSIGN_OR_RETURN(JobId id, r.JobByName(name));
    BERTH_RETURN_IF_ERROR(s->Preempt(id));
  }
  return Status::Ok();
}

// resize JOB N: an elastic running job to N workers.
Status Resize(Runner& r, Args& a) {
  if (a.words().size() != 2) return InvalidArgument("usage: resize JOB N");
  BERTH_ASSIGN_OR_RETURN(scheduler::Scheduler * s, r.Sched());
  BERTH_ASSIGN_OR_RETURN(JobId id, r.JobByName(a.words()[0]));
  int64_t n = 0;
  if (!ParseInt64(a.words()[1], n).ok() || n <= 0 || n > INT32_MAX) return InvalidArgument("usage: resize JOB N");
  return s->Resize(id, static_cast<int32_t>(n), "scenario");
}

Runner::Handler NodeUp(bool up) {
  return [up](Runner& r, Args& a) -> Status {
    if (a.words().empty()) return InvalidArgument(up ? "usage: node-up NODE..." : "usage: node-down NODE...");
    BERTH_ASSIGN_OR_RETURN(scheduler::Scheduler * s, r.Sched());
    for (const std::string& name : a.words()) {
      BERTH_ASSIGN_OR_RETURN(NodeId n, r.NodeByName(name));
      BERTH_RETURN_IF_ERROR(s->SetNodeUp(n, up));
    }
    return Status::Ok();
  };
}

Status CheckIndexes(Runner& r, Args& a) {
  BERTH_RETURN_IF_ERROR(NeedWords(a, 0, 0, "check-indexes"));
  BERTH_ASSIGN_OR_RETURN(scheduler::Scheduler * s, r.Sched());
  BERTH_RETURN_IF_ERROR(CheckClusterInvariants(s->cluster()));
  return s->state().CheckIndexes();
}

// Prints jobs and node usage, for whoever is writing a scenario.
Status Show(Runner& r, Args& a) {
  BERTH_RETURN_IF_ERROR(NeedWords(a, 0, 0, "show"));
  BERTH_ASSIGN_OR_RETURN(scheduler::Scheduler * s, r.Sched());
  std::ostream& out = r.out();
  out << "-- t=" << UsToSeconds(r.clock().Now()) << "s\n";
  for (const auto& [id, name] : r.job_names()) {
    const scheduler::JobRecord* rec = s->Find(JobId(id));
    if (!rec) continue;
    out << "job " << name << ": " << job::JobStateName(rec->state);
    for (const auto& p : rec->placements)
      out << " " << name << "." << p.task.index << "@" << s->cluster().node(p.alloc.node).name;
    if (!rec->last_verdict.ok()) out << " (" << rec->last_verdict.reason << ")";
    out << "\n";
  }
  const auto& st = s->state();
  for (int32_t i = 0; i < s->cluster().num_nodes(); ++i) {
    const NodeId n(i);
    out << "node " << s->cluster().node(n).name << (st.up(n) ? "" : " (down)") << ": gpus";
    for (int g = 0; g < s->cluster().node(n).gpu_count; ++g) out << " " << st.gpu_free(n, g);
    out << "; cpu " << st.free_cpu(n) / 1000.0 << "\n";
  }
  return Status::Ok();
}

// expect-error ~"text" COMMAND...: the command must fail with text in its message.
Status ExpectError(Runner& r, Args& a) {
  for (ScenarioArgs::Pair& p : a.pairs()) p.used = true;  // they belong to the inner command
  const std::vector<std::string>& raw = a.raw();
  if (raw.size() < 2 || raw[0].empty() || raw[0][0] != '~')
    return InvalidArgument("usage: expect-error ~\"text\" COMMAND ARGS...");
  const std::string text = raw[0].substr(1);
  Status s = r.RunCommand(std::vector<std::string>(raw.begin() + 1, raw.end()));
  if (s.ok()) return FailedPrecondition("the command succeeded; expected an error containing \"" + text + "\"");
  if (s.message().find(text) == std::string::npos)
    return FailedPrecondition("error \"" + s.message() + "\" does not contain \"" + text + "\"");
  return Status::Ok();
}

}  // namespace

void RegisterScenarioCommands(ScenarioRunner& r) {
  r.AddCommand("cluster", Cluster);
  r.AddCommand("policy", Policy);
  r.AddCommand("seed", Seed);
  r.AddCommand("reset", Reset);
  r.AddCommand("time", Time);
  r.AddCommand("advance", Advance);
  r.AddCommand("submit", Submit);
  r.AddCommand("schedule", Schedule);
  r.AddCommand("finish", Finish);
  r.AddCommand("preempt", Preempt);
  r.AddCommand("resize", Resize);
  r.AddCommand("node-down", NodeUp(false));
  r.AddCommand("node-up", NodeUp(true));
  r.AddCommand("check-indexes", CheckIndexes);
  r.AddCommand("show", Show);
  r.AddCommand("expect-error", ExpectError);
}

}  // namespace berth::testing
