// Capacity digests as JSON (digest_json.h).
#include "berth/federation/digest_json.h"

#include <cmath>

namespace berth::federation {

using nlohmann::json;

namespace {

TimeUs FromSeconds(double s) { return static_cast<TimeUs>(std::llround(s * 1e6)); }

StatusOr<int64_t> Int(const json& o, const char* key, const std::string& where) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_number_integer() || it->get<int64_t>() < 0)
    return InvalidArgument("digest: " + where + key + ": expected a non-negative integer");
  return it->get<int64_t>();
}

StatusOr<double> Num(const json& o, const char* key, const std::string& where) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0)
    return InvalidArgument("digest: " + where + key + ": expected a non-negative number");
  return it->get<double>();
}

}  // namespace

json DigestToJson(const Digest& d) {
  json types = json::array();
  for (const auto& t : d.types)
    types.push_back({{"name", t.name}, {"total", t.total}, {"free", t.free}, {"fit", t.fit}});
  json releases = json::array();
  for (const auto& r : d.releases) releases.push_back({{"at_s", UsToSeconds(r.at)}, {"gpus", r.gpus}});
  return {{"version", d.version},
          {"taken_at_s", UsToSeconds(d.taken_at)},
          {"total_gpus", d.total_gpus},
          {"free_gpus", d.free_gpus},
          {"types", std::move(types)},
          {"releases", std::move(releases)},
          {"queue", {{"jobs", d.queue_jobs}, {"gpus", d.queue_gpus}, {"work_gpu_s", d.queue_work_gpu_s}}}};
}

StatusOr<Digest> DigestFromJson(const json& v, int32_t member, const cluster::Cluster& cluster) {
  if (!v.is_object()) return InvalidArgument("digest: expected an object");
  Digest d;
  d.member = member;
  BERTH_ASSIGN_OR_RETURN(d.version, Int(v, "version", ""));
  if (d.version == 0) return InvalidArgument("digest: version: must be at least 1");
  BERTH_ASSIGN_OR_RETURN(double taken, Num(v, "taken_at_s", ""));
  d.taken_at = FromSeconds(taken);
  BERTH_ASSIGN_OR_RETURN(d.total_gpus, Int(v, "total_gpus", ""));
  BERTH_ASSIGN_OR_RETURN(d.free_gpus, Int(v, "free_gpus", ""));
  d.types.resize(cluster.gpu_types().size());
  for (size_t t = 0; t < d.types.size(); ++t) d.types[t].name = cluster.gpu_types()[t].name;
  auto types = v.find("types");
  if (types == v.end() || !types->is_array()) return InvalidArgument("digest: types: expected an array");
  for (size_t i = 0; i < types->size(); ++i) {
    const json& t = (*types)[i];
    const std::string where = "types[" + std::to_string(i) + "].";
    if (!t.is_object() || !t.contains("name") || !t["name"].is_string())
      return InvalidArgument("digest: " + where + "name: expected a string");
    const std::string name = t["name"].get<std::string>();
    size_t k = 0;
    while (k < d.types.size() && d.types[k].name != name) ++k;
    if (k == d.types.size())
      return InvalidArgument("digest: " + where + "name: '" + name.substr(0, 64) +
                             "' is not a GPU type of the member's cluster in the federation file");
    TypeDigest& td = d.types[k];
    BERTH_ASSIGN_OR_RETURN(td.total, Int(t, "total", where));
    BERTH_ASSIGN_OR_RETURN(td.free, Int(t, "free", where));
    auto fit = t.find("fit");
    if (fit == t.end() || !fit->is_array() || fit->size() != kBlockSizes.size())
      return InvalidArgument("digest: " + where + "fit: expected " + std::to_string(kBlockSizes.size()) + " integers");
    for (size_t b = 0; b < kBlockSizes.size(); ++b) {
      if (!(*fit)[b].is_number_integer() || (*fit)[b].get<int64_t>() < 0)
        return InvalidArgument("digest: " + where + "fit: expected non-negative integers");
      td.fit[b] = (*fit)[b].get<int64_t>();
    }
  }
  auto rel = v.find("releases");
  if (rel == v.end() || !rel->is_array() || rel->size() > kMaxReleases)
    return InvalidArgument("digest: releases: expected an array of at most " + std::to_string(kMaxReleases));
  for (size_t i = 0; i < rel->size(); ++i) {
    const std::string where = "releases[" + std::to_string(i) + "].";
    if (!(*rel)[i].is_object()) return InvalidArgument("digest: " + where + ": expected an object");
    Release r;
    BERTH_ASSIGN_OR_RETURN(double at, Num((*rel)[i], "at_s", where));
    r.at = FromSeconds(at);
    BERTH_ASSIGN_OR_RETURN(r.gpus, Int((*rel)[i], "gpus", where));
    d.releases.push_back(r);
  }
  auto q = v.find("queue");
  if (q == v.end() || !q->is_object()) return InvalidArgument("digest: queue: expected an object");
  BERTH_ASSIGN_OR_RETURN(d.queue_jobs, Int(*q, "jobs", "queue."));
  BERTH_ASSIGN_OR_RETURN(d.queue_gpus, Int(*q, "gpus", "queue."));
  BERTH_ASSIGN_OR_RETURN(d.queue_work_gpu_s, Num(*q, "work_gpu_s", "queue."));
  return d;
}

}  // namespace berth::federation
