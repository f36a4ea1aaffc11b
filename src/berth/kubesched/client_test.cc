// Kubeconfig loading and HTTP status mapping of the API client.
#include "berth/kubesched/client.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace berth::kube {
namespace {

class KubeConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/berth-kubeconfig-XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    dir_ = templ;
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  std::string dir_;
};

TEST_F(KubeConfigTest, ReadsTheCurrentContextWithRelativePathsAndInlineData) {
  const std::string path = Write("config", R"(apiVersion: v1
kind: Config
current-context: b
clusters:
- name: one
  cluster: {server: "https://10.0.0.1:6443/", certificate-authority: ca.crt}
- name: two
  cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: aGVsbG8=}
contexts:
- name: a
  context: {cluster: one, user: u1}
- name: b
  context: {cluster: two, user: u2, namespace: ml}
users:
- name: u1
  user: {token: t1}
- name: u2
  user: {tokenFile: token}
)");
  auto b = LoadKubeConfig(path);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->server, "https://127.0.0.1:6443");
  EXPECT_EQ(b->ns, "ml");
  EXPECT_EQ(b->token_file, dir_ + "/token");
  ASSERT_FALSE(b->ca_file.empty());
  std::ifstream ca(b->ca_file);
  std::stringstream text;
  text << ca.rdbuf();
  EXPECT_EQ(text.str(), "hello");  // certificate-authority-data, decoded
  for (const auto& f : b->temp_files) ::unlink(f.c_str());

  auto a = LoadKubeConfig(path, "a");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->server, "https://10.0.0.1:6443");  // the trailing slash is dropped
  EXPECT_EQ(a->ca_file, dir_ + "/ca.crt");
  EXPECT_EQ(a->token, "t1");
  EXPECT_EQ(a->ns, "default");
}

TEST_F(KubeConfigTest, ErrorsNameTheFileAndTheKey) {
  auto missing = LoadKubeConfig(dir_ + "/none");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  const std::string no_server = Write("c1", "clusters:\n- name: x\n  cluster: {}\n");
  auto s = LoadKubeConfig(no_server);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("c1"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("server"), std::string::npos) << s.status().message();
  const std::string bad_ctx = Write("c2", "current-context: nope\nclusters: []\ncontexts: []\n");
  auto c = LoadKubeConfig(bad_ctx);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("nope"), std::string::npos) << c.status().message();
  const std::string broken = Write("c3", "clusters: [\n");
  EXPECT_EQ(LoadKubeConfig(broken).status().code(), StatusCode::kInvalidArgument);
  const std::string ftp = Write("c4", "clusters:\n- name: x\n  cluster: {server: ftp://h}\n");
  EXPECT_EQ(LoadKubeConfig(ftp).status().code(), StatusCode::kInvalidArgument);
}

TEST(StatusFromHttpTest, MapsCodesAndKeepsTheServersMessage) {
  EXPECT_TRUE(StatusFromHttp(201, "POST /x", "").ok());
  EXPECT_EQ(StatusFromHttp(404, "GET /x", "").code(), StatusCode::kNotFound);
  EXPECT_EQ(StatusFromHttp(409, "POST /b", "").code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(StatusFromHttp(410, "GET /w", "").code(), StatusCode::kOutOfRange);
  EXPECT_EQ(StatusFromHttp(429, "GET /w", "").code(), StatusCode::kUnavailable);
  EXPECT_EQ(StatusFromHttp(503, "GET /w", "").code(), StatusCode::kUnavailable);
  Status s = StatusFromHttp(422, "POST /api/v1/namespaces/a/pods/p/binding",
                            R"({"kind":"Status","message":"pod p is already assigned to node n1"})");
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("already assigned"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("/binding"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace berth::kube
