// Workflow validation (names, dependencies, cycles) and the stage state machine.
#include "berth/workload/workflow.h"

#include <algorithm>
#include <map>

namespace berth::workload {
namespace {

bool IsStageName(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  for (char c : n)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
          c == '.'))
      return false;
  return true;
}

}  // namespace

const char* StageConditionName(StageCondition c) { return c == StageCondition::kAny ? "any" : "success"; }

const char* StageStateName(StageState s) {
  switch (s) {
    case StageState::kWaiting: return "waiting";
    case StageState::kSubmitted: return "submitted";
    case StageState::kSucceeded: return "succeeded";
    case StageState::kFailed: return "failed";
    case StageState::kSkipped: return "skipped";
    case StageState::kCancelled: return "cancelled";
  }
  return "?";
}

bool IsStageEnded(StageState s) { return s != StageState::kWaiting && s != StageState::kSubmitted; }

const char* WorkflowStateName(WorkflowState s) {
  switch (s) {
    case WorkflowState::kRunning: return "running";
    case WorkflowState::kSucceeded: return "succeeded";
    case WorkflowState::kFailed: return "failed";
    case WorkflowState::kCancelled: return "cancelled";
  }
  return "?";
}

Status ValidateWorkflow(const WorkflowSpec& w) {
  const std::string who = "workflow '" + w.name + "'";
  if (w.stages.empty()) return InvalidArgument(who + ": stages: empty (a workflow needs at least one stage)");
  if (static_cast<int32_t>(w.stages.size()) > kMaxStages)
    return InvalidArgument(who + ": stages: more than " + std::to_string(kMaxStages));
  std::map<std::string, int32_t> index;
  for (size_t i = 0; i < w.stages.size(); ++i) {
    const StageSpec& s = w.stages[i];
    const std::string where = "stages[" + std::to_string(i) + "]";
    if (!IsStageName(s.name))
      return InvalidArgument(where + ".name: '" + s.name + "' is not a stage name ([A-Za-z0-9_.-], 1-64 bytes)");
    if (!index.emplace(s.name, static_cast<int32_t>(i)).second)
      return InvalidArgument(where + ".name: stage '" + s.name + "' appears twice");
  }
  for (size_t i = 0; i < w.stages.size(); ++i) {
    const StageSpec& s = w.stages[i];
    const std::string where = "stages[" + std::to_string(i) + "] ('" + s.name + "')";
    for (size_t k = 0; k < s.depends_on.size(); ++k) {
      const std::string& d = s.depends_on[k];
      if (d == s.name) return InvalidArgument(where + ".depends_on: the stage depends on itself");
      if (!index.count(d)) return InvalidArgument(where + ".depends_on: no stage named '" + d + "'");
      for (size_t m = 0; m < k; ++m)
        if (s.depends_on[m] == d) return InvalidArgument(where + ".depends_on: '" + d + "' appears twice");
    }
    if (s.retries < 0 || s.retries > kMaxRetries)
      return InvalidArgument(where + ".retries: " + std::to_string(s.retries) + " is outside 0.." +
                             std::to_string(kMaxRetries));
    if (s.fail_attempts < 0 || s.fail_attempts > kMaxRetries + 1)
      return InvalidArgument(where + ".fail_attempts: out of range");
    if (Status v = job::ValidateJob(s.job); !v.ok()) return InvalidArgument(where + ": " + v.message());
  }
  // Cycles: depth-first over the dependencies, in document order.
  std::vector<int8_t> mark(w.stages.size(), 0);  // 0 new, 1 on the path, 2 done
  std::vector<int32_t> path;
  std::string cycle;
  auto visit = [&](auto&& self, int32_t s) -> bool {
    mark[s] = 1;
    path.push_back(s);
    for (const auto& d : w.stages[s].depends_on) {
      const int32_t t = index.at(d);
      if (mark[t] == 1) {
        auto from = std::find(path.begin(), path.end(), t);
        for (auto it = from; it != path.end(); ++it) cycle += w.stages[*it].name + " -> ";
        cycle += w.stages[t].name;
        return false;
      }
      if (mark[t] == 0 && !self(self, t)) return false;
    }
    path.pop_back();
    mark[s] = 2;
    return true;
  };
  for (int32_t s = 0; s < static_cast<int32_t>(w.stages.size()); ++s)
    if (mark[s] == 0 && !visit(visit, s))
      return InvalidArgument(who + ": stages: dependency cycle " + cycle + " (stage '" + w.stages[s].name + "')");
  return Status::Ok();
}

