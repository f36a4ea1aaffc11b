// Cluster YAML files. (Format: docs/cluster-format.md.)
#include "berth/cluster/loaders.h"

namespace berth::cluster {

StatusOr<Cluster> LoadClusterYaml(const std::string& path) {
  return Unavailable(path + ": YAML cluster files are not supported yet");
}

}  // namespace berth::cluster
