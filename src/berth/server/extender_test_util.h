// Kubernetes documents for the extender tests: a v1.Pod and a v1.Node as
// kube-scheduler sends them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace berth::server::testing {

using nlohmann::json;

// A v1.Pod as kube-scheduler sends it (trimmed to what matters, plus noise it
// also sends: status, other resources, init containers).
inline json PodDoc(const std::string& name, const std::string& group, int gpus, const std::string& min_member = "2") {
  json pod = {
      {"kind", "Pod"},
      {"apiVersion", "v1"},
      {"metadata",
       {{"name", name},
        {"namespace", "ml"},
        {"uid", "uid-" + name},
        {"labels", {{"kueue.x-k8s.io/queue-name", "research"}}},
        {"annotations", json::object()}}},
      {"spec",
       {{"schedulerName", "default-scheduler"},
        {"priority", 100},
        {"containers",
         {{{"name", "trainer"},
           {"image", "trainer:1"},
           {"resources",
            {{"requests", {{"cpu", "4"}, {"memory", "16Gi"}, {"nvidia.com/gpu", std::to_string(gpus)}}},
             {"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}},
          {{"name", "sidecar"}, {"resources", {{"requests", {{"cpu", "500m"}, {"memory", "512Mi"}}}}}}}}}},
      {"status", {{"phase", "Pending"}}}};
  if (!group.empty()) {
    pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] = group;
    pod["metadata"]["annotations"]["berth.dev/min-member"] = min_member;
  }
  return pod;
}

inline json NodeDoc(const std::string& name) {
  return {{"metadata", {{"name", name}, {"labels", {{"nvidia.com/gpu.product", "H100"}}}}},
          {"status", {{"capacity", {{"nvidia.com/gpu", "8"}}}}}};
}

}  // namespace berth::server::testing