WorkflowRun::WorkflowRun(WorkflowSpec spec) : spec_(std::move(spec)), stages_(spec_.stages.size()) {
  std::map<std::string, int32_t> index;
  for (int32_t i = 0; i < num_stages(); ++i) index[spec_.stages[i].name] = i;
  for (int32_t i = 0; i < num_stages(); ++i)
    for (const auto& d : spec_.stages[i].depends_on) stages_[i].deps.push_back(index.at(d));
  // Ancestors: a fixed point over the (acyclic) graph.
  for (int32_t i = 0; i < num_stages(); ++i) {
    std::vector<int32_t> todo = stages_[i].deps;
    std::vector<uint8_t> seen(stages_.size(), 0);
    while (!todo.empty()) {
      const int32_t t = todo.back();
      todo.pop_back();
      if (seen[t]++) continue;
      stages_[i].ancestors.push_back(t);
      for (int32_t u : stages_[t].deps) todo.push_back(u);
    }
    std::sort(stages_[i].ancestors.begin(), stages_[i].ancestors.end());
  }
}

void WorkflowRun::SkipBlocked() {
  // Skips propagate down chains: repeat until nothing changes (stages are few).
  for (bool changed = true; changed;) {
    changed = false;
    for (int32_t i = 0; i < num_stages(); ++i) {
      Stage& s = stages_[i];
      if (s.state != StageState::kWaiting || spec_.stages[i].after != StageCondition::kSuccess) continue;
      for (int32_t d : s.deps) {
        const StageState ds = stages_[d].state;
        if (ds == StageState::kFailed || ds == StageState::kSkipped || ds == StageState::kCancelled) {
          s.state = ds == StageState::kCancelled ? StageState::kCancelled : StageState::kSkipped;
          changed = true;
          break;
        }
      }
    }
  }
}

std::vector<int32_t> WorkflowRun::TakeReady() {
  std::vector<int32_t> ready;
  if (cancelled_) return ready;
  SkipBlocked();
  for (int32_t i = 0; i < num_stages(); ++i) {
    Stage& s = stages_[i];
    if (s.state != StageState::kWaiting) continue;
    bool ok = true;
    for (int32_t d : s.deps) {
      const StageState ds = stages_[d].state;
      ok = spec_.stages[i].after == StageCondition::kAny ? IsStageEnded(ds) : ds == StageState::kSucceeded;
      if (!ok) break;
    }
    if (!ok) continue;
    s.state = StageState::kSubmitted;
    s.attempts = 1;
    ready.push_back(i);
  }
  return ready;
}

std::string WorkflowRun::ArtifactVar(const std::string& stage) {
  std::string v = "BERTH_ARTIFACT_";
  for (char c : stage) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    v += ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) ? c : '_';
  }
  return v;
}

job::JobSpec WorkflowRun::StageJob(int32_t s) const {
  const StageSpec& st = spec_.stages[s];
  job::JobSpec j = st.job;
  j.name = spec_.name + "/" + st.name;
  if (j.tenant.empty()) j.tenant = spec_.tenant;
  if (j.queue.empty()) j.queue = spec_.queue;
  if (j.priority == 0) j.priority = spec_.priority;
  j.env["BERTH_WORKFLOW"] = spec_.name;
  j.env["BERTH_STAGE"] = st.name;
  j.env["BERTH_STAGE_ATTEMPT"] = std::to_string(std::max(1, stages_[s].attempts));
  if (!st.artifact.empty()) j.env["BERTH_ARTIFACT"] = st.artifact;
  for (int32_t a : stages_[s].ancestors)
    if (!spec_.stages[a].artifact.empty()) j.env[ArtifactVar(spec_.stages[a].name)] = spec_.stages[a].artifact;
  return j;
}

WorkflowRun::After WorkflowRun::StageEnded(int32_t s, bool succeeded) {
  Stage& st = stages_[s];
  if (st.state != StageState::kSubmitted) return After::kNothing;
  if (succeeded) {
    st.state = StageState::kSucceeded;
    return After::kNothing;
  }
  if (!cancelled_ && st.attempts <= spec_.stages[s].retries) {
    ++st.attempts;
    return After::kRetry;
  }
  st.state = StageState::kFailed;
  SkipBlocked();
  return After::kNothing;
}

void WorkflowRun::StageCancelled(int32_t s) {
  if (IsStageEnded(stages_[s].state)) return;
  stages_[s].state = StageState::kCancelled;
  SkipBlocked();
}

std::vector<int32_t> WorkflowRun::Cancel() {
  std::vector<int32_t> submitted;
  if (ended()) return submitted;
  cancelled_ = true;
  for (int32_t i = 0; i < num_stages(); ++i) {
    if (IsStageEnded(stages_[i].state)) continue;
    if (stages_[i].state == StageState::kSubmitted) submitted.push_back(i);
    stages_[i].state = StageState::kCancelled;
  }
  return submitted;
}

WorkflowState WorkflowRun::state() const {
  bool failed = false;
  for (const Stage& s : stages_) {
    if (!IsStageEnded(s.state)) return WorkflowState::kRunning;
    if (s.state == StageState::kFailed || s.state == StageState::kSkipped) failed = true;
    if (s.state == StageState::kCancelled && !cancelled_) failed = true;
  }
  if (cancelled_) return WorkflowState::kCancelled;
  return failed ? WorkflowState::kFailed : WorkflowState::kSucceeded;
}

}  // namespace berth::workload
