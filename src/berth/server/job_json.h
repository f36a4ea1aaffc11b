// The job document of the HTTP API, mirroring the simulator's native job
// format (JSON lines, docs/trace-formats.md): the same keys, types and ranges,
// plus `idempotency_key` for submissions.
//
//   {"name":"llm","tenant":"ml","queue":"research","priority":0,"duration_s":3600,
//    "groups":[{"name":"worker","count":4,"gpus":8,"cpu_milli":64000,"memory_mib":262144,
//               "gpu_types":["H100"]}],
//    "idempotency_key":"c1-42"}
//
// Parsing is strict: unknown keys, wrong types and out-of-range values are
// errors naming the field (e.g. "groups[0].gpus: expected an integer, found \"8\"").
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "berth/common/status.h"
#include "berth/job/job.h"

namespace berth::server {

struct JobSubmission {
  job::JobSpec spec;
  std::string idempotency_key;  // "" when the client sent none
};

// Parses a request body (bytes). Errors: InvalidArgument naming the field.
StatusOr<JobSubmission> ParseJobBody(const std::string& body);
// Parses a parsed JSON value.
StatusOr<JobSubmission> ParseJobJson(const nlohmann::json& v);
// The document of a spec (without the id and idempotency key). Parsing it
// gives back an equal spec.
nlohmann::json JobToJson(const job::JobSpec& spec);

// A short fingerprint of a submission's spec (FNV-1a of its canonical JSON),
// to tell a retried submission from a different job reusing a key.
std::string SpecFingerprint(const job::JobSpec& spec);

}  // namespace berth::server
