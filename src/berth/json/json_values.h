// Typed reads of values from parsed untrusted JSON with range checks and
// errors that name the key and show at most 40 characters of the value:
// shared by the job document, the node agents' API and the other readers.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "berth/common/status.h"
#include "berth/json/json_parse.h"

namespace berth::json {

// At most 40 characters of a value, without serializing it whole.
inline std::string Shown(const nlohmann::json& v) { return Excerpt(v, 40); }

// An integer in lo..hi ("KEY: expected an integer, found ...", "... is outside lo..hi").
Status GetInt(const std::string& key, const nlohmann::json& v, int64_t lo, int64_t hi, int64_t& out);

template <typename T>
Status GetIntAs(const std::string& key, const nlohmann::json& v, int64_t lo, int64_t hi, T& out) {
  int64_t x = 0;
  BERTH_RETURN_IF_ERROR(GetInt(key, v, lo, hi, x));
  out = static_cast<T>(x);
  return Status::Ok();
}

}  // namespace berth::json
