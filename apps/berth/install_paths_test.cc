// The default file locations: a checkout, an installed prefix, the source tree.
#include "install_paths.h"

#include <gtest/gtest.h>

namespace berth::apps {
namespace {

TEST(InstallPaths, ShippedFileCandidatesInOrder) {
  auto c = ShippedFileCandidates("data/accelerators.yaml", "/usr/bin", "/src/berth");
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0], "data/accelerators.yaml");
  EXPECT_EQ(c[1], "/usr/share/berth/accelerators.yaml");
  EXPECT_EQ(c[2], "/src/berth/data/accelerators.yaml");
  EXPECT_EQ(ShippedFileCandidates("examples/a.yaml", "/opt/x/bin", "")[1], "/opt/x/share/berth/examples/a.yaml");
}

TEST(InstallPaths, SharedDataCandidatesPreferTheEnvironment) {
  auto c = SharedDataCandidates("gavel/t.json", "/data", "/w/main");
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0], "/data/gavel/t.json");
  EXPECT_EQ(c[1], "../shared/data/gavel/t.json");
  EXPECT_EQ(c[2], "/w/shared/data/gavel/t.json");
  EXPECT_EQ(SharedDataCandidates("x", nullptr, "").size(), 1u);
}

TEST(InstallPaths, TheCatalogIsFoundFromTheBuildTree) {
  // The test binary runs from the build tree: the source tree's catalog is found whatever the directory.
  const std::string path = ShippedFile("data/accelerators.yaml");
  EXPECT_NE(path.find("accelerators.yaml"), std::string::npos);
}

}  // namespace
}  // namespace berth::apps
