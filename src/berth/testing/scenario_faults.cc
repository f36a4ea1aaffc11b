// Scenario commands for the failure model (faults::FaultHandler):
//
//   faults [repair=in-place|requeue] [spares=none|leaf|spine|leaf:N|spine:N]
//          [restart=T] [repair-cost=T] [quarantine-after=N] [quarantine-base=T] [quarantine-window=T]
//          [lend=off|on|T]                              # lend spares to best-effort jobs (limit <= T)
//   fail KIND TARGET [for=T] [cause=C] [deadline=T]    # now; KIND and TARGET as in a failure file
//   lend JOB...                                         # lend free spares to these pending jobs, in order
//   time T / advance T                                  # also run every fault phase due on the way
//   expect restarts JOB N / expect repairs JOB N
//   expect spares NODE... | none                        # exactly these nodes are spares
//   expect quarantined NODE... | none
//   expect node-down NODE...                            # each is unschedulable now
//   expect gpu-down NODE GPU...                         # these GPUs of the node are down
//   expect failure-lost-gpu-seconds JOB X
//   expect lent NODE... | none                          # exactly these spares run best-effort jobs
//   expect loan-evictions N                             # borrowers evicted for repairs so far
//
// `faults` comes after `cluster` and `policy` and before the first `submit`:
// it creates the scheduler and sets the spares aside.
#include <algorithm>
#include <cmath>
#include <memory>

#include "berth/faults/failure_file.h"
#include "berth/faults/handler.h"
#include "berth/testing/scenario.h"

namespace berth::testing {
namespace {

using Runner = ScenarioRunner;
using Args = ScenarioArgs;

struct FaultState {
  std::unique_ptr<faults::FaultHandler> handler;
  scheduler::Scheduler* sched = nullptr;
  std::vector<faults::Wakeup> wakeups;  // pending, in push order

