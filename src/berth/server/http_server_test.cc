// The HTTP layer on a loopback port: routes, auth, error documents, limits.
#include "berth/server/http_server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include "berth/server/extender_test_util.h"
#include "berth/server/service_test_util.h"

namespace berth::server {
namespace {

using nlohmann::json;
using testing::ServiceHarness;

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(h_.Start().ok());
    HttpOptions o;
    o.host = "127.0.0.1";
    o.port = 0;
    o.token = "tok";
    o.max_body_bytes = 4096;
    server_ = std::make_unique<HttpServer>(h_.service(), h_.metrics(), log_, o);
    ASSERT_TRUE(server_->Bind().ok());
    server_->Start();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(20, 0);
    ASSERT_TRUE(testing::WaitFor([&] { return static_cast<bool>(client_->Get("/healthz")); }));
  }
  void TearDown() override { server_->Stop(); }
  httplib::Headers Auth() { return {{"Authorization", "Bearer tok"}}; }

  ServiceHarness h_;
  Logger log_{std::fopen("/dev/null", "w")};
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(HttpServerTest, SubmitReadCancel) {
  const std::string body = R"({"name":"a","groups":[{"count":1,"gpus":8}]})";
  auto no_token = client_->Post("/v1/jobs", body, "application/json");
  ASSERT_TRUE(no_token);
  EXPECT_EQ(no_token->status, 401);
  auto wrong = client_->Post("/v1/jobs", {{"Authorization", "Bearer nope"}}, body, "application/json");
  EXPECT_EQ(wrong->status, 401);
  auto ok = client_->Post("/v1/jobs", Auth(), body, "application/json");
  ASSERT_EQ(ok->status, 201) << ok->body;
  const int64_t id = json::parse(ok->body)["id"];
  auto get = client_->Get(("/v1/jobs/" + std::to_string(id)).c_str());
  EXPECT_EQ(get->status, 200);
  EXPECT_EQ(json::parse(get->body)["name"], "a");
  EXPECT_EQ(client_->Get(("/v1/jobs/" + std::to_string(id) + "/why").c_str())->status, 200);
  EXPECT_EQ(client_->Get("/v1/jobs")->status, 200);
  EXPECT_EQ(client_->Get("/v1/jobs?state=running&limit=5")->status, 200);
  EXPECT_EQ(client_->Get("/v1/jobs?state=bogus")->status, 400);
  EXPECT_EQ(client_->Get("/v1/jobs?limit=x")->status, 400);
  EXPECT_EQ(client_->Delete(("/v1/jobs/" + std::to_string(id)).c_str())->status, 401);
  EXPECT_EQ(client_->Delete(("/v1/jobs/" + std::to_string(id)).c_str(), Auth())->status, 200);
}

TEST_F(HttpServerTest, ErrorsAreJsonDocuments) {
  auto bad_id = client_->Get("/v1/jobs/abc");
  EXPECT_EQ(bad_id->status, 400);
  EXPECT_TRUE(json::parse(bad_id->body).contains("error"));
  auto missing = client_->Get("/v1/jobs/424242");
  EXPECT_EQ(missing->status, 404);
  auto route = client_->Get("/v2/nothing");
  EXPECT_EQ(route->status, 404);
  EXPECT_TRUE(json::parse(route->body).contains("error"));
  auto big = client_->Post("/v1/jobs", Auth(), std::string(10000, ' '), "application/json");
  EXPECT_EQ(big->status, 413);
  auto bad = client_->Post("/v1/jobs", Auth(), "{\"name\":", "application/json");
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(json::parse(bad->body)["error"].get<std::string>().find("malformed JSON"), std::string::npos);
}

TEST_F(HttpServerTest, ProbesMetricsAndReads) {
  EXPECT_EQ(client_->Get("/healthz")->status, 200);
  EXPECT_EQ(client_->Get("/readyz")->status, 200);
  auto m = client_->Get("/metrics");
  ASSERT_EQ(m->status, 200);
  EXPECT_NE(m->get_header_value("Content-Type").find("text/plain"), std::string::npos);
  EXPECT_NE(m->body.find("berth_ready 1"), std::string::npos);
  EXPECT_EQ(json::parse(client_->Get("/v1/nodes")->body)["nodes"].size(), 4u);
  EXPECT_EQ(client_->Get("/v1/queues")->status, 200);
  auto f = client_->Post("/v1/extender/filter", "{}", "application/json");
  EXPECT_EQ(f->status, 400);
  EXPECT_TRUE(json::parse(f->body).contains("error"));
}

// kube-scheduler with nodeCacheCapable false sends every candidate Node
// whole: with their image lists, 100 nodes pass 1 MiB. The default limit
// takes 16 MiB.
TEST(HttpServerLimitsTest, FiveMebibyteExtenderBody) {
  ServiceHarness h;
  ASSERT_TRUE(h.Start().ok());
  Logger log{std::fopen("/dev/null", "w")};
  HttpOptions o;
  EXPECT_EQ(o.max_body_bytes, size_t{16} << 20);
  o.port = 0;
  HttpServer server(h.service(), h.metrics(), log, o);
  ASSERT_TRUE(server.Bind().ok());
  server.Start();
  httplib::Client client("127.0.0.1", server.port());
  client.set_read_timeout(60, 0);
  client.set_write_timeout(60, 0);
  json items = json::array();
  for (int i = 0; i < 4; ++i) {
    json node = testing::NodeDoc("node-" + std::to_string(i));
    json images = json::array();
    for (int k = 0; k < 1500; ++k)
      images.push_back({{"names", {"registry.example/team/image-" + std::to_string(k) + "@sha256:" +
                                   std::string(64, 'a' + k % 26) + std::string(800, 'x')}},
                        {"sizeBytes", 123456789}});
    node["status"]["images"] = images;
    items.push_back(node);
  }
  const std::string body =
      json{{"Pod", testing::PodDoc("p", "", 1)}, {"Nodes", {{"kind", "NodeList"}, {"items", items}}}}.dump();
  ASSERT_GT(body.size(), size_t{5} << 20);
  ASSERT_LT(body.size(), size_t{6} << 20);
  auto r = client.Post("/v1/extender/filter", body, "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body.substr(0, 200);
  json out = json::parse(r->body);
  ASSERT_EQ(out["nodes"]["items"].size(), 1u);  // the one planned node, returned whole
  EXPECT_EQ(out["nodes"]["items"][0]["status"]["images"].size(), 1500u);
  server.Stop();
}

TEST(ParseListenTest, Forms) {
  EXPECT_EQ(ParseListen("127.0.0.1:7450").value(), (std::pair<std::string, int>{"127.0.0.1", 7450}));
  EXPECT_EQ(ParseListen("[::1]:80").value(), (std::pair<std::string, int>{"::1", 80}));
  EXPECT_FALSE(ParseListen("127.0.0.1").ok());
  EXPECT_FALSE(ParseListen("127.0.0.1:99999").ok());
  EXPECT_FALSE(ParseListen(":80").ok());
}

}  // namespace
}  // namespace berth::server
