// The workflow document of the API: a job document with `stages` instead of
// `groups` (docs/workflows.md). Each stage is a job document (single task or
// gang) plus `depends_on`, `after`, `retries`, `artifact` and
// `fail_attempts`; the workflow's own keys are name, tenant, queue, priority
// and idempotency_key.
//
//   {"name":"pipe","tenant":"ml","stages":[
//     {"name":"prepare","duration_s":60,"artifact":"/data/p","groups":[{"cpu_milli":4000}]},
//     {"name":"train","depends_on":["prepare"],"retries":2,"launcher":"torch","groups":[{"count":2,"gpus":8}]}]}
//
// Errors are InvalidArgument naming the stage and field:
// "stages[1] ('train'): groups[0].gpus: expected an integer, found \"8\"".
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "berth/common/status.h"
#include "berth/server/job_json.h"
#include "berth/workload/workflow.h"

namespace berth::server {

struct WorkflowSubmission {
  workload::WorkflowSpec spec;
  std::string idempotency_key;  // "" when the client sent none
};

// Whether a document is a workflow (an object with `stages`).
bool IsWorkflowDocument(const nlohmann::json& v);

// Parses and validates (ValidateWorkflow) a workflow document.
StatusOr<WorkflowSubmission> ParseWorkflowJson(const nlohmann::json& v, JobSource source = JobSource::kApi);

// The workflow's spec as a document (what GET shows under "spec").
nlohmann::json WorkflowToJson(const workload::WorkflowSpec& w);

// The body of a kWorkflowAccepted store record:
// {"spec":{...WorkflowToJson...},"fingerprint":"..."}. Decoding parses the
// spec as stored (JobSource::kStored) and validates it again.
std::string EncodeWorkflowAccepted(const workload::WorkflowSpec& w, const std::string& fingerprint);
struct StoredWorkflow {
  workload::WorkflowSpec spec;
  std::string fingerprint;
};
StatusOr<StoredWorkflow> DecodeWorkflowAccepted(const std::string& body);

}  // namespace berth::server
