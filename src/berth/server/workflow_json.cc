// Strict JSON -> WorkflowSpec for the API; stage jobs through ParseJobJson.
#include "berth/server/workflow_json.h"

#include <limits>

#include "berth/common/identifier.h"
#include "berth/json/json_parse.h"

namespace berth::server {
namespace {

using nlohmann::json;

std::string Shown(const json& v) { return berth::json::Excerpt(v, 40); }

Status GetName(const std::string& key, const json& v, std::string& out) {
  if (!v.is_string()) return InvalidArgument(key + ": expected a string, found " + Shown(v));
  const auto& text = v.get_ref<const std::string&>();
  if (text.size() > kMaxStringHard) return InvalidArgument(key + ": longer than " + std::to_string(kMaxStringHard) + " bytes");
  BERTH_RETURN_IF_ERROR(CheckIdentifier(key, text));
  out = text;
  return Status::Ok();
}

Status ParseStage(size_t i, const json& v, JobSource source, workload::StageSpec& s) {
  const std::string at = "stages[" + std::to_string(i) + "]";
  if (!v.is_object()) return InvalidArgument(at + ": expected an object (a stage), found " + Shown(v));
  json rest = json::object();
  for (const auto& [key, val] : v.items()) {
    const std::string k = at + "." + (key.size() <= 64 ? key : berth::json::ExcerptText(key, 60));
    if (key == "depends_on") {
      if (!val.is_array()) return InvalidArgument(k + ": expected an array of stage names, found " + Shown(val));
      for (size_t d = 0; d < val.size(); ++d) {
        std::string name;
        BERTH_RETURN_IF_ERROR(GetName(k + "[" + std::to_string(d) + "]", val[d], name));
        s.depends_on.push_back(std::move(name));
      }
    } else if (key == "after") {
      if (!val.is_string() || (val != "success" && val != "any"))
        return InvalidArgument(k + ": expected \"success\" or \"any\", found " + Shown(val));
      s.after = val == "any" ? workload::StageCondition::kAny : workload::StageCondition::kSuccess;
    } else if (key == "retries" || key == "fail_attempts") {
      const int64_t hi = key == "retries" ? workload::kMaxRetries : workload::kMaxRetries + 1;
      if (!val.is_number_integer() || val.get<int64_t>() < 0 || val.get<int64_t>() > hi)
        return InvalidArgument(k + ": expected an integer in 0.." + std::to_string(hi) + ", found " + Shown(val));
      (key == "retries" ? s.retries : s.fail_attempts) = static_cast<int32_t>(val.get<int64_t>());
    } else if (key == "artifact") {
      BERTH_RETURN_IF_ERROR(GetName(k, val, s.artifact));
    } else if (key == "stages" || key == "idempotency_key" || key == "submit_time_s") {
      return InvalidArgument(k + ": not a stage field");
    } else {
      if (key == "name") BERTH_RETURN_IF_ERROR(GetName(k, val, s.name));
      rest[key] = val;
    }
  }
  if (s.name.empty()) return InvalidArgument(at + ".name: missing (every stage needs a name)");
  auto sub = ParseJobJson(rest, source);
  if (!sub.ok()) return InvalidArgument(at + " ('" + s.name + "'): " + sub.status().message());
  s.job = std::move(sub->spec);
  return Status::Ok();
}

}  // namespace

bool IsWorkflowDocument(const json& v) { return v.is_object() && v.contains("stages"); }

StatusOr<WorkflowSubmission> ParseWorkflowJson(const json& v, JobSource source) {
  if (!v.is_object()) return InvalidArgument("expected a JSON object (a workflow), found " + Shown(v));
  WorkflowSubmission out;
  workload::WorkflowSpec& w = out.spec;
  for (const auto& [key, val] : v.items()) {
    if (key == "name") {
      BERTH_RETURN_IF_ERROR(GetName(key, val, w.name));
    } else if (key == "tenant") {
      BERTH_RETURN_IF_ERROR(GetName(key, val, w.tenant));
    } else if (key == "queue") {
      BERTH_RETURN_IF_ERROR(GetName(key, val, w.queue));
    } else if (key == "priority") {
      if (!val.is_number_integer() || val.get<int64_t>() < -std::numeric_limits<int32_t>::max() ||
          val.get<int64_t>() > std::numeric_limits<int32_t>::max())
        return InvalidArgument("priority: expected a 32-bit integer, found " + Shown(val));
      w.priority = static_cast<int32_t>(val.get<int64_t>());
    } else if (key == "idempotency_key") {
      BERTH_RETURN_IF_ERROR(GetName(key, val, out.idempotency_key));
      if (out.idempotency_key.empty()) return InvalidArgument("idempotency_key: empty (omit it instead)");
    } else if (key == "stages") {
      if (!val.is_array() || val.empty())
        return InvalidArgument("stages: expected a non-empty array of stages, found " + Shown(val));
      if (val.size() > static_cast<size_t>(workload::kMaxStages))
        return InvalidArgument("stages: more than " + std::to_string(workload::kMaxStages) + " stages");
      for (size_t i = 0; i < val.size(); ++i) {
        workload::StageSpec s;
        BERTH_RETURN_IF_ERROR(ParseStage(i, val[i], source, s));
        w.stages.push_back(std::move(s));
      }
    } else {
      return InvalidArgument("unknown field '" + (key.size() <= 64 ? key : berth::json::ExcerptText(key, 60)) +
                             "' (a workflow has name, tenant, queue, priority, idempotency_key and stages; job "
                             "fields go in each stage)");
    }
  }
  if (w.name.empty()) return InvalidArgument("name: missing (every workflow needs a name)");
  BERTH_RETURN_IF_ERROR(workload::ValidateWorkflow(w));
  return out;
}

json WorkflowToJson(const workload::WorkflowSpec& w) {
  json j = {{"name", w.name}};
  if (!w.tenant.empty()) j["tenant"] = w.tenant;
  if (!w.queue.empty()) j["queue"] = w.queue;
  if (w.priority) j["priority"] = w.priority;
  json stages = json::array();
  for (const auto& s : w.stages) {
    json o = JobToJson(s.job);
    o["name"] = s.name;
    if (!s.depends_on.empty()) o["depends_on"] = s.depends_on;
    o["after"] = workload::StageConditionName(s.after);
    if (s.retries) o["retries"] = s.retries;
    if (!s.artifact.empty()) o["artifact"] = s.artifact;
    if (s.fail_attempts) o["fail_attempts"] = s.fail_attempts;
    stages.push_back(std::move(o));
  }
  j["stages"] = std::move(stages);
  return j;
}

std::string EncodeWorkflowAccepted(const workload::WorkflowSpec& w, const std::string& fingerprint) {
  return json{{"spec", WorkflowToJson(w)}, {"fingerprint", fingerprint}}.dump();
}

StatusOr<StoredWorkflow> DecodeWorkflowAccepted(const std::string& body) {
  // Berth's own writing, but read from outside the process: the bounded parser.
  StatusOr<json> v = berth::json::ParseUntrusted(body, {.max_bytes = size_t{1} << 30});
  if (!v.ok()) return InvalidArgument("workflow record: " + v.status().message());
  if (!v->is_object() || !v->contains("spec") || !v->contains("fingerprint") || !(*v)["fingerprint"].is_string())
    return InvalidArgument("workflow record: expected {\"spec\":{...},\"fingerprint\":\"...\"}");
  StatusOr<WorkflowSubmission> sub = ParseWorkflowJson((*v)["spec"], JobSource::kStored);
  if (!sub.ok()) return InvalidArgument("workflow record: " + sub.status().message());
  return StoredWorkflow{std::move(sub->spec), (*v)["fingerprint"].get<std::string>()};
}

}  // namespace berth::server
