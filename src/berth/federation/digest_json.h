// A capacity digest (digest.h) as JSON, the form a member `berth serve`
// publishes at GET /v1/digest and the live dispatcher reads:
//
//   {"version":12,"taken_at_s":1764600000.25,"total_gpus":64,"free_gpus":16,
//    "types":[{"name":"H100","total":64,"free":16,"fit":[16,8,4,2]}],
//    "releases":[{"at_s":1764600600.0,"gpus":16}],
//    "queue":{"jobs":3,"gpus":24,"work_gpu_s":86400}}
//
// Times are seconds since the Unix epoch (the member's clock). Reading
// checks every field and maps the types by name onto the member's cluster as
// the dispatcher loaded it (a type it does not know is an error).
#pragma once

#include <nlohmann/json.hpp>

#include "berth/cluster/cluster.h"
#include "berth/common/status.h"
#include "berth/federation/digest.h"

namespace berth::federation {

nlohmann::json DigestToJson(const Digest& d);

// `member` is the dispatcher's index of the member the digest came from.
StatusOr<Digest> DigestFromJson(const nlohmann::json& v, int32_t member, const cluster::Cluster& cluster);

}  // namespace berth::federation
