// The HTTP layer on a loopback port: routes, auth, error documents, limits.
#include "berth/server/http_server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include "berth/http/message.h"
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

TEST_F(HttpServerTest, OtherMethodsAre405WithAllow) {
  auto put = client_->Put("/v1/jobs/2", Auth(), "{}", "application/json");
  ASSERT_TRUE(put);
  EXPECT_EQ(put->status, 405);
  EXPECT_EQ(put->get_header_value("Allow"), "GET, DELETE, HEAD, OPTIONS");
  EXPECT_NE(json::parse(put->body)["error"].get<std::string>().find("PUT /v1/jobs/2"), std::string::npos);
  auto patch = client_->Patch("/v1/jobs", "{}", "application/json");
  EXPECT_EQ(patch->status, 405);
  EXPECT_EQ(patch->get_header_value("Allow"), "GET, POST, HEAD, OPTIONS");
  auto del = client_->Delete("/v1/jobs", Auth());
  EXPECT_EQ(del->status, 405);
  auto post_job = client_->Post("/v1/jobs/2", Auth(), "{}", "application/json");
  EXPECT_EQ(post_job->status, 405);
  auto why = client_->Delete("/v1/jobs/2/why", Auth());
  EXPECT_EQ(why->status, 405);
  EXPECT_EQ(why->get_header_value("Allow"), "GET, HEAD, OPTIONS");
  auto queues = client_->Post("/v1/queues", "{}", "application/json");
  EXPECT_EQ(queues->status, 405);
  auto options = client_->Options("/v1/jobs");
  EXPECT_EQ(options->status, 204);
  EXPECT_EQ(options->get_header_value("Allow"), "GET, POST, HEAD, OPTIONS");
  // The extender verbs too.
  auto get_filter = client_->Get("/v1/extender/filter");
  EXPECT_EQ(get_filter->status, 405);
  EXPECT_EQ(get_filter->get_header_value("Allow"), "POST, OPTIONS");
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
  auto f = client_->Post("/v1/extender/filter", Auth(), "{}", "application/json");
  EXPECT_EQ(f->status, 400);
  EXPECT_TRUE(json::parse(f->body).contains("error"));
}

TEST_F(HttpServerTest, AuthSchemeIsCaseInsensitive) {
  const std::string body = R"({"name":"lower","groups":[{"count":1,"gpus":1}]})";
  auto lower = client_->Post("/v1/jobs", {{"Authorization", "bearer tok"}}, body, "application/json");
  ASSERT_TRUE(lower);
  EXPECT_EQ(lower->status, 201) << lower->body;
  auto upper = client_->Post("/v1/jobs", {{"Authorization", "BEARER   tok "}}, body, "application/json");
  EXPECT_EQ(upper->status, 200) << upper->body;  // the same name: a retry
  EXPECT_EQ(client_->Post("/v1/jobs", {{"Authorization", "Basic tok"}}, body, "application/json")->status, 401);
  EXPECT_EQ(client_->Post("/v1/jobs", {{"Authorization", "Bearertok"}}, body, "application/json")->status, 401);
}

TEST_F(HttpServerTest, ExtenderVerbsNeedCredentials) {
  for (const char* verb : {"filter", "prioritize", "preempt", "bind"}) {
    const std::string path = std::string("/v1/extender/") + verb;
    auto anon = client_->Post(path.c_str(), "{}", "application/json");
    ASSERT_TRUE(anon);
    EXPECT_EQ(anon->status, 401) << verb;
    EXPECT_NE(json::parse(anon->body)["error"].get<std::string>().find("client certificate"), std::string::npos);
    EXPECT_EQ(client_->Post(path.c_str(), {{"Authorization", "Bearer nope"}}, "{}", "application/json")->status, 401);
    EXPECT_EQ(client_->Post(path.c_str(), Auth(), "{}", "application/json")->status, 400) << verb;  // past auth: bad body
  }
}

TEST_F(HttpServerTest, OversizedHeadersAre431AndChunkedBodiesAreLimited) {
  auto big = client_->Get("/healthz", {{"X-Big", std::string(100 << 10, 'a')}});
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 431);
  EXPECT_TRUE(json::parse(big->body).contains("error"));
  // A chunked upload over the limit (4096 here) is refused while reading.
  size_t sent = 0;
  auto chunked = client_->Post(
      "/v1/jobs", Auth(),
      [&](size_t, httplib::DataSink& sink) {
        std::string chunk(1024, ' ');
        if (sent < (64 << 10)) {
          sent += chunk.size();
          return sink.write(chunk.data(), chunk.size());
        }
        sink.done();
        return true;
      },
      "application/json");
  if (chunked) EXPECT_EQ(chunked->status, 413);  // or the connection was closed while sending
  EXPECT_EQ(client_->Get("/healthz")->status, 200);
}

TEST(HttpServerOptionsTest, AnonymousExtenderWhenAllowed) {
  ServiceHarness h;
  ASSERT_TRUE(h.Start().ok());
  Logger log{std::fopen("/dev/null", "w")};
  HttpOptions o;
  o.port = 0;
  o.token = "tok";
  o.extender_anonymous = true;
  HttpServer server(h.service(), h.metrics(), log, o);
  ASSERT_TRUE(server.Bind().ok());
  server.Start();
  httplib::Client client("127.0.0.1", server.port());
  EXPECT_EQ(client.Post("/v1/extender/filter", "{}", "application/json")->status, 400);
  server.Stop();
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("127.3.4.5"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_FALSE(IsLoopbackHost("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackHost("10.0.0.1"));
  EXPECT_FALSE(IsLoopbackHost("::"));
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
  o.extender_anonymous = true;
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

// The one check every write endpoint shares (berth serve, the federation
// dispatcher, kube mode's load reports).
TEST(WriteAuthorizedTest, TokenMissingWrongAndRight) {
  http::Request req;
  http::Response res;
  EXPECT_TRUE(WriteAuthorized("", req, res));  // no token configured: open
  EXPECT_FALSE(WriteAuthorized("tok", req, res));
  EXPECT_EQ(res.status, 401);
  ASSERT_EQ(res.headers.count("WWW-Authenticate"), 1u);
  EXPECT_EQ(res.headers.find("WWW-Authenticate")->second, "Bearer");
  EXPECT_NE(res.body.find("missing bearer token"), std::string::npos);
  req.headers.emplace("Authorization", "Bearer nope");
  http::Response wrong;
  EXPECT_FALSE(WriteAuthorized("tok", req, wrong));
  EXPECT_NE(wrong.body.find("invalid bearer token"), std::string::npos);
  http::Request good;
  good.headers.emplace("Authorization", "bearer  tok ");
  http::Response ok;
  EXPECT_TRUE(WriteAuthorized("tok", good, ok));
  EXPECT_TRUE(ok.body.empty());
}

}  // namespace
}  // namespace berth::server
