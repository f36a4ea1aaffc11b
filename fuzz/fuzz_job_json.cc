// Fuzz target: the job document of POST /v1/jobs (server/job_json.h). Any
// bytes must give a job or an error, never a crash; an accepted job must
// survive the round trip through its stored form unchanged.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "berth/server/job_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  using berth::server::JobSource;
  auto sub = berth::server::ParseJobBody(body, JobSource::kApi);
  auto stored = berth::server::ParseJobBody(body, JobSource::kStored);
  if (sub.ok() && !stored.ok()) std::abort();  // the API accepts less than the store, never more
  if (!stored.ok()) return 0;
  (void)berth::server::CheckAdmissionLimits(stored->spec, stored->idempotency_key, {});
  const nlohmann::json doc = berth::server::JobToJson(stored->spec);
  auto again = berth::server::ParseJobJson(doc, JobSource::kStored);
  if (!again.ok()) std::abort();
  if (berth::server::JobToJson(again->spec) != doc) std::abort();
  (void)berth::server::SpecFingerprint(again->spec);
  return 0;
}
