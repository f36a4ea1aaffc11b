// Small pieces the Kubernetes scheduler's files share: reading fields of API
// objects, the natural order of pod names (ranks), the berth.dev/gpus
// annotation's text, and API timestamps.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace berth::kube {

// v[key] as a string ("" when absent or not a string).
std::string Str(const nlohmann::json& v, const char* key);
// v[key], or a null value when absent.
const nlohmann::json& Sub(const nlohmann::json& v, const char* key);
// metadata[map][key] for map "labels" or "annotations" ("" when absent).
std::string Label(const nlohmann::json& md, const char* map, const char* key);
// Natural order of names: "w-2" before "w-10", so ranks follow the names.
bool NaturalLess(const std::string& a, const std::string& b);
// GPU indexes of a node-local mask as "0,1,2,3", and back (0 when malformed).
std::string MaskText(uint64_t mask);
uint64_t ParseMask(const std::string& text);
// Now as an API timestamp: "2006-01-02T15:04:05Z", or with microseconds
// ("...05.000000Z", a MicroTime such as a Lease's renewTime).
std::string NowRfc3339(bool micro = false);

}  // namespace berth::kube
