// Fuzz target: the queue tree YAML (tenancy/queue_yaml.h), parsed and built
// against a small two-type cluster.
#include <cstdint>
#include <string>

#include "berth/cluster/loaders.h"
#include "berth/tenancy/queue_yaml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const berth::cluster::Cluster* cluster =
      new berth::cluster::Cluster(berth::cluster::ParseClusterSpec("4x8:H100+2x4:A100").value());
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto file = berth::tenancy::ParseQueueYaml(text, "q.yaml");
  if (!file.ok()) return 0;
  (void)berth::tenancy::BuildQueueTree(*file, "q.yaml", *cluster);
  return 0;
}
