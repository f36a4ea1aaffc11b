// `berth simulate --services FILE`.
#include "services_cmd.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <tuple>

#include "berth/plugins/builtin.h"
#include "berth/sim/readers/readers.h"
#include "berth/sim/service_sim.h"
#include "berth/tenancy/queue_yaml.h"

namespace berth::apps {
namespace {

int Fail(const std::string& m) {
  std::cerr << "berth simulate: " << m << "\n";
  return 1;
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

int RunServicesSimulate(const ServiceSimFlags& flags, const sim::SimulateOptions& o, const std::string& json) {
  StatusOr<sim::ServiceSimConfig> cfg = sim::ReadServiceSimConfig(flags.services);
  if (!cfg.ok()) return Fail("--services: " + cfg.status().message());
  std::vector<sim::ScalingMode> modes;
  for (const std::string& m : Split(flags.autoscale)) {
    sim::ScalingMode mode;
    if (!sim::ParseScalingMode(m, mode)) return Fail("--autoscale: '" + m + "' is not static, reactive or predictive");
    modes.push_back(mode);
  }
  if (modes.empty()) return Fail("--autoscale: no mode");
  std::vector<sim::ColocationMode> placements;
  for (const std::string& m : Split(flags.colocation)) {
    sim::ColocationMode mode;
    if (!sim::ParseColocationMode(m, mode))
      return Fail("--colocation: '" + m + "' is not none, colocate, static or unbounded");
    placements.push_back(mode);
  }
  if (placements.empty()) return Fail("--colocation: no mode");
  if (flags.overcommit >= 0) {
    if (flags.overcommit > 1) return Fail("--overcommit: must be a ratio in 0..1");
    cfg->colocation.overcommit = flags.overcommit;
  }
  for (const auto& [flag, text, out] :
       {std::tuple{"--yield-best-effort", &flags.yield_best_effort, &cfg->colocation.best_effort_deadline},
        std::tuple{"--yield-training-grace", &flags.yield_training_grace, &cfg->colocation.training_grace}}) {
    if (text->empty()) continue;
    StatusOr<TimeUs> d = tenancy::ParseQueueDuration(*text);
    if (!d.ok()) return Fail(std::string(flag) + ": " + d.status().message());
    *out = *d;
  }
  if (!o.load_cluster) return Fail("--cluster is required");
  StatusOr<cluster::Cluster> cluster = o.LoadClusterFile();
  if (!cluster.ok()) return Fail(cluster.status().message());
  sim::Trace trace;
  if (!o.trace.empty()) {
    sim::ReadOptions ro;
    ro.skip_bad_lines = o.skip_bad_lines;
    ro.max_jobs = o.max_jobs;
    ro.window_from = o.window_from;
    ro.window_to = o.window_to;
    ro.tenants = o.tenants;
    StatusOr<sim::Trace> t = sim::ReadTrace(o.trace, o.trace_format, ro);
    if (!t.ok()) return Fail(t.status().message());
    trace = std::move(t).value();
  }
  if (!(flags.rate_scale > 0)) return Fail("--rate-scale must be positive");
  if (flags.rate_scale != 1 && !trace.jobs.empty()) {
    TimeUs first = trace.jobs.front().submit_time;
    for (const auto& j : trace.jobs) first = std::min(first, j.submit_time);
    for (auto& j : trace.jobs)
      j.submit_time = first + static_cast<TimeUs>(std::llround(static_cast<double>(j.submit_time - first) / flags.rate_scale));
  }
  if (o.checkpoint_interval > 0) cfg->checkpoint_interval = o.checkpoint_interval;
  framework::PluginRegistry plugins;
  framework::PolicyRegistry registry;
  if (Status s = plugins::RegisterBuiltinPlugins(plugins); !s.ok()) return Fail(s.message());
  if (Status s = plugins::RegisterBuiltinPolicies(registry); !s.ok()) return Fail(s.message());
  std::vector<std::string> policies = o.policies.empty() ? std::vector<std::string>{"services"} : o.policies;
  std::vector<sim::ServiceSimResult> results;
  for (const std::string& name : policies) {
    StatusOr<framework::Profile> profile = registry.Find(name);
    if (!profile.ok()) return Fail("--policy: " + profile.status().message());
    profile->name = name;
    if (o.min_runtime >= 0)
      for (auto& r : profile->post_filter) r.args["min_runtime_s"] = std::to_string(UsToSeconds(o.min_runtime));
    for (sim::ColocationMode placement : placements)
    for (sim::ScalingMode mode : modes) {
      sim::ServiceSimOptions so;
      so.colocation = placement;
      so.mode = mode;
      so.seed = o.seed;
      so.preemption_grace = o.preemption_grace;
      so.check_indexes = o.check_indexes;
      StatusOr<sim::ServiceSimResult> r = sim::RunServiceSim(*cluster, trace, *cfg, *profile, plugins, so);
      if (!r.ok()) return Fail(r.status().message());
      results.push_back(std::move(r).value());
    }
  }
  const std::string text = sim::ServiceResultsText(results);
  const std::string doc = sim::ServiceResultsToJson(results) + "\n";
  if (json == "-") {
    std::fputs(text.c_str(), stderr);
    std::fputs(doc.c_str(), stdout);
    return 0;
  }
  std::fputs(text.c_str(), stdout);
  if (!json.empty()) {
    const std::filesystem::path parent = std::filesystem::path(json).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    std::ofstream out(json);
    out << doc;
    if (!out) return Fail(json + ": cannot write");
  }
  return 0;
}

}  // namespace berth::apps
