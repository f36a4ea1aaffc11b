// Built-in failure profiles: rates per component-hour derived from published
// counts (see failure_file.h for the rate model).
//
// llama3: the Llama 3 405B pre-training run (Llama Team, "The Llama 3 Herd of
// Models", arXiv:2407.21783, section 3.3.4 and Table 5): 16,384 H100 GPUs on
// 2,048 nodes of 8 over a 54-day snapshot, 466 job interruptions, 47 planned
// (automated maintenance) and 419 unexpected, by root cause below. Each count
// becomes a rate per component-hour of that run's exposure (21,233,664
// GPU-hours or 2,654,208 node-hours), mapped to the component it takes out:
// GPU causes take one GPU out, host causes the node, network causes the node's
// link, software causes interrupt the job on one GPU and take nothing down.
// The paper gives no repair times; the recovery distributions here are
// stated assumptions (docs/failures.md).
#include <cmath>

#include "berth/faults/failure_file.h"

namespace berth::faults {
namespace {

constexpr double kLlamaGpuHours = 16384.0 * 54 * 24;
constexpr double kLlamaNodeHours = 2048.0 * 54 * 24;

struct Row {
  FaultKind kind;
  const char* cause;
  int count;
  DurationDist::Kind dist;
  double recovery_h;
  double deadline_h = 0;
};

constexpr DurationDist::Kind kExp = DurationDist::Kind::kExponential;
constexpr DurationDist::Kind kFixed = DurationDist::Kind::kFixed;

// Table 5 (unexpected, 419) plus the 47 planned interruptions.
constexpr Row kLlama3[] = {
    {FaultKind::kGpu, "faulty-gpu", 148, kExp, 24},
    {FaultKind::kGpu, "gpu-hbm3", 72, kExp, 24},
    {FaultKind::kTask, "software-bug", 54, kFixed, 0},
    {FaultKind::kLink, "network-switch-cable", 35, kExp, 4},
    {FaultKind::kNode, "host-maintenance", 32, kExp, 4},
    {FaultKind::kGpu, "gpu-sram", 19, kExp, 24},
    {FaultKind::kGpu, "gpu-system-processor", 17, kExp, 24},
    {FaultKind::kLink, "nic", 7, kExp, 12},
    {FaultKind::kTask, "nccl-watchdog", 7, kFixed, 0},
    {FaultKind::kGpu, "silent-data-corruption", 6, kExp, 24},
    {FaultKind::kGpu, "gpu-thermal-sensor", 6, kExp, 24},
    {FaultKind::kNode, "ssd", 3, kExp, 12},
    {FaultKind::kNode, "power-supply", 3, kExp, 12},
    {FaultKind::kNode, "server-chassis", 2, kExp, 12},
    {FaultKind::kNode, "io-expansion-board", 2, kExp, 12},
    {FaultKind::kTask, "dependency", 2, kFixed, 0},
    {FaultKind::kNode, "cpu", 2, kExp, 12},
    {FaultKind::kNode, "system-memory", 2, kExp, 12},
    {FaultKind::kMaintenance, "planned", 47, kFixed, 2, 1},
};

TimeUs Hours(double h) { return static_cast<TimeUs>(std::llround(h * 3600.0 * 1e6)); }

}  // namespace

std::vector<std::string> BuiltinProfileNames() { return {"llama3"}; }

StatusOr<std::vector<FailureRate>> BuiltinProfile(std::string_view name) {
  if (name != "llama3") return NotFound("no failure profile '" + std::string(name) + "'");
  std::vector<FailureRate> out;
  for (const Row& r : kLlama3) {
    FailureRate rate;
    rate.kind = r.kind;
    const bool per_gpu = r.kind == FaultKind::kGpu || r.kind == FaultKind::kTask;
    rate.per_hour = r.count / (per_gpu ? kLlamaGpuHours : kLlamaNodeHours);
    rate.cause = r.cause;
    rate.recovery = {r.dist, Hours(r.recovery_h)};
    rate.deadline = Hours(r.deadline_h);
    out.push_back(std::move(rate));
  }
  return out;
}

}  // namespace berth::faults
