// Scenario files: scheduler behaviour written as readable scripts, one command
// per line (format: tests/scenarios/README.md).
//
//   cluster 4x8:H100/leaf=2
//   policy bestfit
//   submit job=a gpus=8 count=2
//   schedule
//   expect running a
//   expect placed a.0 node-0
//   finish a
//   expect free-gpus 32
//
//   ScenarioRunner r;
//   Status s = r.RunFile("tests/scenarios/gang.scn");  // "gang.scn:7: expect running a: a is pending (...)"
//
// The runner is a table of commands and of `expect` checks, each a handler by
// name; features add their own (queues, preemption, topology) with AddCommand /
// AddExpectation instead of editing a switch.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/common/clock.h"
#include "berth/common/status.h"
#include "berth/framework/registry.h"
#include "berth/scheduler/scheduler.h"

namespace berth::testing {

// The words of one command after its name: positional words, and key=value or
// key~value pairs (values may be "double quoted"). Handlers take what they
// understand; anything left unread is an error ("unknown argument 'x'").
class ScenarioArgs {
 public:
  struct Pair {
    std::string key;
    char op = '=';  // '=' exact value, '~' substring match
    std::string value;
    bool used = false;
  };

  std::vector<std::string>& words() { return words_; }
  std::vector<Pair>& pairs() { return pairs_; }
  // Every token after the command name, in order (quotes removed).
  std::vector<std::string>& raw() { return raw_; }

  // The pair with this key (marked used), or nullptr.
  const Pair* Find(std::string_view key);
  std::optional<std::string> Get(std::string_view key);
  StatusOr<std::optional<int64_t>> GetInt(std::string_view key);
  StatusOr<std::optional<double>> GetNumber(std::string_view key);
  // A duration such as 90s, 5m, 2h, 1.5d, 250ms or a plain number of seconds.
  StatusOr<std::optional<TimeUs>> GetTime(std::string_view key);
  // Error unless every pair was read.
  Status CheckAllUsed() const;

 private:
  std::vector<std::string> words_;
  std::vector<Pair> pairs_;
  std::vector<std::string> raw_;
};

// Parses a duration (see GetTime).
StatusOr<TimeUs> ParseScenarioTime(std::string_view text);
// Splits one line into words; quotes group, '#' outside quotes starts a comment.
StatusOr<std::vector<std::string>> TokenizeScenarioLine(std::string_view line);

class ScenarioRunner {
 public:
  using Handler = std::function<Status(ScenarioRunner&, ScenarioArgs&)>;

  ScenarioRunner();  // registers the built-in commands and expectations
  ~ScenarioRunner();

  void AddCommand(std::string name, Handler handler) { commands_[std::move(name)] = std::move(handler); }
  void AddExpectation(std::string name, Handler handler) { expectations_[std::move(name)] = std::move(handler); }
  // Called in order when the scheduler is created: may change the policy's
  // profile and the scheduler's options (queues, preemption, extra plugins).
  using SetupHook = std::function<Status(ScenarioRunner&, framework::Profile&, scheduler::SchedulerOptions&)>;
  void AddSetupHook(SetupHook hook) { setup_hooks_.push_back(std::move(hook)); }
  // Called after every command of the script (not after the commands a hook
  // runs itself): lets a feature react to what the command changed (a
  // workflow submits the stages a finished job unblocked).
  using AfterHook = std::function<Status(ScenarioRunner&)>;
  void AddAfterCommandHook(AfterHook hook) { after_hooks_.push_back(std::move(hook)); }

  // Runs a script. The first failing line ends it with "name:line: text: why".
  Status RunFile(const std::string& path);
  Status Run(std::string_view text, std::string_view name, std::string base_dir = "");
  // Runs one already-tokenized command (used by `expect-error`).
  Status RunCommand(const std::vector<std::string>& tokens);

  // Where `show` writes (stdout unless set).
  void set_output(std::ostream* out) { out_ = out; }
  std::ostream& out();

  // --- for handlers ---
  const cluster::Cluster* cluster() const { return cluster_.get(); }
  Status SetCluster(const std::string& source);
  Status SetPolicy(const std::string& name);
  void set_seed(uint64_t seed) { seed_ = seed; }
  // The scheduler, created on first use from the cluster and policy.
  StatusOr<scheduler::Scheduler*> Sched();
  bool has_scheduler() const { return sched_ != nullptr; }
  // Drops the scheduler, jobs and clock (the cluster and policy stay).
  void Reset();
  ManualClock& clock() { return clock_; }
  // Job names given in the script <-> ids.
  StatusOr<JobId> JobByName(std::string_view name) const;
  std::string JobName(JobId id) const;
  // A fresh id for a job about to be submitted; NameJob once it is accepted.
  JobId ReserveJobId() { return JobId(next_job_id_++); }
  void NameJob(const std::string& name, JobId id);
  bool HasJob(std::string_view name) const { return job_ids_.count(std::string(name)) > 0; }
  // Submitted jobs by id, with their script names.
  const std::map<int64_t, std::string>& job_names() const { return job_names_; }
  const std::vector<JobId>& last_started() const { return last_started_; }
  void set_last_started(std::vector<JobId> started) { last_started_ = std::move(started); }
  // A path from the script, relative to the script's folder, else the source tree.
  std::string ResolvePath(const std::string& path) const;
  StatusOr<NodeId> NodeByName(std::string_view name) const;

 private:
  Status RunLine(std::string_view line);

  std::map<std::string, Handler, std::less<>> commands_;
  std::map<std::string, Handler, std::less<>> expectations_;
  std::vector<SetupHook> setup_hooks_;
  std::vector<AfterHook> after_hooks_;
  bool in_after_hooks_ = false;
  std::string base_dir_;
  std::ostream* out_ = nullptr;

  std::unique_ptr<cluster::Cluster> cluster_;
  framework::PluginRegistry plugins_;
  framework::PolicyRegistry policies_;
  std::string policy_ = "bestfit";
  uint64_t seed_ = 42;
  ManualClock clock_;
  std::unique_ptr<scheduler::Scheduler> sched_;
  std::map<std::string, JobId, std::less<>> job_ids_;
  std::map<int64_t, std::string> job_names_;
  std::vector<JobId> last_started_;
  int64_t next_job_id_ = 0;
};

// The built-in commands (scenario_commands.cc) and expectations (scenario_expect.cc).
void RegisterScenarioCommands(ScenarioRunner& runner);
void RegisterScenarioExpectations(ScenarioRunner& runner);
// Queues, quotas, scheduler options, extra plugins and preemption checks
// (scenario_queues.cc); registered after the built-ins, so its `expect
// preempted` replaces the job-state check of that name.
void RegisterScenarioQueueCommands(ScenarioRunner& runner);
// The failure model: faults, fail, fault-aware time/advance, and their checks
// (scenario_faults.cc).
void RegisterScenarioFaultCommands(ScenarioRunner& runner);
void RegisterScenarioWorkflowCommands(ScenarioRunner& runner);

}  // namespace berth::testing
