// Where the berth command finds the files it ships (the accelerator catalog,
// the examples) and the shared data it reads by default (Gavel's throughput
// table), so that defaults work from any directory:
//   ShippedFile("data/accelerators.yaml"): ./data/accelerators.yaml (a
//   checkout), else PREFIX/share/berth/accelerators.yaml beside an installed
//   PREFIX/bin/berth (the .deb), else the source tree the binary was built from.
//   SharedDataFile("gavel/simulation_throughputs.json"): $BERTH_DATA_DIR/...,
//   else ../shared/data/... from here, else beside the source tree.
// When no candidate exists the first one is returned, so the error that
// follows names the path a user would expect.
#pragma once

#include <string>
#include <vector>

namespace berth::apps {

// The folder of the running executable ("" if unknown).
std::string ExecutableDir();

// The candidates in the order they are tried (for tests and --help).
std::vector<std::string> ShippedFileCandidates(const std::string& relative, const std::string& exe_dir,
                                               const std::string& source_dir);
std::vector<std::string> SharedDataCandidates(const std::string& relative, const char* data_dir_env,
                                              const std::string& source_dir);

std::string ShippedFile(const std::string& relative);
std::string SharedDataFile(const std::string& relative);

}  // namespace berth::apps
