// Fuzz target: the kube-scheduler extender documents (server/extender.h), as
// the service reads them: the bounded parser, then every verb's parser, then
// the answers written back.
#include <cstdint>
#include <string>

#include "berth/json/json_parse.h"
#include "berth/server/extender.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace k8s = berth::server::k8s;
  const std::string body(reinterpret_cast<const char*>(data), size);
  if (size < 64) (void)berth::ParseK8sQuantity(body, 1000);
  auto doc = berth::json::ParseUntrusted(body);
  if (!doc.ok()) return 0;
  if (auto a = k8s::ParseExtenderArgs(*doc); a.ok()) {
    (void)a->pod.group_name();
    (void)a->pod.min_member();
    (void)a->pod.queue();
    (void)a->CandidateNames();
  }
  if (auto p = k8s::ParsePreemptionArgs(*doc); p.ok()) {
    k8s::PreemptionResult r;
    r.node_to_meta_victims = p->node_to_victims;
    (void)k8s::ToJson(r).dump();
  }
  if (auto b = k8s::ParseBindingArgs(*doc); b.ok()) (void)k8s::ToJson(*b).dump();
  if (auto f = k8s::ParseFilterResult(*doc); f.ok()) (void)k8s::ToJson(*f).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (auto h = k8s::ParseHostPriorityList(*doc); h.ok()) (void)k8s::ToJson(*h).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (auto r = k8s::ParsePreemptionResult(*doc); r.ok()) (void)k8s::ToJson(*r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  (void)berth::json::Excerpt(*doc);
  return 0;
}
