// Test helpers for the preemption plugins: a scheduler on a compact-spec
// cluster whose running jobs are set up exactly (nodes, GPUs, start times,
// checkpoint intervals, priorities, queues), and a PreemptContext for a
// pending job, so that a post-filter can be asked directly.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "berth/cluster/loaders.h"
#include "berth/plugins/builtin.h"
#include "berth/scheduler/scheduler.h"

namespace berth::plugins::preempt::testing {

// One task of a running job: `gpus` whole GPUs on a node, from GPU `first`.
struct At {
  std::string node;
  int32_t gpus = 8;
  int32_t first = 0;
};

struct RunSpec {
  std::string name;
  std::vector<At> tasks;
  int32_t priority = 0;
  std::string tenant = "t";
  TimeUs start = 0;
  TimeUs checkpoint = -1;  // interval; -1 never
  bool best_effort = false;
};

class PreemptHarness {
 public:
  // `policy`: a registered policy; `queues`: optional tree.
  // "NAME-bestfit" is policy NAME without its plan plugin (placement by best fit alone).
  void Build(const std::string& spec, std::string policy = "priority-preempt",
             std::vector<tenancy::QueueSpec> queues = {}, TimeUs min_runtime = -1) {
    bool no_plan = false;
    if (policy.size() > 8 && policy.ends_with("-bestfit")) {
      policy.resize(policy.size() - 8);
      no_plan = true;
    }
    auto c = cluster::ParseClusterSpec(spec);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    cluster_ = std::make_unique<cluster::Cluster>(std::move(c).value());
    sched_.reset();
    plugins_ = {};
    policies_ = {};
    names_.clear();
    next_id_ = 0;
    ASSERT_TRUE(RegisterBuiltinPlugins(plugins_).ok());
    ASSERT_TRUE(RegisterBuiltinPolicies(policies_).ok());
    auto p = policies_.Find(policy);
    ASSERT_TRUE(p.ok()) << policy;
    framework::Profile profile = *p;
    if (no_plan) profile.plan.clear();
    if (min_runtime >= 0 && !profile.post_filter.empty())
      profile.post_filter[0].args["min_runtime_s"] = std::to_string(UsToSeconds(min_runtime));
    auto fw = framework::Framework::Create(profile, plugins_);
    ASSERT_TRUE(fw.ok()) << fw.status().ToString();
    scheduler::SchedulerOptions o;
    o.check_indexes = true;
    if (!queues.empty()) {
      auto tree = tenancy::QueueTree::Create(queues, *cluster_);
      ASSERT_TRUE(tree.ok()) << tree.status().ToString();
      o.queues = std::make_shared<tenancy::QueueTree>(std::move(tree).value());
    }
    sched_ = std::make_unique<scheduler::Scheduler>(*cluster_, std::move(fw).value(), o, clock_);
  }

  // A running job placed exactly as given.
  JobId Start(const RunSpec& r) {
    job::JobSpec j;
    j.id = JobId(next_id_++);
    j.name = r.name;
    j.priority = r.priority;
    j.tenant = r.tenant;
    j.checkpoint_interval = r.checkpoint;
    j.best_effort = r.best_effort;
    j.submit_time = r.start;
    std::vector<framework::TaskPlacement> placements;
    for (size_t i = 0; i < r.tasks.size(); ++i) {
      job::TaskGroup g;
      g.name = "g" + std::to_string(i);
      g.gpus = r.tasks[i].gpus;
      j.groups.push_back(g);
      auto node = cluster_->FindNode(r.tasks[i].node);
      EXPECT_TRUE(node.has_value()) << r.tasks[i].node;
      state::Allocation a;
      a.node = *node;
      for (int k = 0; k < r.tasks[i].gpus; ++k) a.gpu_mask |= uint64_t{1} << (r.tasks[i].first + k);
      a.milli_per_gpu = kMilliPerGpu;
      placements.push_back({TaskKey{j.id, static_cast<int32_t>(i)}, a});
    }
    Status s = sched_->Submit(j);
    EXPECT_TRUE(s.ok()) << s.ToString();
    s = sched_->Adopt(j.id, placements, r.start);
    EXPECT_TRUE(s.ok()) << r.name << ": " << s.ToString();
    names_.push_back(r.name);
    return j.id;
  }

  // A pending job of `tasks` x `gpus` GPUs.
  JobId Submit(const std::string& name, int32_t tasks, int32_t gpus, int32_t priority,
               const std::string& tenant = "t", std::optional<cluster::Level> level = std::nullopt) {
    job::JobSpec j;
    j.id = JobId(next_id_++);
    j.name = name;
    j.priority = priority;
    j.tenant = tenant;
    j.submit_time = clock_.Now();
    j.required_level = level;
    job::TaskGroup g;
    g.count = tasks;
    g.gpus = gpus;
    j.groups.push_back(g);
    Status s = sched_->Submit(j);
    EXPECT_TRUE(s.ok()) << s.ToString();
    names_.push_back(name);
    return j.id;
  }

  framework::SchedulerView View() const {
    return {sched_->state(), sched_->ledger(), sched_->running_jobs(), clock_.Now(), {}};
  }

  // Asks the profile's post-filter directly for a pending job.
  std::optional<framework::PreemptionPlan> Ask(JobId id, framework::Verdict verdict = framework::Verdict::Unschedulable(
                                                                "test", "no room")) {
    const scheduler::JobRecord* rec = sched_->Find(id);
    const framework::SchedulerView view = View();
    framework::PreemptContext ctx{rec->spec, rec->queue, verdict, view, rec->preempted_by};
    auto* pf = const_cast<framework::PostFilterPlugin*>(sched_->framework().post_filter().front());
    return pf->PostFilter(ctx);
  }

  // Names of job ids, sorted as given.
  std::vector<std::string> Names(const std::vector<JobId>& ids) const {
    std::vector<std::string> out;
    for (JobId id : ids) out.push_back(names_[id.value()]);
    return out;
  }
  job::JobState State(JobId id) const { return sched_->Find(id)->state; }

  ManualClock clock_;
  std::unique_ptr<cluster::Cluster> cluster_;
  framework::PluginRegistry plugins_;
  framework::PolicyRegistry policies_;
  std::unique_ptr<scheduler::Scheduler> sched_;
  std::vector<std::string> names_;
  int64_t next_id_ = 0;
};

inline constexpr TimeUs kHour = 3600 * kUsPerSecond;
inline constexpr TimeUs kMinute = 60 * kUsPerSecond;

// A plan's victims; empty when there is no plan.
inline std::vector<JobId> Victims(const std::optional<framework::PreemptionPlan>& plan) {
  return plan ? plan->victims : std::vector<JobId>{};
}

}  // namespace berth::plugins::preempt::testing
