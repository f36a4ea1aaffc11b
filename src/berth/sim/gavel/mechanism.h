// The round mechanism of the Gavel driver: given the allocation policy's
// time shares x[j][t] (the share of time job j should spend on type t),
// which jobs run this round and on which type. Two mechanisms:
//
//   kGavel (Gavel's simulator, OSDI'20 section 5): per type, a job's
//     priority is its share divided by the fraction of the type's time it
//     received since the last reset (x / (time_jt / time_t); a job not yet
//     in the allocation has priority 0); ties go to the larger accumulated
//     deficit, then the larger share, then the lower id. Types are visited
//     in the given order; each takes jobs from its own priority list until
//     its GPUs are full, so jobs with no share there (priority 0) fill what
//     the shared ones leave, before the next type is visited. FIFO-style
//     (not time-sliced) policies never run priority-0 jobs. A reset happens
//     when the allocation is recomputed, which is only when the job set
//     changed and at least `reset_interval_s` (1920 s in Gavel) passed since
//     the last one: deficits absorb the time owed minus the time received,
//     and every job's time restarts at half a round. Jobs that arrive between
//     resets wait for the next one (or for GPUs nobody with a share takes).
//   kDeficit: the allocation is recomputed whenever the job set changes;
//     each type (in the given order) takes the jobs with a share on it by
//     deficit over the job's whole life (time owed minus time received on
//     that type); time-sliced policies then fill leftover GPUs with any job,
//     by total deficit.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace berth::sim::gavel {

enum class Mechanism : int8_t { kGavel, kDeficit };

// The per-job vectors are the driver's and grow as jobs arrive (Grow()).
struct MechanismInput {
  size_t types = 0;
  const std::vector<double>* steps_per_s = nullptr;  // [job * types + type]; 0: cannot run there
  const std::vector<int32_t>* scale = nullptr;       // GPUs per job
  std::vector<double> capacity;                      // GPUs per type
  double round_s = 360;
  double reset_interval_s = 1920;       // kGavel
  bool time_sliced = true;              // false for FIFO policies
};

class RoundMechanism {
 public:
  RoundMechanism(Mechanism kind, MechanismInput in);

  // Room for jobs 0..jobs-1.
  void Grow(size_t jobs);
  // Job j (dense id) became active.
  void Arrive(int64_t j);
  // Whether the allocation should be recomputed at `now`, given that the job
  // set (or what the policy depends on) changed since the last computation.
  bool WantsAllocation(bool changed, double now) const;
  // Called right before the allocation is replaced: `x` still holds the old
  // shares ([job * types + type]); `active` are the jobs the new one covers.
  void Reset(std::span<const int64_t> active, std::span<const double> x, double now);
  // Picks this round's jobs: chosen[j] = type (chosen[] holds -1 on entry).
  void Choose(std::span<const int64_t> active, std::span<const double> x, std::span<const int> type_order,
              std::vector<int16_t>& chosen);
  // Job j ran `dt` seconds on type `ty` this round.
  void Ran(int64_t j, int ty, double dt);

 private:
  double Priority(int64_t j, int ty, std::span<const double> x) const;
  void ChooseGavel(std::span<const int64_t> active, std::span<const double> x, std::span<const int> type_order,
                   std::vector<int16_t>& chosen);
  void ChooseDeficit(std::span<const int64_t> active, std::span<const double> x, std::span<const int> type_order,
                     std::vector<int16_t>& chosen);

  Mechanism kind_;
  MechanismInput in_;
  // kGavel: time per (job, type) and per type since the last reset, deficits
  // carried across resets, whether the job is in the current allocation.
  std::vector<double> job_time_, worker_time_, deficit_;
  std::vector<char> in_allocation_;
  double last_reset_ = 0;
  // kDeficit: time owed and received per (job, type) over the job's life.
  std::vector<double> expected_, received_;
  // Scratch.
  std::vector<int64_t> cand_;
  std::vector<double> key_;
  std::vector<double> free_;
};

}  // namespace berth::sim::gavel
