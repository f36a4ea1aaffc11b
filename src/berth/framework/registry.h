// The plugin registry (name -> factory), profiles (which plugins at which
// extension point), and the policy registry (a policy name such as "bestfit"
// -> a profile). Plugins are always chosen by name; nothing switches on them.
//
//   PluginRegistry plugins;  plugins::RegisterBuiltins(plugins);
//   Profile p;  p.filter = {{"fit"}};  p.score = {{"bestfit", {}, 1}};
//   StatusOr<std::unique_ptr<Framework>> fw = Framework::Create(p, plugins);
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "berth/common/status.h"
#include "berth/framework/plugin.h"

namespace berth::framework {

struct PluginRef {
  std::string name;
  PluginArgs args;
  int64_t weight = 1;  // score plugins only
};

struct Profile {
  std::string name;
  std::string queue_sort = "fifo";
  PluginArgs queue_sort_args;  // the queue-sort plugin's args (e.g. tiresias thresholds)
  std::vector<PluginRef> admit;
  std::vector<PluginRef> plan;
  std::vector<PluginRef> filter;
  std::vector<PluginRef> candidates;
  std::vector<PluginRef> score;
  std::vector<PluginRef> reserve;
  std::vector<PluginRef> permit;
  std::vector<PluginRef> post_filter;
  std::vector<PluginRef> bind;
  // Periodic sizing of elastic jobs (ResizePlugin), run by the driver every
  // RoundInterval() (the simulator's replay; docs/adr/0016).
  std::vector<PluginRef> resize;
  // Loop behaviour: stop a pass at the first pending job that does not fit
  // (strict FIFO), or go on to the next (greedy, the default).
  bool head_of_line_blocking = false;

  Status Validate() const;
};

class PluginRegistry {
 public:
  using Factory = std::function<StatusOr<std::unique_ptr<Plugin>>(const PluginArgs&)>;
  // For plugins that read the cluster or the workload when built (see PluginContext).
  using ContextFactory = std::function<StatusOr<std::unique_ptr<Plugin>>(const PluginArgs&, const PluginContext&)>;
  Status Register(const std::string& name, Factory factory);
  Status Register(const std::string& name, ContextFactory factory);
  bool Has(const std::string& name) const { return factories_.count(name) > 0; }
  // Whether the plugin was registered with a ContextFactory: it may read the
  // cluster or the workload when built (false for unknown names).
  bool ReadsContext(const std::string& name) const { return reads_context_.count(name) > 0; }
  StatusOr<std::unique_ptr<Plugin>> Create(const std::string& name, const PluginArgs& args,
                                           const PluginContext& context = {}) const;
  std::vector<std::string> Names() const;

 private:
  Status Add(const std::string& name, ContextFactory factory, bool reads_context);

  std::map<std::string, ContextFactory> factories_;
  std::set<std::string> reads_context_;
};

// Whether any plugin of `profile` (queue sort included) reads the context
// when built (PluginRegistry::ReadsContext): such a profile needs the
// cluster or the workload's facts up front (a streamed replay hands over the
// facts of its first read, workload_facts.h).
bool ProfileReadsContext(const Profile& profile, const PluginRegistry& registry);

// A user's plugin argument, "PLUGIN.KEY=VALUE" (e.g. goodput.exact_cells=0,
// the --plugin-arg flag): errors name the spec and what is missing.
struct PluginArgSpec {
  std::string plugin, key, value;
};
StatusOr<PluginArgSpec> ParsePluginArg(const std::string& spec);
// Sets the argument on every use of the plugin in `profile` (any extension
// point, the queue sort included); false when the profile does not use it.
// The plugin's factory checks the key and the value when the profile is built.
bool SetPluginArg(Profile& profile, const PluginArgSpec& arg);
// Every spec ("PLUGIN.KEY=VALUE") on every profile that uses its plugin; an
// error naming the spec when one does not parse or no profile uses the plugin.
Status ApplyPluginArgs(const std::vector<Profile*>& profiles, const std::vector<std::string>& specs);

struct PolicyInfo {
  Profile profile;
  std::string description;
};

// Named scheduling policies (presets of profiles) for `berth simulate --policy`.
class PolicyRegistry {
 public:
  Status Register(const std::string& name, Profile profile, std::string description);
  // A registered name, or a composition BASE+EXTRA[+EXTRA...]: BASE with
  // the EXTRAs' score plugins weighed first (see Compose).
  StatusOr<Profile> Find(const std::string& name) const;
  std::vector<std::string> Names() const;
  const std::map<std::string, PolicyInfo>& all() const { return policies_; }

 private:
  StatusOr<Profile> Compose(const std::string& name) const;

  std::map<std::string, PolicyInfo> policies_;
};

// A profile instantiated: owns its plugins and exposes each extension point.
class Framework {
 public:
  // `context` is handed to every plugin factory (default: no cluster, no workload).
  static StatusOr<std::unique_ptr<Framework>> Create(const Profile& profile, const PluginRegistry& registry,
                                                     const PluginContext& context = {});

  const Profile& profile() const { return profile_; }
  const QueueSortPlugin& queue_sort() const { return *queue_sort_; }
  QueueSortPlugin& queue_sort() { return *queue_sort_; }  // to Prepare a dynamic order
  const std::vector<AdmitPlugin*>& admit() const { return admit_; }
  const std::vector<PlanPlugin*>& plan() const { return plan_; }
  const std::vector<FilterPlugin*>& filter() const { return filter_; }
  const std::vector<CandidatePlugin*>& candidates() const { return candidates_; }
  const std::vector<std::pair<ScorePlugin*, int64_t>>& score() const { return score_; }
  const std::vector<ReservePlugin*>& reserve() const { return reserve_; }
  const std::vector<PermitPlugin*>& permit() const { return permit_; }
  const std::vector<PostFilterPlugin*>& post_filter() const { return post_filter_; }
  const std::vector<BindPlugin*>& bind() const { return bind_; }
  const std::vector<ResizePlugin*>& resize() const { return resize_; }
  // The instance of a named plugin in this profile, or nullptr.
  Plugin* Find(std::string_view name) const;

 private:
  Framework() = default;
  Profile profile_;
  std::vector<std::unique_ptr<Plugin>> owned_;
  QueueSortPlugin* queue_sort_ = nullptr;
  std::vector<AdmitPlugin*> admit_;
  std::vector<PlanPlugin*> plan_;
  std::vector<FilterPlugin*> filter_;
  std::vector<CandidatePlugin*> candidates_;
  std::vector<std::pair<ScorePlugin*, int64_t>> score_;
  std::vector<ReservePlugin*> reserve_;
  std::vector<PermitPlugin*> permit_;
  std::vector<PostFilterPlugin*> post_filter_;
  std::vector<BindPlugin*> bind_;
  std::vector<ResizePlugin*> resize_;
};

}  // namespace berth::framework
