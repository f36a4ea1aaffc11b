// The per-round gate of the Gavel driver, as a scheduler plugin: Admit lets
// through only the jobs chosen for this round; Filter keeps only nodes of the
// type chosen for the job; Candidates offers the fullest nodes of that type
// that still hold the task (from the state's free-GPU buckets, at most
// kMaxCandidates), so a placement looks at a few nodes, not the cluster. The
// driver sets the choice before each Scheduler::Schedule call.
#pragma once

#include <cstdint>
#include <vector>

#include "berth/framework/registry.h"

namespace berth::sim::gavel {

class RoundGate final : public framework::AdmitPlugin,
                        public framework::FilterPlugin,
                        public framework::CandidatePlugin {
 public:
  static constexpr size_t kMaxCandidates = 64;
  static constexpr std::string_view kName = "gavel-round";
  std::string_view Name() const override { return kName; }
  std::string_view FailReason() const override { return "not the type chosen this round"; }

  // Job ids are dense (0..n-1); grows as jobs arrive. type < 0: not chosen.
  void Resize(size_t jobs) { type_.resize(jobs, -1); }
  void Choose(int64_t job, int16_t type) { type_[job] = type; }
  void Clear(int64_t job) { type_[job] = -1; }

  framework::Verdict Admit(const job::JobSpec& job, const state::ClusterState&, TimeUs) override {
    return type_[job.id.value()] >= 0 ? framework::Verdict::Success()
                                      : framework::Verdict::Wait("gavel-round", "not this round");
  }
  bool Filter(const framework::CycleContext& ctx, const framework::TaskRequest&, NodeId node) const override {
    return ctx.state.cluster().node(node).gpu_type.value() == type_[ctx.job.id.value()];
  }
  void Candidates(const framework::CycleContext& ctx, const framework::TaskRequest& req,
                  std::vector<NodeId>& out) const override;

 private:
  std::vector<int16_t> type_;
};

// Registers "gavel-round": each factory call returns a fresh gate.
Status RegisterRoundGate(framework::PluginRegistry& registry);

}  // namespace berth::sim::gavel
