// Test helpers for services: a scheduler on a compact-spec cluster with the
// service plugins in its profile, a service controller, and Step(), which
// runs the controller and the scheduler until they settle (as a driver does).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "berth/cluster/loaders.h"
#include "berth/common/clock.h"
#include "berth/plugins/builtin.h"
#include "berth/scheduler/scheduler.h"
#include "berth/workload/profile.h"
#include "berth/workload/service_controller.h"

namespace berth::workload::testing {

class ServiceHarness {
 public:
  void Build(const std::string& spec, const std::string& policy = "bestfit", AutoscalerOptions as = {},
             TimeUs grace = 0, const std::string& min_runtime_s = "") {
    auto c = cluster::ParseClusterSpec(spec);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    cluster_ = std::make_unique<cluster::Cluster>(std::move(c).value());
    ASSERT_TRUE(plugins::RegisterBuiltinPlugins(plugins_).ok());
    ASSERT_TRUE(plugins::RegisterBuiltinPolicies(policies_).ok());
    auto p = policies_.Find(policy);
    ASSERT_TRUE(p.ok()) << policy;
    framework::Profile profile = WithServicePlugins(*p);
    if (!min_runtime_s.empty())
      for (auto& r : profile.post_filter) r.args["min_runtime_s"] = min_runtime_s;
    auto fw = framework::Framework::Create(profile, plugins_);
    ASSERT_TRUE(fw.ok()) << fw.status().ToString();
    scheduler::SchedulerOptions o;
    o.check_indexes = true;
    o.preemption_grace = grace;
    sched_ = std::make_unique<scheduler::Scheduler>(*cluster_, std::move(fw).value(), o, clock_);
    ControllerOptions co;
    co.autoscaler = as;
    co.new_id = [this] { return JobId(next_id_++); };
    ASSERT_TRUE(co.Validate().ok());
    ctl_ = std::make_unique<ServiceController>(std::move(co));
  }

  static job::JobSpec Service(const std::string& name, int32_t replicas, int32_t min, int32_t max, int32_t gpus = 1,
                              MilliGpu milli = kMilliPerGpu) {
    job::JobSpec s;
    s.name = name;
    job::TaskGroup g;
    g.gpus = gpus;
    g.milli_per_gpu = milli;
    s.groups = {g};
    s.service = job::ServiceSpec{};
    s.service->replicas = replicas;
    s.service->min_replicas = min;
    s.service->max_replicas = max;
    return s;
  }

  JobId AddService(job::JobSpec s) {
    s.id = JobId(next_id_++);
    Status st = ctl_->Add(s, clock_.Now());
    EXPECT_TRUE(st.ok()) << st.ToString();
    return s.id;
  }

  JobId SubmitBatch(const std::string& name, int32_t gpus, int32_t priority = 0, int32_t count = 1) {
    job::JobSpec j;
    j.id = JobId(next_id_++);
    j.name = name;
    j.priority = priority;
    j.checkpoint_interval = SecondsToUs(60);
    job::TaskGroup g;
    g.gpus = gpus;
    g.count = count;
    j.groups = {g};
    Status st = sched_->Submit(j);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return j.id;
  }

  // Controller and scheduler until nothing changes (at most 16 rounds).
  // Returns the fewest replicas of `watch` that were running at any moment
  // (after each stop and each pass), or -1 when nothing is watched.
  int32_t Step(JobId watch = JobId()) {
    int32_t fewest = -1;
    auto observe = [&] {
      if (!watch.valid()) return;
      int32_t running = 0;
      for (const auto& r : sched_->running_jobs())
        if (r.spec->replica_of == watch) ++running;
      fewest = fewest < 0 ? running : std::min(fewest, running);
    };
    observe();
    for (int round = 0; round < 16; ++round) {
      ControllerActions a = ctl_->Tick(*sched_, clock_.Now());
      for (JobId id : a.stop) {
        Status fs = sched_->Finish(id, job::JobState::kCancelled);
        EXPECT_TRUE(fs.ok()) << fs.ToString();
        observe();
      }
      for (auto& r : a.start) EXPECT_TRUE(sched_->Submit(std::move(r)).ok());
      const bool started = !sched_->Schedule().empty();
      observe();
      if (a.empty() && !started) break;
    }
    return fewest;
  }

  int32_t Running(JobId service) const { return ctl_->Find(service)->running; }
  void Advance(TimeUs dt) { clock_.Set(clock_.Now() + dt); }

  ManualClock clock_{0};
  std::unique_ptr<cluster::Cluster> cluster_;
  framework::PluginRegistry plugins_;
  framework::PolicyRegistry policies_;
  std::unique_ptr<scheduler::Scheduler> sched_;
  std::unique_ptr<ServiceController> ctl_;
  int64_t next_id_ = 1;
};

}  // namespace berth::workload::testing
