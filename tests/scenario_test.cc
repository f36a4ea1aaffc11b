// Runs every tests/scenarios/*.scn as one test case, and tests the scenario
// runner itself (that failures name the file and line, that unknown commands
// and arguments are rejected).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "berth/testing/paths.h"
#include "berth/testing/scenario.h"

namespace berth::testing {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> ScenarioFiles() {
  std::vector<std::string> files;
  const fs::path dir = fs::path(SourceDir()) / "tests" / "scenarios";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && e.path().extension() == ".scn") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

class Scenarios : public ::testing::TestWithParam<std::string> {};

TEST_P(Scenarios, Pass) {
  ScenarioRunner runner;
  std::ostringstream shown;
  runner.set_output(&shown);
  Status s = runner.RunFile(GetParam());
  EXPECT_TRUE(s.ok()) << s.message() << (shown.str().empty() ? "" : "\n" + shown.str());
}

INSTANTIATE_TEST_SUITE_P(Files, Scenarios, ::testing::ValuesIn(ScenarioFiles()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = fs::path(info.param).stem().string();
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

TEST(ScenarioFiles, ThereAreSome) { EXPECT_GE(ScenarioFiles().size(), 5u); }

// --- the runner itself ---

Status RunText(const std::string& text) {
  ScenarioRunner runner;
  std::ostringstream sink;
  runner.set_output(&sink);
  return runner.Run(text, "t.scn");
}

void ExpectFailure(const std::string& text, const std::string& message) {
  Status s = RunText(text);
  ASSERT_FALSE(s.ok()) << text;
  EXPECT_NE(s.message().find(message), std::string::npos) << "got: " << s.message();
}

TEST(ScenarioRunner, AFailedExpectationNamesFileLineAndWhy) {
  ExpectFailure("cluster 2x8:H100\n\nsubmit job=x gpus=8\nsubmit job=a gpus=8 count=2\nschedule\nexpect running a\n",
                "t.scn:6: expect running a: a is pending (last verdict: unschedulable");
  ExpectFailure("cluster 2x8:H100\nsubmit job=a gpus=8\nschedule\nexpect placed a.0 node-1\n",
                "t.scn:4: expect placed a.0 node-1: a.0 is on node-0, not node-1");
  ExpectFailure("cluster 2x8:H100\nsubmit job=a gpus=3\nschedule\nexpect free-gpus 12\n",
                "free GPUs is 13, expected 12");
  ExpectFailure("cluster 2x8:H100\nsubmit job=x gpus=8\nsubmit job=a gpus=8 count=2\nschedule\nexpect pending a reason~\"nothing like this\"\n",
                "does not contain \"nothing like this\"");
}

TEST(ScenarioRunner, RejectsWhatItDoesNotKnow) {
  ExpectFailure("cluster 1x8:H100\nfrobnicate\n", "t.scn:2: frobnicate: unknown command 'frobnicate'");
  ExpectFailure("cluster 1x8:H100\nexpect happiness\n", "unknown expectation 'happiness'");
  ExpectFailure("cluster 1x8:H100\nsubmit job=a gpus=1 colour=red\n", "unknown argument 'colour'");
  ExpectFailure("cluster 1x8:H100\nschedule now\n", "usage: schedule");
  ExpectFailure("cluster 1x8:H100\nsubmit job=a\nsubmit job=a\n", "job 'a' already submitted");
  ExpectFailure("submit job=a gpus=1\n", "no cluster yet");
  ExpectFailure("cluster 1x8:H100\npolicy nosuch\n", "nosuch");
  ExpectFailure("cluster 1x8:H100\nexpect running a \"unterminated\n", "unterminated quote");
  ExpectFailure("cluster 1x8:H100\nsubmit job=a\nschedule\nexpect running a wobble=1\n", "unknown argument 'wobble'");
  ExpectFailure("cluster nosuch.yaml\n", "nosuch.yaml");
}

TEST(ScenarioRunner, ExpectErrorInvertsACommand) {
  EXPECT_TRUE(RunText("cluster 1x8:H100\nexpect-error ~\"count: must be positive\" submit job=a gpus=1 count=0\n").ok());
  ExpectFailure("cluster 1x8:H100\nexpect-error ~\"x\" submit job=a gpus=1\n", "the command succeeded");
  ExpectFailure("cluster 1x8:H100\nexpect-error ~\"x\" submit job=a gpus=-1\n", "does not contain \"x\"");
  // A rejected submit leaves no job behind under that name.
  EXPECT_TRUE(RunText("cluster 1x8:H100\nexpect-error ~gpus submit job=a gpus=-1\nsubmit job=a gpus=1\nschedule\n"
                  "expect running a\n")
                  .ok());
}

TEST(ScenarioRunner, CommentsQuotesAndTimes) {
  Status s = RunText("# a comment line\n"
                 "cluster 1x8:H100   # trailing comment\n"
                 "time 90s\n"
                 "advance 1.5m\n"
                 "submit job=a gpus=8 duration=2h\n"
                 "submit job=b gpus=8 cpu=0.5 mem=1.5\n"
                 "schedule\n"
                 "expect running a\n"
                 "expect pending b reason~\"0 free\"\n"
                 "show\n");
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(*ParseScenarioTime("250ms"), 250'000);
  EXPECT_EQ(*ParseScenarioTime("2h"), 7200 * kUsPerSecond);
  EXPECT_EQ(*ParseScenarioTime("1.5d"), 129600 * kUsPerSecond);
  EXPECT_EQ(*ParseScenarioTime("7"), 7 * kUsPerSecond);
  EXPECT_FALSE(ParseScenarioTime("soon").ok());
  auto t = TokenizeScenarioLine("expect pending c reason~\"not \\\"yet\\\" # no comment\" # comment");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, (std::vector<std::string>{"expect", "pending", "c", "reason~not \"yet\" # no comment"}));
}

TEST(ScenarioRunner, ShowPrintsJobsAndNodes) {
  ScenarioRunner runner;
  std::ostringstream out;
  runner.set_output(&out);
  Status s = runner.Run("cluster 2x2:T4\nsubmit job=a gpus=1 milli=500\nsubmit job=b gpus=3\nschedule\n"
                        "node-down node-1\nshow\n", "t.scn");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_NE(out.str().find("job a: running a.0@node-0"), std::string::npos);
  EXPECT_NE(out.str().find("job b: failed (task 0 of group 'main': no node can ever hold"), std::string::npos);
  EXPECT_NE(out.str().find("node node-0: gpus 500 1000"), std::string::npos);
  EXPECT_NE(out.str().find("node node-1 (down)"), std::string::npos);
}

TEST(ScenarioRunner, ExtraCommandsCanBeAdded) {
  ScenarioRunner runner;
  int calls = 0;
  runner.AddCommand("tick", [&calls](ScenarioRunner&, ScenarioArgs& a) -> Status {
    calls += static_cast<int>(a.words().size());
    return Status::Ok();
  });
  runner.AddExpectation("ticks", [&calls](ScenarioRunner&, ScenarioArgs& a) -> Status {
    auto n = a.GetInt("n");
    if (!n.ok()) return n.status();
    return **n == calls ? Status::Ok() : FailedPrecondition("ticks differ");
  });
  EXPECT_TRUE(runner.Run("tick x y\ntick z\nexpect ticks n=3\n", "t.scn").ok());
}

}  // namespace
}  // namespace berth::testing
