// Tests of the Alibaba PAI 2020 machine table loader: the published archive
// gives the README's counts per GPU type; extracted CSVs load too; bad input
// is named by file and line.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <map>

#include "berth/cluster/loaders.h"
#include "berth/testing/cluster_checks.h"
#include "berth/testing/paths.h"

namespace berth::cluster {
namespace {

std::string PaiArchive() { return testing::DataDir() + "/alibaba-pai-gpu-v2020/pai_machine_spec.tar.gz"; }

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

// A minimal ustar image holding the given files.
std::string Tar(const std::vector<std::pair<std::string, std::string>>& files) {
  std::string tar;
  for (const auto& [name, body] : files) {
    std::string h(512, '\0');
    name.copy(h.data(), std::min<size_t>(name.size(), 99));
    char size[12];
    std::snprintf(size, sizeof size, "%011o", static_cast<unsigned>(body.size()));
    std::copy(size, size + 11, h.begin() + 124);
    h[156] = '0';
    std::string("ustar").copy(h.data() + 257, 5);
    tar += h + body + std::string((512 - body.size() % 512) % 512, '\0');
  }
  return tar + std::string(1024, '\0');
}

std::string Gzip(const std::string& data) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

TEST(PaiMachineSpec, CountsPerGpuTypeMatchTheReadme) {
  auto c = LoadPaiMachineSpec(PaiArchive());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  Status s = testing::CheckClusterInvariants(*c);
  EXPECT_TRUE(s.ok()) << s.ToString();
  std::map<std::string, std::pair<int, int64_t>> by_type;  // machines, GPUs
  for (const auto& n : c->nodes()) {
    auto& e = by_type[n.gpu_count > 0 ? c->gpu_type(n.gpu_type).name : "CPU"];
    e.first += 1;
    e.second += n.gpu_count;
  }
  const std::map<std::string, std::pair<int, int64_t>> expected = {
      {"MISC", {280, 2240}}, {"P100", {798, 1596}}, {"T4", {497, 994}},
      {"V100", {104, 832}},  {"V100M32", {135, 1080}}, {"CPU", {83, 0}},
  };
  EXPECT_EQ(by_type, expected);
  for (const auto& [type, e] : by_type) std::printf("  %-8s %4d machines %5lld GPUs\n", type.c_str(), e.first, static_cast<long long>(e.second));
  EXPECT_EQ(c->num_nodes(), 1897);
  EXPECT_EQ(c->total_gpus(), 6742);
  EXPECT_EQ(c->gpu_type(*c->FindGpuType("V100")).memory_mib, 16 * 1024);
  EXPECT_EQ(c->gpu_type(*c->FindGpuType("V100M32")).memory_mib, 32 * 1024);
  EXPECT_EQ(c->gpu_type(*c->FindGpuType("MISC")).memory_mib, 0);
  EXPECT_EQ(c->node(NodeId(0)).name, "7399a758eb02bae1a3621236");  // file order kept
  EXPECT_EQ(c->node(NodeId(0)).cpu_milli, 96'000);
  EXPECT_EQ(c->node(NodeId(0)).memory_mib, 512 * 1024);
}

TEST(PaiMachineSpec, LoadClusterRecognisesTheName) {
  auto c = LoadCluster(PaiArchive());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->total_gpus(), 6742);
}

TEST(PaiMachineSpec, ReadsAnExtractedCsvWithOrWithoutHeader) {
  const std::string dir = ::testing::TempDir();
  WriteFile(dir + "/pai_machine_spec.csv", "m1,V100,96,384,8\nm2,CPU,96,512,0\r\n\nm3,T4,96,512,2\n");
  auto c = LoadCluster(dir + "/pai_machine_spec.csv");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->num_nodes(), 3);
  EXPECT_EQ(c->total_gpus(), 10);
  WriteFile(dir + "/pai_machine_spec_h.csv", "machine,gpu_type,cap_cpu,cap_mem,cap_gpu\nm1,P100,64,512,2\n");
  c = LoadPaiMachineSpec(dir + "/pai_machine_spec_h.csv");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->num_nodes(), 1);
}

TEST(PaiMachineSpec, ErrorsNameFileAndLine) {
  const std::string dir = ::testing::TempDir();
  WriteFile(dir + "/pai_bad.csv", "m1,V100,96,384,8\nm2,V100,96,384,eight\n");
  auto c = LoadPaiMachineSpec(dir + "/pai_bad.csv");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("pai_bad.csv:2: cap_gpu: bad value 'eight'"), std::string::npos)
      << c.status().message();

  WriteFile(dir + "/pai_short.csv", "m1,V100,96\n");
  c = LoadPaiMachineSpec(dir + "/pai_short.csv");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("pai_short.csv:1: expected 5 fields"), std::string::npos);

  // Inside an archive, the line is counted in the CSV and the member is named.
  WriteFile(dir + "/pai_tar.tar.gz", Gzip(Tar({{"x/pai_machine_spec.csv", "m1,T4,96,512,2\nm2,T4,96,,2\n"}})));
  c = LoadPaiMachineSpec(dir + "/pai_tar.tar.gz");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("pai_tar.tar.gz:x/pai_machine_spec.csv:2: cap_mem"), std::string::npos)
      << c.status().message();

  WriteFile(dir + "/pai_two.tar.gz", Gzip(Tar({{"a.csv", "m1,T4,96,512,2\n"}, {"b.csv", "m2,T4,96,512,2\n"}})));
  c = LoadPaiMachineSpec(dir + "/pai_two.tar.gz");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("expected one .csv in the archive, found 2"), std::string::npos);

  WriteFile(dir + "/pai_none.tar.gz", Gzip(Tar({{"README", "hello\n"}})));
  c = LoadPaiMachineSpec(dir + "/pai_none.tar.gz");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("no .csv file in the archive"), std::string::npos);

  WriteFile(dir + "/pai_corrupt.tar.gz", std::string("\x1f\x8b\x08\x00garbage-garbage", 19));
  c = LoadPaiMachineSpec(dir + "/pai_corrupt.tar.gz");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("not a valid gzip file"), std::string::npos) << c.status().message();

  c = LoadPaiMachineSpec(dir + "/does_not_exist.tar.gz");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
}

TEST(PaiMachineSpec, ArchiveAndExtractedCsvAgree) {
  // Round trip: the good archive's CSV, re-packed, loads the same machines.
  auto a = LoadPaiMachineSpec(PaiArchive());
  ASSERT_TRUE(a.ok());
  std::string csv;
  for (const auto& n : a->nodes())
    csv += n.name + "," + (n.gpu_count ? a->gpu_type(n.gpu_type).name : std::string("CPU")) + "," +
           std::to_string(n.cpu_milli / 1000) + "," + std::to_string(n.memory_mib / 1024) + "," +
           std::to_string(n.gpu_count) + "\n";
  const std::string path = ::testing::TempDir() + "/pai_repacked.tar.gz";
  WriteFile(path, Gzip(Tar({{"pai_machine_spec.csv", csv}})));
  auto b = LoadPaiMachineSpec(path);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(a->Summary(), b->Summary());
}

}  // namespace
}  // namespace berth::cluster
