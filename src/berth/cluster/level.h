// Topology levels, from widest to narrowest: region > cluster > spine (pod) >
// leaf (rail block) > NVLink domain (a node, or a multi-node domain such as an
// NVL72 rack). Nodes and GPUs sit below the NVLink level.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace berth::cluster {

enum class Level : uint8_t { kRegion = 0, kCluster = 1, kSpine = 2, kLeaf = 3, kNvlink = 4 };
inline constexpr int kNumLevels = 5;
const char* LevelName(Level level);
// Parses "region", "cluster"/"zone", "spine"/"pod", "leaf"/"block"/"rail",
// "nvlink"/"node"/"accelerator".
std::optional<Level> ParseLevel(std::string_view name);

}  // namespace berth::cluster
