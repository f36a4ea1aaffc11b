// Fuzz target: the cluster YAML loader (cluster/loaders.h) and, for short
// inputs, the compact cluster spec.
#include <cstdint>
#include <string>

#include "berth/cluster/loaders.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)berth::cluster::ParseClusterYaml(text, "fuzz.yaml");
  if (size < 128) (void)berth::cluster::ParseClusterSpec(text);
  return 0;
}
