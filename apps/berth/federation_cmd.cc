// `berth simulate --federation FILE` (federation_cmd.h).
#include "federation_cmd.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "berth/common/parallel_for.h"
#include "berth/federation/fed_report.h"
#include "berth/federation/fed_sim.h"
#include "berth/federation/speed.h"
#include "berth/hetero/speed_score.h"
#include "berth/plugins/builtin.h"
#include "berth/sim/readers/readers.h"

namespace berth::apps {
namespace {

int Fail(const std::string& message) {
  std::cerr << "berth simulate: " << message << "\n";
  return 1;
}

}  // namespace

int RunFederationSimulate(const FederationFlags& ff, const sim::SimulateOptions& o, const ClusterLoader& load,
                          const std::string& json, bool quiet) {
  if (o.trace.empty()) return Fail("--federation needs --trace");
  if (!o.cluster.empty()) return Fail("--federation and --cluster exclude each other (members name their clusters)");
  if (!(ff.rate_scale > 0) || !std::isfinite(ff.rate_scale) || ff.rate_scale > 1e6)
    return Fail("--rate-scale must be a positive number");
  if (ff.batch_min < 1) return Fail("--batch-min must be positive");
  if (!(ff.deadline_factor >= 0) || !std::isfinite(ff.deadline_factor) || ff.deadline_factor > 1e6)
    return Fail("--deadline-factor must be a number >= 0");
  std::vector<federation::Policy> policies;
  for (const auto& name : o.policies) {
    auto p = federation::ParsePolicy(name);
    if (!p) return Fail("--policy: '" + name + "' is not a dispatch policy (with --federation: " +
                        federation::PolicyNames() + ")");
    policies.push_back(*p);
  }
  if (policies.empty()) return Fail("--policy is required");
  StatusOr<federation::Federation> fed = federation::LoadFederation(ff.federation, load);
  if (!fed.ok()) return Fail(fed.status().message());
  if (!ff.member_failures.empty())
    if (Status s = federation::LoadMemberFailures(ff.member_failures, *fed); !s.ok()) return Fail(s.message());
  framework::PluginRegistry plugins;
  framework::PolicyRegistry registry;
  if (Status s = plugins::RegisterBuiltinPlugins(plugins); !s.ok()) return Fail(s.message());
  if (Status s = plugins::RegisterBuiltinPolicies(registry); !s.ok()) return Fail(s.message());
  StatusOr<framework::Profile> profile = registry.Find(ff.member_policy);
  if (!profile.ok()) return Fail("--member-policy: " + profile.status().message());
  profile->name = ff.member_policy;
  // Card-type speeds: the catalog's specs fitted to the measured throughputs when they can be read.
  std::shared_ptr<const hetero::ThroughputModel> model;
  if (!fed->trace_reference_type.empty()) {
    auto m = hetero::LoadThroughputModel(o.catalog, o.throughputs);
    if (!m.ok()) m = hetero::LoadThroughputModel(o.catalog, "");
    if (!m.ok()) return Fail("--catalog: " + m.status().message());
    model = *m;
  }
  const federation::SpeedTable speed = federation::BuildSpeedTable(*fed, model.get());
  sim::ReadOptions ro;
  ro.skip_bad_lines = o.skip_bad_lines;
  ro.max_jobs = o.max_jobs;
  ro.window_from = o.window_from;
  ro.window_to = o.window_to;
  ro.tenants = o.tenants;
  StatusOr<sim::Trace> trace = sim::ReadTrace(o.trace, o.trace_format, ro);
  if (!trace.ok()) return Fail(trace.status().message());
  if (trace->jobs.empty()) return Fail(o.trace + ": no jobs");
  if (ff.rate_scale != 1) {
    TimeUs first = trace->jobs.front().submit_time;
    for (const auto& j : trace->jobs) first = std::min(first, j.submit_time);
    for (auto& j : trace->jobs)
      j.submit_time = first + static_cast<TimeUs>(std::llround(static_cast<double>(j.submit_time - first) / ff.rate_scale));
  }
  // --checkpoint-interval: jobs whose trace gives none checkpoint this often (member failures resume from it).
  if (o.checkpoint_interval > 0)
    for (auto& j : trace->jobs)
      if (j.checkpoint_interval <= 0) j.checkpoint_interval = o.checkpoint_interval;
  if (ff.deadline_factor > 0)
    for (auto& j : trace->jobs)
      if (j.deadline < 0 && j.duration > 0)
        j.deadline = std::max<TimeUs>(1, static_cast<TimeUs>(static_cast<double>(j.duration) * ff.deadline_factor));
  FILE* text = json == "-" ? stderr : stdout;
  if (!quiet)
    std::fprintf(text, "federation %s: %zu regions, %zu clusters, %lld GPUs; trace %s: %s; rate x%g\n",
                 fed->name.c_str(), fed->regions.size(), fed->members.size(),
                 static_cast<long long>(fed->total_gpus()), o.trace.c_str(), trace->report.Summary().c_str(),
                 ff.rate_scale);
  if (!quiet && !fed->trace_reference_type.empty()) {
    std::string line = "card speed vs " + fed->trace_reference_type + ":";
    for (size_t m = 0; m < fed->members.size(); ++m)
      for (size_t t = 0; t < speed[m].size(); ++t)
        line += " " + fed->members[m].name + "/" + fed->members[m].cluster->gpu_types()[t].name + " " +
                std::to_string(speed[m][t]).substr(0, 4);
    std::fprintf(text, "%s\n", line.c_str());
  }
  if (!quiet)
    for (const auto& f : fed->failures) {
      char length[32] = "good";
      if (f.duration >= 0) std::snprintf(length, sizeof length, "%gs", UsToSeconds(f.duration));
      std::fprintf(text, "member failure: %s at %gs for %s\n", f.label.c_str(), UsToSeconds(f.at), length);
    }
  federation::FedSimOptions so;
  so.seed = o.seed;
  so.batch_min = ff.batch_min;
  so.restore_cost = o.restore_cost;
  // One run per dispatch policy, side by side on --threads (the same results for any count).
  StatusOr<std::vector<federation::FedResult>> runs = ParallelMap<federation::FedResult>(
      policies.size(), o.threads, [&](size_t i) -> StatusOr<federation::FedResult> {
        return federation::RunFederation(*fed, speed, *trace, *profile, plugins, policies[i], so);
      });
  if (!runs.ok()) return Fail(runs.status().message());
  std::vector<federation::FedResult> results = std::move(runs).value();
  std::fputs(federation::FedResultsTable(results).c_str(), text);
  const std::string out = federation::FedResultsToJson(results);
  if (json == "-") {
    std::fputs((out + "\n").c_str(), stdout);
  } else if (!json.empty()) {
    std::ofstream f(json);
    if (!f) return Fail(json + ": cannot write");
    f << out << "\n";
    std::fprintf(text, "wrote %s\n", json.c_str());
  }
  return 0;
}

}  // namespace berth::apps
