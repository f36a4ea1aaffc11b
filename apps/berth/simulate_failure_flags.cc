// `berth simulate` failure-model flags (see simulate_failure_flags.h).
#include "simulate_failure_flags.h"

#include <tuple>

#include "berth/tenancy/queue_yaml.h"

namespace berth::apps {

void AddFailureOptions(CLI::App* cmd, sim::SimulateOptions& sim, FailureFlags& flags) {
  cmd->add_option("--failures", sim.failures,
                  "Replay: failures from FILE (timed faults and rates, docs/failures.md) or a built-in profile: "
                  "llama3, or llama3*SCALE for its rates x SCALE");
  cmd->add_option("--spares", sim.spares,
                  "Replay with --failures: hot spare nodes per domain: none, leaf, spine (sized from the failure "
                  "rates), or leaf:N / spine:N")
      ->default_val("none");
  cmd->add_option("--repair", sim.repair,
                  "Replay with --failures: what a failed gang does: requeue (restart whole from its last "
                  "checkpoint) or in-place (replace the failed ranks in their domain); default: in-place with "
                  "--spares, else requeue");
  cmd->add_option("--lend-spares", sim.lend_spares,
                  "Replay with --spares: lend free spares to single-task best-effort jobs, which yield at once "
                  "when a repair needs the spare: off, on, or a duration D (only jobs whose runtime_limit_s is at "
                  "most D)")
      ->default_val("off");
  cmd->add_option("--best-effort-tenants", sim.best_effort_tenants,
                  "Mark the trace's jobs of these tenants (comma-separated; Philly VCs) best effort")
      ->delimiter(',');
  cmd->add_option("--restart-cost", flags.restart_cost,
                  "Replay with --failures: time a gang restarted whole spends before working, e.g. 30m (jobs "
                  "without restart_cost_s; default 0)");
  cmd->add_option("--repair-cost", flags.repair_cost,
                  "Replay with --failures: time an in-place repair costs the gang (restore of the replaced "
                  "rank), e.g. 5m (default 0)");
  cmd->add_option("--until", flags.until,
                  "Replay: stop this long after the first submission, e.g. 54d (default: when every job is done)");
}

Status ParseFailureFlags(const FailureFlags& flags, sim::SimulateOptions& sim) {
  const std::tuple<const char*, const std::string*, TimeUs*> durations[] = {
      {"--restart-cost", &flags.restart_cost, &sim.restart_cost},
      {"--repair-cost", &flags.repair_cost, &sim.repair_cost},
      {"--until", &flags.until, &sim.until}};
  for (const auto& [flag, text, out] : durations) {
    if (text->empty()) continue;
    StatusOr<TimeUs> d = tenancy::ParseQueueDuration(*text);
    if (!d.ok()) return InvalidArgument(std::string(flag) + ": " + d.status().message());
    if (*d < 0) return InvalidArgument(std::string(flag) + " must not be negative");
    *out = *d;
  }
  return Status::Ok();
}

}  // namespace berth::apps
