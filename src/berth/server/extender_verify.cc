// Extender requests checked against the API server (see extender_verify.h).
#include "berth/server/extender_verify.h"

#include <algorithm>

namespace berth::server {

Status CheckPodSizes(const k8s::Pod& pod, const ExtenderLimits& limits) {
  auto over = [](const std::string& what, size_t size, size_t limit) {
    return InvalidArgument("berth: " + what + " is " + std::to_string(size) + " characters long (at most " +
                           std::to_string(limit) + ")");
  };
  if (pod.name.size() > limits.max_name) return over("pod name", pod.name.size(), limits.max_name);
  if (pod.ns.size() > limits.max_namespace) return over("pod namespace", pod.ns.size(), limits.max_namespace);
  if (pod.uid.size() > limits.max_uid) return over("pod uid", pod.uid.size(), limits.max_uid);
  const std::string group = pod.group_name();
  if (group.size() > limits.max_name) return over("group name", group.size(), limits.max_name);
  return Status::Ok();
}

StatusOr<k8s::Pod> VerifyExtenderPod(const k8s::Pod& claimed, ExtenderPodSource& source,
                                     const std::vector<std::string>& scheduler_names) {
  const std::string ref = claimed.ns + "/" + claimed.name;
  StatusOr<ApiPod> real = source.GetPod(claimed.ns, claimed.name);
  if (!real.ok()) {
    if (real.status().code() == StatusCode::kNotFound)
      return NotFound("berth: pod " + ref + " does not exist in the API server");
    return Unavailable("berth: cannot check pod " + ref + " with the API server: " + real.status().message());
  }
  if (real->pod.uid != claimed.uid)
    return FailedPrecondition("berth: pod " + ref + " has uid " + real->pod.uid + " in the API server, not '" +
                              claimed.uid + "'");
  if (!real->node.empty())
    return FailedPrecondition("berth: pod " + ref + " is already bound to " + real->node);
  if (real->ended) return FailedPrecondition("berth: pod " + ref + " has ended");
  if (!scheduler_names.empty() &&
      std::find(scheduler_names.begin(), scheduler_names.end(), real->scheduler_name) == scheduler_names.end()) {
    std::string names;
    for (const auto& n : scheduler_names) names += (names.empty() ? "" : ", ") + n;
    return FailedPrecondition("berth: pod " + ref + " names scheduler '" + real->scheduler_name +
                              "', not one Berth serves (" + names + ")");
  }
  return real->pod;
}

StatusOr<int32_t> VerifyGroupSize(k8s::Pod& pod, ExtenderPodSource& source) {
  const std::string group = pod.group_name();
  if (group.empty()) return 1;
  StatusOr<std::optional<int32_t>> pg = source.GroupMinMember(pod);
  const std::string ref = pod.ns + "/" + group;
  if (!pg.ok()) {
    if (pg.status().code() == StatusCode::kNotFound)
      return FailedPrecondition("berth: pod " + pod.ns + "/" + pod.name + " names group " + ref + " (" +
                                pod.group_key() + ") but its PodGroup does not exist");
    return Unavailable("berth: cannot read the PodGroup " + ref + ": " + pg.status().message());
  }
  if (!pg->has_value()) return pod.min_member();
  const int32_t size = **pg;
  if (size < 1 || size > 100'000)
    return FailedPrecondition("berth: PodGroup " + ref + " has minMember " + std::to_string(size) +
                              " (expected 1 to 100000)");
  const bool claims = pod.annotations.count("berth.dev/min-member") ||
                      pod.annotations.count("kueue.x-k8s.io/pod-group-total-count") ||
                      pod.labels.count("pod-group.scheduling.sigs.k8s.io/min-available");
  if (claims && pod.min_member() != size)
    return FailedPrecondition("berth: pod " + pod.ns + "/" + pod.name + " claims a group of " +
                              std::to_string(pod.min_member()) + " pods, but PodGroup " + ref + " has minMember " +
                              std::to_string(size));
  pod.annotations["berth.dev/min-member"] = std::to_string(size);
  return size;
}

}  // namespace berth::server
