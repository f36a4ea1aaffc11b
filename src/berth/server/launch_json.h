// The launch spec as the API serves it (GET /v1/jobs/{id}/launch;
// docs/launch.md): workload::LaunchSpec, key for key.
#pragma once

#include <nlohmann/json.hpp>

#include "berth/workload/launch.h"

namespace berth::server {

nlohmann::json LaunchSpecJson(const workload::LaunchSpec& spec);

}  // namespace berth::server
