// The direct reading of plain native lines against the JSON document parser
// (ReadOptions::full_json): the same jobs, and for every line it declines the
// same errors, line by line and over whole traces.
#include "berth/sim/readers/native_line.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "berth/common/rng.h"
#include "berth/sim/readers/native_writer.h"
#include "berth/sim/readers/reader_test_util.h"
#include "berth/sim/readers/readers.h"
#include "berth/testing/paths.h"

namespace berth::sim {
namespace {

// What reading `path` gives: every job as a native line, or the error (with
// `skip_bad`, the bad lines' reasons and counts first).
std::string ReadAs(const std::string& path, bool full_json, bool skip_bad = false) {
  ReadOptions o;
  o.full_json = full_json;
  o.skip_bad_lines = skip_bad;
  auto t = ReadTrace(path, "native", o);
  if (!t.ok()) return "error: " + t.status().ToString();
  std::string out;
  for (const auto& [reason, n] : t->report.skipped_by_reason) out += reason + " x" + std::to_string(n) + "\n";
  for (const auto& j : t->jobs) {
    auto line = NativeJobLine(j);
    out += (line.ok() ? *line : "unwritable: " + line.status().ToString()) + "\n";
  }
  return out;
}

bool Direct(const std::string& line) {
  job::JobSpec j;
  return ParsePlainJobLine(line, j);
}

TEST(PlainJobLine, GivesTheDocumentParsersJobOrDeclines) {
  const std::vector<std::string> lines = {
      R"({"name":"a","tenant":"t","submit_time_s":154.105724,"duration_s":2240194,"groups":[{"name":"main","count":1,"gpus":8}]})",
      R"({"name":"a","groups":[{"gpus":1}]})",
      R"( { "name" : "a" , "queue":"q/r", "priority" : -7 , "groups" : [ { "count" : 3 , "min_count":2, "gpus" : 2 } ] } )",
      "{\t\"name\":\"a\",\r\"groups\":[{\"gpus\":1}]}",
      R"({"name":"a","groups":[{"gpus":1,"milli_per_gpu":250},{"name":"cpu","count":4,"cpu_milli":4000,"memory_mib":8192}]})",
      R"({"name":"a","submit_time_s":1e3,"duration_s":1.5E+2,"groups":[{"gpus":1}]})",
      R"({"name":"a","submit_time_s":0.1,"duration_s":-0,"groups":[{"gpus":1}]})",
      R"({"name":"a","submit_time_s":123456789.123456789,"groups":[{"gpus":1}]})",
      R"({"name":"a","submit_time_s":99999999999999999999,"groups":[{"gpus":1}]})",
      R"({"name":"a","submit_time_s":100000000000,"groups":[{"gpus":1}]})",
      R"({"name":"a","submit_time_s":100000000000.5,"groups":[{"gpus":1}]})",
      R"({"name":"a","submit_time_s":-1,"groups":[{"gpus":1}]})",
      R"({"name":"a","submit_time_s":01,"groups":[{"gpus":1}]})",
      R"({"name":"a","submit_time_s":1.,"groups":[{"gpus":1}]})",
      R"({"name":"a","submit_time_s":.5,"groups":[{"gpus":1}]})",
      R"({"name":"a","submit_time_s":1e,"groups":[{"gpus":1}]})",
      R"({"name":"a","submit_time_s":"5","groups":[{"gpus":1}]})",
      R"({"name":"a","priority":2147483647,"groups":[{"gpus":1}]})",
      R"({"name":"a","priority":-2147483648,"groups":[{"gpus":1}]})",
      R"({"name":"a","priority":1.0,"groups":[{"gpus":1}]})",
      R"({"name":"a","priority":1e2,"groups":[{"gpus":1}]})",
      R"({"name":"a","groups":[{"gpus":99999999999999999999}]})",
      R"({"name":"a","groups":[{"cpu_milli":9223372036854775807}]})",
      R"({"name":"a","groups":[{"cpu_milli":9223372036854775808}]})",
      R"({"name":"a","groups":[{"count":2,"min_count":3,"gpus":1}]})",
      R"({"name":"a","groups":[{"gpus":2,"milli_per_gpu":250}]})",
      R"({"name":"a","groups":[{"gpus":1,"milli_per_gpu":1001}]})",
      R"({"name":"a","groups":[{"count":0}]})",
      R"({"name":"a","name":"b","groups":[{"gpus":1}]})",
      R"({"name":"a","groups":[{"gpus":1,"gpus":2}]})",
      R"({"name":"a","groups":[{"gpus":1}],"colour":"red"})",
      R"({"name":"a","groups":[{"gpus":1,"gpu_types":["H100"]}]})",
      R"({"name":"\u0041","groups":[{"gpus":1}]})",
      R"({"name":"a\"b","groups":[{"gpus":1}]})",
      "{\"name\":\"caf\xc3\xa9\",\"groups\":[{\"gpus\":1}]}",
      "{\"name\":\"bad\xff\",\"groups\":[{\"gpus\":1}]}",
      "{\"name\":\"tab\there\",\"groups\":[{\"gpus\":1}]}",
      R"({"name":"","groups":[{"gpus":1}]})",
      R"({"groups":[{"gpus":1}]})",
      R"({"name":"a"})",
      R"({"name":"a","groups":[]})",
      R"({"name":"a","groups":[{}]})",
      R"({"name":"a","groups":{}})",
      R"({"name":"a","groups":[{"gpus":1}]} x)",
      R"({"name":"a","groups":[{"gpus":1}],})",
      R"({"name":"a","groups":[{"gpus":1},]})",
      R"({"name":"a","groups":[{"gpus":1}])",
      R"({"name":"a","groups":[{"gpus":1}]}})",
      R"({})",
      R"([1,2])",
      R"("name")",
      R"({"name":"a","replicas":2,"groups":[{"gpus":1}]})",
      R"({"name":"w","stages":[{"name":"s","groups":[{"gpus":1}]}]})",
      R"({"name":"a","best_effort":true,"groups":[{"gpus":1}]})",
  };
  const std::string dir = TestDir();
  std::vector<int> direct;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string path = WriteFile(dir, "l" + std::to_string(i) + ".jsonl", lines[i] + "\n");
    EXPECT_EQ(ReadAs(path, false), ReadAs(path, true)) << lines[i];
    if (Direct(lines[i])) direct.push_back(static_cast<int>(i));
  }
  // The plain ones are read directly: the first eight, a submit time of
  // exactly 1e11 s (the largest), the largest priority and cpu_milli. Every
  // other line is the document parser's, good (escapes, UTF-8, other keys) or bad.
  EXPECT_EQ(direct, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 9, 17, 22}));
}

