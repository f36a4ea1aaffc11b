// Default file locations that do not depend on the working directory
// (install_paths.h).
#include "install_paths.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#ifndef BERTH_SOURCE_DIR
#define BERTH_SOURCE_DIR ""
#endif

namespace berth::apps {
namespace {

std::string FirstExisting(const std::vector<std::string>& candidates) {
  for (const std::string& c : candidates) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(c, ec)) return c;
  }
  return candidates.empty() ? std::string() : candidates.front();
}

}  // namespace

std::string ExecutableDir() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

std::vector<std::string> ShippedFileCandidates(const std::string& relative, const std::string& exe_dir,
                                               const std::string& source_dir) {
  std::vector<std::string> out{relative};
  // Installed: PREFIX/bin/berth with PREFIX/share/berth/<file without "data/">.
  std::string installed = relative.rfind("data/", 0) == 0 ? relative.substr(5) : relative;
  if (!exe_dir.empty()) out.push_back((std::filesystem::path(exe_dir) / ".." / "share" / "berth" / installed).lexically_normal().string());
  if (!source_dir.empty()) out.push_back((std::filesystem::path(source_dir) / relative).string());
  return out;
}

std::vector<std::string> SharedDataCandidates(const std::string& relative, const char* data_dir_env,
                                              const std::string& source_dir) {
  std::vector<std::string> out;
  if (data_dir_env && *data_dir_env) out.push_back((std::filesystem::path(data_dir_env) / relative).string());
  out.push_back((std::filesystem::path("../shared/data") / relative).string());
  if (!source_dir.empty())
    out.push_back((std::filesystem::path(source_dir) / ".." / "shared" / "data" / relative).lexically_normal().string());
  return out;
}

std::string ShippedFile(const std::string& relative) {
  return FirstExisting(ShippedFileCandidates(relative, ExecutableDir(), BERTH_SOURCE_DIR));
}

std::string SharedDataFile(const std::string& relative) {
  const std::vector<std::string> c = SharedDataCandidates(relative, std::getenv("BERTH_DATA_DIR"), BERTH_SOURCE_DIR);
  // With BERTH_DATA_DIR set, it is the answer even when the file is missing there.
  if (const char* env = std::getenv("BERTH_DATA_DIR"); env && *env) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(c.front(), ec)) return c.front();
  }
  return FirstExisting(c);
}

}  // namespace berth::apps
