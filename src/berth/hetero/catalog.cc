// Accelerator catalog loading (yaml-cpp; its exceptions stop here).
#include "berth/hetero/catalog.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <fstream>
#include <sstream>

namespace berth::hetero {
namespace {

std::string Where(const std::string& origin, const YAML::Node& n) {
  return origin + ":" + std::to_string(n.Mark().line + 1);
}

// Reads a non-negative number field; `required` fields must be present and > 0.
Status ReadNumber(const YAML::Node& entry, const char* key, bool required, const std::string& origin, double& out) {
  YAML::Node v = entry[key];
  if (!v || v.IsNull()) {
    if (required) return InvalidArgument(Where(origin, entry) + ": '" + key + "' is required");
    out = 0;
    return Status::Ok();
  }
  try {
    out = v.as<double>();
  } catch (const YAML::Exception&) {
    return InvalidArgument(Where(origin, v) + ": '" + key + "' must be a number");
  }
  if (out < 0 || (required && out == 0))
    return InvalidArgument(Where(origin, v) + ": '" + key + "' must be a positive number");
  return Status::Ok();
}

}  // namespace

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

StatusOr<Precision> ParsePrecision(std::string_view s) {
  std::string l = Lower(s);
  if (l == "fp32" || l == "tf32" || l.empty()) return Precision::kFp32;
  if (l == "fp16") return Precision::kFp16;
  if (l == "bf16") return Precision::kBf16;
  return InvalidArgument("unknown precision '" + std::string(s) + "' (fp32, fp16, bf16)");
}

double AcceleratorSpec::PeakTflops(Precision p) const {
  switch (p) {
    case Precision::kBf16:
      if (bf16_tflops > 0) return bf16_tflops;
      [[fallthrough]];
    case Precision::kFp16:
      if (fp16_tflops > 0) return fp16_tflops;
      [[fallthrough]];
    case Precision::kFp32:
      return fp32_tflops;
  }
  return fp32_tflops;
}

Status Catalog::Add(AcceleratorSpec spec) {
  std::vector<std::string> keys{Lower(spec.name)};
  for (const auto& a : spec.aliases) keys.push_back(Lower(a));
  for (const auto& k : keys)
    if (by_key_.count(k)) return AlreadyExists("accelerator name or alias '" + k + "' is used twice");
  for (const auto& k : keys) by_key_.emplace(k, types_.size());
  types_.push_back(std::move(spec));
  return Status::Ok();
}

const AcceleratorSpec* Catalog::Find(std::string_view name) const {
  auto it = by_key_.find(Lower(name));
  return it == by_key_.end() ? nullptr : &types_[it->second];
}

StatusOr<Catalog> ParseCatalog(const std::string& text, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(origin + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (!root.IsMap() || !root["accelerators"] || !root["accelerators"].IsSequence())
    return InvalidArgument(origin + ": expected a map with an 'accelerators' list");
  Catalog cat;
  for (const YAML::Node& e : root["accelerators"]) {
    if (!e.IsMap()) return InvalidArgument(Where(origin, e) + ": each accelerator must be a map");
    AcceleratorSpec s;
    try {
      if (!e["name"] || !e["name"].IsScalar()) return InvalidArgument(Where(origin, e) + ": 'name' is required");
      s.name = e["name"].as<std::string>();
      if (e["aliases"]) {
        if (!e["aliases"].IsSequence()) return InvalidArgument(Where(origin, e["aliases"]) + ": 'aliases' must be a list");
        for (const auto& a : e["aliases"]) s.aliases.push_back(a.as<std::string>());
      }
      if (e["vendor"]) s.vendor = e["vendor"].as<std::string>();
      if (e["generation"]) s.generation = e["generation"].as<std::string>();
      if (e["source"]) s.source = e["source"].as<std::string>();
    } catch (const YAML::Exception& ex) {
      return InvalidArgument(Where(origin, e) + ": " + ex.msg);
    }
    BERTH_RETURN_IF_ERROR(ReadNumber(e, "fp32_tflops", true, origin, s.fp32_tflops));
    BERTH_RETURN_IF_ERROR(ReadNumber(e, "fp16_tflops", false, origin, s.fp16_tflops));
    BERTH_RETURN_IF_ERROR(ReadNumber(e, "bf16_tflops", false, origin, s.bf16_tflops));
    BERTH_RETURN_IF_ERROR(ReadNumber(e, "memory_gib", true, origin, s.memory_gib));
    BERTH_RETURN_IF_ERROR(ReadNumber(e, "memory_bw_gbs", true, origin, s.memory_bw_gbs));
    BERTH_RETURN_IF_ERROR(ReadNumber(e, "link_gbs", false, origin, s.link_gbs));
    BERTH_RETURN_IF_ERROR(ReadNumber(e, "price_per_hour", false, origin, s.price_per_hour));
    Status st = cat.Add(std::move(s));
    if (!st.ok()) return InvalidArgument(Where(origin, e) + ": " + st.message());
  }
  if (cat.size() == 0) return InvalidArgument(origin + ": no accelerators");
  return cat;
}

StatusOr<Catalog> LoadCatalog(const std::string& path) {
  std::ifstream f(path);
  if (!f) return NotFound(path + ": cannot open accelerator catalog");
  std::stringstream ss;
  ss << f.rdbuf();
  return ParseCatalog(ss.str(), path);
}

}  // namespace berth::hetero