// Plain lines changed at random (a character inserted, deleted or replaced by
// one that matters to JSON or to a value), seeded: each either stays plain and
// gives the document parser's job, or is the document parser's to judge.
TEST(PlainJobLine, MutatedLinesReadTheSameEitherWay) {
  const std::vector<std::string> seeds = {
      R"({"name":"philly-1-3","tenant":"7f04ca","submit_time_s":154.105724,"duration_s":2240194,"groups":[{"name":"main","count":1,"gpus":8}]})",
      R"({"name":"b","queue":"q/r","priority":3,"groups":[{"count":4,"min_count":2,"gpus":1,"milli_per_gpu":500},{"name":"ps","cpu_milli":4000,"memory_mib":8192}]})",
  };
  const std::string alphabet = R"({}[]:,"\ -+.eE0123456789axnt)";
  Rng rng(42);
  const std::string dir = TestDir();
  std::string all;
  int checked = 0, direct_lines = 0, declined = 0;
  for (int k = 0; k < 3000; ++k) {
    std::string line = seeds[rng.Uniform(seeds.size())];
    const int edits = 1 + static_cast<int>(rng.Uniform(3));
    for (int e = 0; e < edits && !line.empty(); ++e) {
      const size_t at = rng.Uniform(line.size());
      const char ch = alphabet[rng.Uniform(alphabet.size())];
      switch (rng.Uniform(3)) {
        case 0: line.insert(line.begin() + static_cast<std::ptrdiff_t>(at), ch); break;
        case 1: line.erase(at, 1); break;
        default: line[at] = ch;
      }
    }
    if (line.find('\n') != std::string::npos) continue;
    all += line + "\n";
    (Direct(line) ? direct_lines : declined) += 1;
    if (k < 400) {  // one line alone: the same job, or the same error word for word
      const std::string path = WriteFile(dir, "m.jsonl", line + "\n");
      EXPECT_EQ(ReadAs(path, false), ReadAs(path, true)) << line;
      ++checked;
    }
  }
  // All in one file, bad lines skipped: the same jobs and the same reasons.
  const std::string path = WriteFile(dir, "all.jsonl", all);
  const std::string direct = ReadAs(path, false, true);
  EXPECT_EQ(direct, ReadAs(path, true, true));
  EXPECT_EQ(checked, 400);
  // Both kinds are many (216 of the 3,000 stay plain with this seed).
  EXPECT_GT(direct_lines, 100);
  EXPECT_GT(declined, 1000);
}

TEST(PlainJobLine, WholeTracesReadTheSameEitherWay) {
  // The shipped native examples, and a shipped trace converted to native.
  const std::string dir = TestDir();
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(testing::SourceDir() + "/examples/traces"))
    if (e.path().extension() == ".jsonl") paths.push_back(e.path().string());
  auto philly = ReadTrace(testing::DataDir() + "/pollux-philly/philly.csv", "", {});
  ASSERT_TRUE(philly.ok()) << philly.status().ToString();
  ASSERT_TRUE(WriteNativeTrace(philly->jobs, dir + "/philly.jsonl").ok());
  paths.push_back(dir + "/philly.jsonl");
  for (const auto& p : paths) {
    const std::string direct = ReadAs(p, false);
    EXPECT_EQ(direct, ReadAs(p, true)) << p;
    EXPECT_EQ(direct.rfind("error", 0), std::string::npos) << p << ": " << direct.substr(0, 200);
  }
}

}  // namespace
}  // namespace berth::sim
