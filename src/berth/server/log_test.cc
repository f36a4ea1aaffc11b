// Logger: lines stay bounded whatever a field holds.
#include "berth/server/log.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

namespace berth::server {
namespace {

std::string Capture(const std::function<void(Logger&)>& write) {
  char* buf = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&buf, &size);
  {
    Logger log(f);
    write(log);
  }
  std::fclose(f);
  std::string out(buf, size);
  std::free(buf);
  return out;
}

TEST(LoggerTest, SmallLinesAreWhole) {
  const std::string line = Capture([](Logger& l) { l.Info("job_accepted", {{"job", 7}, {"name", "train"}}); });
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["event"], "job_accepted");
  EXPECT_EQ(j["name"], "train");
  EXPECT_FALSE(j.contains("truncated"));
}

TEST(LoggerTest, LargeFieldsAreCut) {
  nlohmann::json nodes = nlohmann::json::array();
  for (int i = 0; i < 200'000; ++i) nodes.push_back("node-" + std::to_string(i));
  const std::string name(10'000'000, 'x');
  const std::string line =
      Capture([&](Logger& l) { l.Info("job_started", {{"job", 7}, {"nodes", nodes}, {"name", name}}); });
  EXPECT_LE(line.size(), Logger::kMaxLineBytes + 1);
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["job"], 7);
  EXPECT_EQ(j["truncated"], true);
  EXPECT_EQ(j["nodes_count"], 200'000);
  ASSERT_TRUE(j["nodes"].is_array());
  EXPECT_GT(j["nodes"].size(), 0u);
  EXPECT_EQ(j["nodes"][0], "node-0");
  EXPECT_LE(j["name"].get<std::string>().size(), Logger::kMaxFieldBytes);
}

}  // namespace
}  // namespace berth::server
