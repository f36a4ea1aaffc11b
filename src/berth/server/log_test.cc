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

TEST(LoggerTest, TsLevelMsgEventFirstThenFields) {
  const std::string line = Capture([](Logger& l) { l.Info("job_started", {{"job", 7}, {"a", 1}}); });
  EXPECT_EQ(line.rfind("{\"ts\":", 0), 0u) << line;
  const size_t level = line.find("\"level\":\"info\""), msg = line.find("\"msg\":\"job started\"");
  const size_t event = line.find("\"event\":\"job_started\""), a = line.find("\"a\":1");
  ASSERT_NE(msg, std::string::npos) << line;
  EXPECT_LT(level, msg);
  EXPECT_LT(msg, event);
  EXPECT_LT(event, a);
}

TEST(LoggerTest, LevelsAndTextFormat) {
  const std::string out = Capture([](Logger& l) {
    l.set_level(LogLevel::kWarn);
    l.Info("dropped", {});
    l.Warn("kept", {{"n", 1}});
    l.set_format(LogFormat::kText);
    l.set_level(LogLevel::kDebug);
    l.Debug("node_down", {{"node", "n-1"}, {"gpus", 8}});
  });
  EXPECT_EQ(out.find("dropped"), std::string::npos);
  EXPECT_NE(out.find("\"event\":\"kept\""), std::string::npos);
  EXPECT_NE(out.find("DEBUG node down  event=node_down gpus=8 node=n-1"), std::string::npos) << out;
  LogLevel lv;
  LogFormat fmt;
  EXPECT_TRUE(ParseLogLevel("warning", &lv));
  EXPECT_EQ(lv, LogLevel::kWarn);
  EXPECT_FALSE(ParseLogLevel("loud", &lv));
  EXPECT_TRUE(ParseLogFormat("text", &fmt));
  EXPECT_FALSE(ParseLogFormat("xml", &fmt));
}

}  // namespace
}  // namespace berth::server
