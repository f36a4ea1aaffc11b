// Request traces of inference services: the Azure LLM inference trace 2023
// (AzureLLMInferenceTrace_{conv,code}.csv: TIMESTAMP, ContextTokens,
// GeneratedTokens; ../shared/data/azure-llm-inference-2023/README.md) read as
// requests per minute, plus the mean prompt and output lengths, which a
// serving-time model turns into the requests/s one replica serves.
//
//   StatusOr<RequestTrace> t = ReadRequestTrace(path);
//   t->per_minute[k]   // requests that arrived in minute k (from the first request)
//
// Serving-time model (ServingModel): a replica serves `batch` requests at
// once (continuous batching); a request of c prompt and g output tokens holds
// its slot for prefill_us_per_token * c + decode_us_per_token * g, so one
// replica serves batch / (mean holding time) requests per second.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "berth/common/status.h"

namespace berth::sim {

struct RequestTrace {
  std::vector<int64_t> per_minute;  // requests per minute, from the first request's minute
  double mean_context_tokens = 0;
  double mean_generated_tokens = 0;
  int64_t requests = 0;
};

// Errors name the file and line (a timestamp or a count that does not parse).
StatusOr<RequestTrace> ReadRequestTrace(const std::string& path);

struct ServingModel {
  double prefill_us_per_token = 0;  // per prompt token
  double decode_us_per_token = 0;   // per generated token
  int32_t batch = 1;                // requests one replica serves at once
  Status Validate() const;
  // Requests/s one replica serves at most, in milli-rps, for requests of the
  // given mean lengths.
  int64_t CapacityMilliRps(double context_tokens, double generated_tokens) const;
};

}  // namespace berth::sim
