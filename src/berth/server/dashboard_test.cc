// The dashboard's routes on a loopback port: the embedded files with their
// content types and caching headers (ETag, 304), paths outside web/ refused,
// open without the token; GET /v1/topology against /v1/nodes; --reports.
#include "berth/server/dashboard.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>

#include "berth/server/http_server.h"
#include "berth/server/service_test_util.h"
#include "berth/server/web_assets.h"

namespace berth::server {
namespace {

using nlohmann::json;
using testing::ServiceHarness;

class DashboardTest : public ::testing::Test {
 protected:
  void StartServer(HttpOptions o = {}) {
    ASSERT_TRUE(h_.Start().ok());
    o.host = "127.0.0.1";
    o.port = 0;
    o.token = "tok";
    server_ = std::make_unique<HttpServer>(h_.service(), h_.metrics(), log_, o);
    ASSERT_TRUE(server_->Bind().ok());
    server_->Start();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(20, 0);
    ASSERT_TRUE(testing::WaitFor([&] { return static_cast<bool>(client_->Get("/healthz")); }));
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }

  ServiceHarness h_{"8x8:H100/leaf=2/spine=2"};
  Logger log_{std::fopen("/dev/null", "w")};
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST(WebAssets, EmbeddedAndSorted) {
  ASSERT_NE(FindWebAsset("index.html"), nullptr);
  ASSERT_NE(FindWebAsset("app.js"), nullptr);
  EXPECT_EQ(FindWebAsset("app.js")->content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(FindWebAsset("style.css")->content_type, "text/css; charset=utf-8");
  EXPECT_NE(FindWebAsset("pages/cluster.js"), nullptr);
  EXPECT_EQ(FindWebAsset("nope.js"), nullptr);
  auto all = WebAssets();
  for (size_t i = 1; i < all.size(); ++i) EXPECT_LT(all[i - 1].path, all[i].path);
  for (const auto& a : all) {
    EXPECT_EQ(a.etag.size(), 18u) << a.path;  // 16 hex digits, quoted
    EXPECT_FALSE(a.body.empty()) << a.path;
  }
}

TEST_F(DashboardTest, ServesThePageWithCachingHeaders) {
  StartServer();
  auto page = client_->Get("/");  // no token: open like the reads
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(page->get_header_value("Cache-Control"), "no-cache");
  EXPECT_NE(page->get_header_value("Content-Security-Policy").find("script-src 'self'"), std::string::npos);
  EXPECT_EQ(page->body, std::string(FindWebAsset("index.html")->body));
  const std::string etag = page->get_header_value("ETag");
  ASSERT_FALSE(etag.empty());
  auto again = client_->Get("/", {{"If-None-Match", etag}});
  EXPECT_EQ(again->status, 304);
  EXPECT_TRUE(again->body.empty());
  EXPECT_EQ(client_->Get("/", {{"If-None-Match", "\"other\", W/" + etag}})->status, 304);
  EXPECT_EQ(client_->Get("/", {{"If-None-Match", "\"other\""}})->status, 200);

  auto js = client_->Get("/ui/app.js");
  EXPECT_EQ(js->status, 200);
  EXPECT_EQ(js->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(js->get_header_value("X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(client_->Get("/ui/pages/jobs.js")->status, 200);
  EXPECT_EQ(client_->Get("/ui/style.css")->get_header_value("Content-Type"), "text/css; charset=utf-8");
  auto missing = client_->Get("/ui/nope.js");
  EXPECT_EQ(missing->status, 404);
  EXPECT_NE(json::parse(missing->body)["error"].get<std::string>().find("nope.js"), std::string::npos);
  EXPECT_EQ(client_->Get("/ui/../service.h")->status, 404);
  EXPECT_EQ(client_->Get("/ui/pages/..%2f..%2fapp.js")->status, 404);
  EXPECT_EQ(client_->Post("/", "x", "text/plain")->status, 405);
  EXPECT_EQ(client_->Get("/v1/reports")->status, 404);  // no --reports
}

TEST_F(DashboardTest, TopologyMatchesNodes) {
  StartServer();
  ASSERT_EQ(h_.service().SubmitJob(R"({"name":"a","groups":[{"count":1,"gpus":6}]})").code, 201);
  h_.Quiesce();
  auto topo = client_->Get("/v1/topology");
  ASSERT_EQ(topo->status, 200) << topo->body;
  json t = json::parse(topo->body);
  json nodes = json::parse(client_->Get("/v1/nodes")->body)["nodes"];
  ASSERT_EQ(t["nodes"], 8);
  ASSERT_EQ(nodes.size(), 8u);
  EXPECT_EQ(t["gpus"], 64);
  EXPECT_EQ(t["gpus_used_milli"], 6000);
  EXPECT_EQ(t["gpu_types"], json::array({"H100"}));
  int64_t used = 0, covered = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    EXPECT_EQ(t["columns"]["name"][i], nodes[i]["name"]);
    EXPECT_EQ(t["columns"]["gpus_used_milli"][i], nodes[i]["gpus_used_milli"]);
    EXPECT_EQ(t["columns"]["gpus"][i], nodes[i]["gpus"]);
    EXPECT_EQ(t["columns"]["status"][i], 0);
    used += nodes[i]["gpus_used_milli"].get<int64_t>();
  }
  EXPECT_EQ(used, 6000);
  ASSERT_EQ(t["spines"].size(), 2u);
  for (const auto& s : t["spines"])
    for (const auto& l : s["leaves"]) {
      const int first = l["first"], count = l["count"];
      EXPECT_EQ(first, covered);
      for (int i = first; i < first + count; ++i) {
        EXPECT_EQ(nodes[i]["leaf"], l["name"]);
        EXPECT_EQ(nodes[i]["spine"], s["name"]);
      }
      covered += count;
    }
  EXPECT_EQ(covered, 8);
}

TEST_F(DashboardTest, ServesReportsFromTheFolder) {
  const auto dir = std::filesystem::temp_directory_path() / ("berth-reports-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "r.json") << R"([{"policy":"bestfit"}])";
  std::ofstream(dir / "r.html") << "<!doctype html><p>hi</p>";
  std::ofstream(dir / ".hidden.json") << "{}";
  std::ofstream(dir / "notes.txt") << "x";
  HttpOptions o;
  o.reports_dir = dir.string();
  StartServer(o);
  auto list = client_->Get("/v1/reports");
  ASSERT_EQ(list->status, 200) << list->body;
  json l = json::parse(list->body)["reports"];
  ASSERT_EQ(l.size(), 2u) << l;
  EXPECT_EQ(l[0]["name"], "r.html");
  EXPECT_EQ(l[1]["name"], "r.json");
  EXPECT_GT(l[1]["modified_at"].get<int64_t>(), 1'600'000'000);
  auto j = client_->Get("/v1/reports/r.json");
  EXPECT_EQ(j->status, 200);
  EXPECT_EQ(j->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(json::parse(j->body)[0]["policy"], "bestfit");
  auto html = client_->Get("/v1/reports/r.html");
  EXPECT_EQ(html->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(html->get_header_value("Content-Security-Policy").rfind("sandbox", 0), 0u);
  EXPECT_EQ(client_->Get("/v1/reports/notes.txt")->status, 404);
  EXPECT_EQ(client_->Get("/v1/reports/.hidden.json")->status, 404);
  EXPECT_EQ(client_->Get("/v1/reports/missing.json")->status, 404);
  EXPECT_EQ(client_->Get("/v1/reports/..%2fr.json")->status, 404);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace berth::server
