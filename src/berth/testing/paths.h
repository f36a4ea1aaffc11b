// Where tests find the repository and the shared data. BERTH_DATA_DIR may be
// overridden by the environment variable of the same name.
#pragma once

#include <cstdlib>
#include <string>

namespace berth::testing {

inline std::string DataDir() {
  if (const char* env = std::getenv("BERTH_DATA_DIR")) return env;
  return BERTH_DATA_DIR;
}
inline std::string SourceDir() { return BERTH_SOURCE_DIR; }

}  // namespace berth::testing