  StatusOr<faults::FaultHandler*> Get(Runner& r) {
    if (!handler) return FailedPrecondition("no `faults` line yet");
    BERTH_ASSIGN_OR_RETURN(scheduler::Scheduler * s, r.Sched());
    if (s != sched) return FailedPrecondition("the scheduler was reset: give `faults` again");
    return handler.get();
  }
  Status Apply(const faults::StepOutcome& o) {
    wakeups.insert(wakeups.end(), o.wakeups.begin(), o.wakeups.end());
    return Status::Ok();
  }
  // Runs every phase due at or before t, each at its own time.
  Status RunUntil(Runner& r, TimeUs t) {
    if (!handler) return Status::Ok();
    while (true) {
      auto next = std::min_element(wakeups.begin(), wakeups.end(),
                                   [](const faults::Wakeup& a, const faults::Wakeup& b) { return a.at < b.at; });
      if (next == wakeups.end() || next->at > t) return Status::Ok();
      const faults::Wakeup w = *next;
      wakeups.erase(next);
      r.clock().Set(std::max(r.clock().Now(), w.at));
      scheduler::Scheduler* scheds[] = {sched};
      handler->Advance(r.clock().Now(), scheds);
      BERTH_ASSIGN_OR_RETURN(faults::StepOutcome o, handler->Step(w.fault, w.phase, scheds));
      BERTH_RETURN_IF_ERROR(Apply(o));
    }
  }
};

Status NeedOne(Args& a, const char* usage) {
  if (a.words().size() != 1) return InvalidArgument(std::string("usage: ") + usage);
  return Status::Ok();
}

StatusOr<std::vector<NodeId>> Nodes(Runner& r, Args& a) {
  std::vector<NodeId> out;
  if (a.words().size() == 1 && a.words()[0] == "none") return out;
  if (a.words().empty()) return InvalidArgument("name nodes, or none");
  for (const auto& w : a.words()) {
    BERTH_ASSIGN_OR_RETURN(NodeId n, r.NodeByName(w));
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string Names(const cluster::Cluster& c, const std::vector<NodeId>& ns) {
  std::string s;
  for (NodeId n : ns) s += (s.empty() ? "" : " ") + c.node(n).name;
  return s.empty() ? "none" : s;
}

}  // namespace

void RegisterScenarioFaultCommands(ScenarioRunner& runner) {
  auto st = std::make_shared<FaultState>();
  runner.AddCommand("faults", [st](Runner& r, Args& a) -> Status {
    if (!a.words().empty()) return InvalidArgument("faults takes key=value pairs only");
    faults::FaultOptions o;
    if (auto v = a.Get("repair")) {
      auto m = faults::ParseRepairMode(*v);
      if (!m) return InvalidArgument("repair must be requeue or in-place");
      o.repair = *m;
    }
    if (auto v = a.Get("spares")) {
      BERTH_ASSIGN_OR_RETURN(o.spares, faults::ParseSpareSetting(*v));
    }
    BERTH_ASSIGN_OR_RETURN(auto restart, a.GetTime("restart"));
    BERTH_ASSIGN_OR_RETURN(auto repair_cost, a.GetTime("repair-cost"));
    BERTH_ASSIGN_OR_RETURN(auto after, a.GetInt("quarantine-after"));
    BERTH_ASSIGN_OR_RETURN(auto base, a.GetTime("quarantine-base"));
    BERTH_ASSIGN_OR_RETURN(auto window, a.GetTime("quarantine-window"));
    const std::optional<std::string> lend = a.Get("lend");
    BERTH_RETURN_IF_ERROR(a.CheckAllUsed());
    if (restart) o.restart_cost = *restart;
    if (repair_cost) o.repair_cost = *repair_cost;
    if (after) o.quarantine_after = static_cast<int32_t>(*after);
    if (base) o.quarantine_base = *base;
    if (window) o.quarantine_window = *window;
    if (lend && *lend != "off") {
      o.lend_spares = true;
      if (*lend != "on") {
        BERTH_ASSIGN_OR_RETURN(o.lend_max_runtime, ParseScenarioTime(*lend));
      }
    }
    BERTH_RETURN_IF_ERROR(o.Validate());
    BERTH_ASSIGN_OR_RETURN(scheduler::Scheduler * s, r.Sched());
    if (s->running_count() > 0 || s->pending_count() > 0) return FailedPrecondition("faults must come before any submit");
    st->handler = std::make_unique<faults::FaultHandler>(s->cluster(), std::move(o), std::vector<int32_t>{});
    st->sched = s;
    st->wakeups.clear();
    scheduler::Scheduler* scheds[] = {s};
    st->handler->Advance(r.clock().Now(), scheds);
    return st->handler->Init(scheds);
  });
  runner.AddCommand("lend", [st](Runner& r, Args& a) -> Status {
    if (a.words().empty()) return InvalidArgument("usage: lend JOB...");
    BERTH_ASSIGN_OR_RETURN(faults::FaultHandler * h, st->Get(r));
    std::vector<std::pair<int32_t, JobId>> jobs;
    for (const auto& w : a.words()) {
      BERTH_ASSIGN_OR_RETURN(JobId id, r.JobByName(w));
      jobs.push_back({0, id});
    }
    scheduler::Scheduler* scheds[] = {st->sched};
    h->Advance(r.clock().Now(), scheds);
    return h->Lend(jobs, scheds).status();
  });
  runner.AddCommand("fail", [st](Runner& r, Args& a) -> Status {
    if (a.words().size() != 2) return InvalidArgument("usage: fail KIND TARGET [for=T] [cause=C] [deadline=T]");
    BERTH_ASSIGN_OR_RETURN(faults::FaultHandler * h, st->Get(r));
    std::string line = "at 0 " + a.words()[0] + " " + a.words()[1];
    for (const char* key : {"for", "cause", "deadline"})
      if (auto v = a.Get(key)) line += std::string(" ") + key + " " + *v;
    BERTH_RETURN_IF_ERROR(a.CheckAllUsed());
    BERTH_ASSIGN_OR_RETURN(faults::FailureSpec spec, faults::ParseFailureSpec(line, "fail", *r.cluster()));
    faults::Fault f = spec.events.front();
    f.at = r.clock().Now();
    const int32_t i = h->Add(std::move(f));
    scheduler::Scheduler* scheds[] = {st->sched};
    h->Advance(r.clock().Now(), scheds);
    BERTH_ASSIGN_OR_RETURN(faults::StepOutcome o, h->Step(i, faults::kBegin, scheds));
    return st->Apply(o);
  });
  runner.AddCommand("time", [st](Runner& r, Args& a) -> Status {
    BERTH_RETURN_IF_ERROR(NeedOne(a, "time T (e.g. 90s, 5m, 2h)"));
    BERTH_ASSIGN_OR_RETURN(TimeUs t, ParseScenarioTime(a.words()[0]));
    if (t < r.clock().Now()) return InvalidArgument("time cannot go backwards");
    BERTH_RETURN_IF_ERROR(st->RunUntil(r, t));
    r.clock().Set(t);
    return Status::Ok();
  });
  runner.AddCommand("advance", [st](Runner& r, Args& a) -> Status {
    BERTH_RETURN_IF_ERROR(NeedOne(a, "advance T (e.g. 90s, 5m, 2h)"));
    BERTH_ASSIGN_OR_RETURN(TimeUs d, ParseScenarioTime(a.words()[0]));
    const TimeUs t = r.clock().Now() + d;
    BERTH_RETURN_IF_ERROR(st->RunUntil(r, t));
    r.clock().Set(t);
    return Status::Ok();
  });
  auto job_count = [](const char* what, int32_t scheduler::JobRecord::*field) {
    return [what, field](Runner& r, Args& a) -> Status {
      if (a.words().size() != 2) return InvalidArgument(std::string("usage: expect ") + what + " JOB N");
      BERTH_ASSIGN_OR_RETURN(scheduler::Scheduler * s, r.Sched());
      BERTH_ASSIGN_OR_RETURN(JobId id, r.JobByName(a.words()[0]));
      const int64_t want = std::stoll(a.words()[1]);
      const int64_t got = s->Find(id)->*field;
      if (got != want)
        return FailedPrecondition(a.words()[0] + " has " + std::to_string(got) + " " + what + ", not " + a.words()[1]);
      return Status::Ok();
    };
  };
  runner.AddExpectation("restarts", job_count("restarts", &scheduler::JobRecord::restarts));
  runner.AddExpectation("repairs", job_count("repairs", &scheduler::JobRecord::repairs));
  auto node_set = [st](const char* what, bool spares) {
    return [st, what, spares](Runner& r, Args& a) -> Status {
      BERTH_ASSIGN_OR_RETURN(faults::FaultHandler * h, st->Get(r));
      BERTH_ASSIGN_OR_RETURN(std::vector<NodeId> want, Nodes(r, a));
      std::vector<NodeId> got;
      for (int32_t k = 0; k < r.cluster()->num_nodes(); ++k)
        if (spares ? h->spare(NodeId(k)) : h->quarantined(NodeId(k))) got.push_back(NodeId(k));
      if (got != want)
        return FailedPrecondition(std::string(what) + " are " + Names(*r.cluster(), got) + ", not " +
                                  Names(*r.cluster(), want));
      return Status::Ok();
    };
  };
  runner.AddExpectation("spares", node_set("spares", true));
  runner.AddExpectation("lent", [st](Runner& r, Args& a) -> Status {
    BERTH_ASSIGN_OR_RETURN(faults::FaultHandler * h, st->Get(r));
    BERTH_ASSIGN_OR_RETURN(std::vector<NodeId> want, Nodes(r, a));
    std::vector<NodeId> got;
    for (int32_t k = 0; k < r.cluster()->num_nodes(); ++k) {
      const NodeId n(k);
      if (h->spare(n) && !st->sched->state().tasks_on(n).empty()) got.push_back(n);
    }
    if (got != want)
      return FailedPrecondition("lent spares are " + Names(*r.cluster(), got) + ", not " + Names(*r.cluster(), want));
    return Status::Ok();
  });
  runner.AddExpectation("loan-evictions", [st](Runner& r, Args& a) -> Status {
    BERTH_RETURN_IF_ERROR(NeedOne(a, "expect loan-evictions N"));
    BERTH_ASSIGN_OR_RETURN(faults::FaultHandler * h, st->Get(r));
    const int64_t got = h->counters().spare_loan_evictions;
    if (std::to_string(got) != a.words()[0])
      return FailedPrecondition(std::to_string(got) + " borrowers evicted, not " + a.words()[0]);
    return Status::Ok();
  });
  runner.AddExpectation("quarantined", node_set("quarantined nodes", false));
  runner.AddExpectation("node-down", [](Runner& r, Args& a) -> Status {
    BERTH_ASSIGN_OR_RETURN(scheduler::Scheduler * s, r.Sched());
    BERTH_ASSIGN_OR_RETURN(std::vector<NodeId> ns, Nodes(r, a));
    for (NodeId n : ns)
      if (s->state().up(n)) return FailedPrecondition(s->cluster().node(n).name + " is up");
    return Status::Ok();
  });
  runner.AddExpectation("gpu-down", [](Runner& r, Args& a) -> Status {
    if (a.words().size() < 1) return InvalidArgument("usage: expect gpu-down NODE [GPU...]");
    BERTH_ASSIGN_OR_RETURN(scheduler::Scheduler * s, r.Sched());
    BERTH_ASSIGN_OR_RETURN(NodeId n, r.NodeByName(a.words()[0]));
    uint64_t want = 0;
    for (size_t i = 1; i < a.words().size(); ++i) want |= uint64_t{1} << std::stoi(a.words()[i]);
    if (s->state().gpu_down_mask(n) != want)
      return FailedPrecondition(a.words()[0] + ": down GPU mask " + std::to_string(s->state().gpu_down_mask(n)) +
                                ", not " + std::to_string(want));
    return Status::Ok();
  });
  runner.AddExpectation("failure-lost-gpu-seconds", [](Runner& r, Args& a) -> Status {
    if (a.words().size() != 2) return InvalidArgument("usage: expect failure-lost-gpu-seconds JOB X");
    BERTH_ASSIGN_OR_RETURN(scheduler::Scheduler * s, r.Sched());
    BERTH_ASSIGN_OR_RETURN(JobId id, r.JobByName(a.words()[0]));
    const double got = s->Find(id)->failure_lost_gpu_seconds;
    if (std::abs(got - std::stod(a.words()[1])) > 1e-3)
      return FailedPrecondition(a.words()[0] + " lost " + std::to_string(got) + " GPU-seconds to failures");
    return Status::Ok();
  });
}

}  // namespace berth::testing
