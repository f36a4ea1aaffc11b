// The job document of the HTTP API, mirroring the simulator's native job
// format (JSON lines, docs/trace-formats.md): the same keys, types and ranges,
// plus `idempotency_key` for submissions.
//
//   {"name":"llm","tenant":"ml","queue":"research","priority":0,"duration_s":3600,
//    "groups":[{"name":"worker","count":4,"gpus":8,"cpu_milli":64000,"memory_mib":262144,
//               "gpu_types":["H100"]}],
//    "idempotency_key":"c1-42"}
//
// Parsing is strict: unknown keys, duplicate keys, wrong types, out-of-range
// values and names with control or bidirectional characters are errors naming
// the field (e.g. "groups[0].count: expected an integer, found \"2\"").
// Beside the integer fields, Kubernetes forms: `gpus` as a quantity string
// ("8"), `cpu` and `memory` quantities ("500m", "256Gi") in place of
// `cpu_milli` and `memory_mib`, and `priority_class` (job/priority_class.h)
// in place of `priority`.
// `submit_time_s` (a trace's arrival time) is refused in an API body: the
// service orders jobs by when it accepts them.
//
// What one request may create is bounded apart from the syntax
// (AdmissionLimits, `berth serve --max-tasks-per-job` ...): a body within the
// syntax but over a limit is a 422, not a 400.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "berth/common/status.h"
#include "berth/job/job.h"

namespace berth::server {

struct JobSubmission {
  job::JobSpec spec;
  std::string idempotency_key;  // "" when the client sent none
};

// Hard bounds of the document itself, whatever the limits: any stored job
// parses within them.
inline constexpr int64_t kMaxTasksHard = 1'000'000;  // per job
inline constexpr size_t kMaxStringHard = 4096;       // bytes of any string
inline constexpr int32_t kMaxGroupsHard = 1024;

// What one submission may create (`berth serve` flags; docs/service.md,
// "Input limits"). Defaults fit the largest real jobs (100,000 tasks).
struct AdmissionLimits {
  int64_t max_tasks_per_job = 100'000;  // sum of the groups' counts
  int32_t max_groups_per_job = 64;
  size_t max_name_bytes = 256;   // the job's name and idempotency key
  size_t max_label_bytes = 256;  // tenant, queue, job_class, dataset, group names, GPU type names

  // InvalidArgument naming the flag when a limit is out of its range.
  Status Validate() const;
};

// Where a document comes from: an API body (submit_time_s refused), or a
// record Berth wrote itself (the store).
enum class JobSource { kApi, kStored };

// Parses a request body (bytes), with the bounded parser (json/json_parse.h:
// 16 MiB, 64 levels, no duplicate keys). Errors: InvalidArgument naming the
// field.
StatusOr<JobSubmission> ParseJobBody(const std::string& body, JobSource source = JobSource::kApi);
// Parses a parsed JSON value.
StatusOr<JobSubmission> ParseJobJson(const nlohmann::json& v, JobSource source = JobSource::kApi);
// OK, or ResourceExhausted naming the limit the spec goes over (a 422).
Status CheckAdmissionLimits(const job::JobSpec& spec, const std::string& idempotency_key,
                            const AdmissionLimits& limits);
// The document of a spec (without the id and idempotency key). Parsing it
// gives back an equal spec.
nlohmann::json JobToJson(const job::JobSpec& spec);

// The body of a service's load report (POST /v1/services/{id}/load, in
// `berth serve` and in kube mode): {"requests_per_s": R}, R in 0..1e9, as
// milli-requests/s.
StatusOr<int64_t> ParseLoadReport(const std::string& body);

// A short fingerprint of a submission's spec (FNV-1a of its canonical JSON),
// to tell a retried submission from a different job reusing a key.
std::string SpecFingerprint(const job::JobSpec& spec);

}  // namespace berth::server
