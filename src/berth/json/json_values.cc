// Typed reads of untrusted JSON values (json_values.h).
#include "berth/json/json_values.h"

namespace berth::json {

Status GetInt(const std::string& key, const nlohmann::json& v, int64_t lo, int64_t hi, int64_t& out) {
  if (!v.is_number_integer()) return InvalidArgument(key + ": expected an integer, found " + Shown(v));
  // Beyond int64: too large to say more; else the range below names the bounds.
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    return InvalidArgument(key + ": " + Shown(v) + " is too large");
  out = v.get<int64_t>();
  if (out < lo || out > hi)
    return InvalidArgument(key + ": " + std::to_string(out) + " is outside " + std::to_string(lo) + ".." +
                           std::to_string(hi));
  return Status::Ok();
}

}  // namespace berth::json
