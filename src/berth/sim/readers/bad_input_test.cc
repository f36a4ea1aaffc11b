// Every reader against the same bad inputs: a truncated line, a negative GPU
// count, an unknown column, a non-numeric field, an empty file and a file
// without data lines. A bad line is an error naming file and line, or, with
// skip_bad_lines, a counted skip; whole-file problems are always errors.
#include <gtest/gtest.h>

#include "berth/common/rng.h"
#include "berth/sim/readers/reader_test_util.h"
#include "berth/sim/readers/readers.h"

namespace berth::sim {
namespace {

struct BadLine {
  std::string what;    // for test messages
  std::string line;    // the bad data line
  std::string reason;  // ReadReport reason it is counted under
};

struct FormatCase {
  std::string format;
  std::string file_name;
  std::string header;                  // "" for formats without a header line
  std::vector<std::string> good;       // two good data lines
  std::vector<BadLine> bad;            // truncated, negative GPUs, non-numeric, unknown column (line-level)
  std::string header_unknown_column;   // a header with an unknown column; "" if the format has no header
};

std::ostream& operator<<(std::ostream& os, const FormatCase& c) { return os << c.format; }

const std::string kGavelGood1 =
    "ResNet-50 (batch size 64)\tpython3 main.py -a resnet50\timage_classification/imagenet\t--num_minibatches\t1\t"
    "2931\t1\t1\t-1.000000\t0";
const std::string kGavelGood2 =
    "LM (batch size 20)\tpython3 main.py --cuda\tlanguage_modeling\t--steps\t1\t500\t4\t5\t-1.000000\t60.5";

std::vector<FormatCase> Cases() {
  return {
      {"openb", "openb_pod_list_x.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli",
       {"p1,1000,1024,1,500", "p2,2000,2048,2,1000"},
       {{"truncated", "p3,1000,1024", "wrong field count"},
        {"negative GPUs", "p3,1000,1024,-1,0", "value out of range"},
        {"non-numeric", "p3,lots,1024,1,500", "not a number"}},
       "name,cpu_milli,memory_mib,num_gpu,gpu_milli,colour"},
      {"philly", "philly.csv", "timestamp,duration,num_gpus,gpu_time,cluster",
       {"2017-10-01 00:00:00,60.0,1,60.0,vc1", "2017-10-01 00:01:00,120.0,16,1920.0,vc2"},
       {{"truncated", "2017-10-01 00:02:00,60.0,1", "wrong field count"},
        {"negative GPUs", "2017-10-01 00:02:00,60.0,-2,-120.0,vc1", "value out of range"},
        {"non-numeric", "2017-10-01 00:02:00,sixty,1,60.0,vc1", "not a number"}},
       "timestamp,duration,num_gpus,gpu_time,cluster,user"},
      {"tiresias", "60_job.csv", "job_id,num_gpu,submit_time,iterations,model_name,duration,interval",
       {"0,1,0,606,vgg19,164,30", "1,8,30,133,vgg11,147,23"},
       {{"truncated", "2,2,53,157", "wrong field count"},
        {"negative GPUs", "2,-4,53,157,inception4,127,26", "value out of range"},
        {"non-numeric", "2,2,soon,157,inception4,127,26", "not a number"}},
       "job_id,num_gpu,submit_time,iterations,model_name,duration,interval,user"},
      {"gavel", "x.trace", "",
       {kGavelGood1, kGavelGood2},
       {{"truncated", "A3C\tpython3 main.py\trl\t--steps\t0\t1000", "wrong field count"},
        {"negative GPUs", "A3C\tpython3 main.py\trl\t--steps\t0\t1000\t-2\t1\t-1\t0", "value out of range"},
        {"non-numeric", "A3C\tpython3 main.py\trl\t--steps\t0\tmany\t1\t1\t-1\t0", "not a number"},
        {"unknown column", "A3C\tpython3 main.py\trl\t--steps\t0\t1000\t1\t1\t-1\t0\textra", "wrong field count"}},
       ""},
      {"native", "x.jsonl", "",
       {R"({"name":"a","submit_time_s":0,"groups":[{"count":1,"gpus":1}]})",
        R"({"name":"b","submit_time_s":5,"duration_s":60,"groups":[{"count":2,"gpus":8}]})"},
       {{"truncated", R"({"name":"c","groups":[{"count":1)", "bad json"},
        {"negative GPUs", R"({"name":"c","groups":[{"gpus":-1}]})", "value out of range"},
        {"non-numeric", R"({"name":"c","groups":[{"gpus":"two"}]})", "wrong type"},
        {"unknown column", R"({"name":"c","colour":"red","groups":[{"gpus":1}]})", "unknown key"}},
       ""},
  };
}

class BadInput : public ::testing::TestWithParam<FormatCase> {
 protected:
  // Writes the header (if any) and `lines`; returns the path.
  std::string Write(const std::vector<std::string>& lines, const std::string& header) {
    std::string text = header.empty() ? "" : header + "\n";
    for (const auto& l : lines) text += l + "\n";
    return WriteFile(dir_, GetParam().file_name, text);
  }
  std::string Write(const std::vector<std::string>& lines) { return Write(lines, GetParam().header); }
  StatusOr<Trace> Read(const std::string& path, bool skip) {
    ReadOptions o;
    o.skip_bad_lines = skip;
    return ReadTrace(path, GetParam().format, o);
  }
  // The line number of the i-th data line (0-based) as written by Write.
  int LineOf(int i) const { return i + 1 + (GetParam().header.empty() ? 0 : 1); }

  std::string dir_ = TestDir();
};

TEST_P(BadInput, GoodLinesRead) {
  const auto& c = GetParam();
  auto t = Read(Write({c.good[0], "", c.good[1]}), false);  // a blank line is not a job
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->report.lines, 2);
  EXPECT_EQ(t->report.jobs, 2);
  EXPECT_EQ(t->report.skipped, 0);
  EXPECT_EQ(t->format, c.format);
  EXPECT_EQ(t->jobs[1].id.value(), 1);
}

TEST_P(BadInput, BadLineIsAnErrorNamingFileAndLine) {
  const auto& c = GetParam();
  for (const auto& bad : c.bad) {
    SCOPED_TRACE(bad.what);
    const std::string path = Write({c.good[0], bad.line, c.good[1]});
    auto t = Read(path, false);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    const std::string where = path + ":" + std::to_string(LineOf(1)) + ": ";
    EXPECT_EQ(t.status().message().rfind(where, 0), 0u) << t.status().message();
  }
}

TEST_P(BadInput, BadLineIsSkippedAndCountedByReason) {
  const auto& c = GetParam();
  for (const auto& bad : c.bad) {
    SCOPED_TRACE(bad.what);
    const std::string path = Write({c.good[0], bad.line, c.good[1]});
    auto t = Read(path, true);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(t->jobs.size(), 2u);
    EXPECT_EQ(t->jobs[1].id.value(), 1);  // ids stay dense
    EXPECT_EQ(t->report.lines, 3);
    EXPECT_EQ(t->report.skipped, 1);
    ASSERT_EQ(t->report.skipped_by_reason.count(bad.reason), 1u) << t->report.Summary();
    EXPECT_EQ(t->report.skipped_by_reason.at(bad.reason), 1);
    ASSERT_EQ(t->report.examples.size(), 1u);
    EXPECT_EQ(t->report.examples[0].rfind(path + ":" + std::to_string(LineOf(1)) + ": ", 0), 0u);
    EXPECT_NE(t->report.Summary().find(bad.reason), std::string::npos);
    EXPECT_NE(t->report.SkipDetails().find(t->report.examples[0]), std::string::npos);
  }
}

TEST_P(BadInput, UnknownColumnInHeaderStopsEvenWhenSkipping) {
  const auto& c = GetParam();
  if (c.header_unknown_column.empty()) {  // no header: an extra column is a bad line, tested with the others
    bool has_case = false;
    for (const auto& bad : c.bad) has_case = has_case || bad.what == "unknown column";
    EXPECT_TRUE(has_case);
    return;
  }
  const std::string path = Write({c.good[0]}, c.header_unknown_column);
  for (bool skip : {false, true}) {
    auto t = Read(path, skip);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().message().rfind(path + ":1: unknown column", 0), 0u) << t.status().message();
  }
}

TEST_P(BadInput, EmptyFileIsAnError) {
  const std::string path = WriteFile(dir_, GetParam().file_name, "");
  for (bool skip : {false, true}) {
    auto t = Read(path, skip);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().message().rfind(path + ": ", 0), 0u) << t.status().message();
  }
}

TEST_P(BadInput, FileWithoutDataLinesIsAnError) {
  // A header-only file, or blank lines only for formats without a header.
  const std::string path = Write({"", " "});
  for (bool skip : {false, true}) {
    auto t = Read(path, skip);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().message().rfind(path + ": no jobs in the file", 0), 0u) << t.status().message();
  }
}

TEST_P(BadInput, EveryLineBadIsAnErrorWhenSkipping) {
  const auto& c = GetParam();
  std::vector<std::string> lines;
  for (const auto& bad : c.bad) lines.push_back(bad.line);
  const std::string path = Write(lines);
  auto t = Read(path, true);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("no jobs left (" + std::to_string(c.bad.size()) + " bad line(s) skipped)"),
            std::string::npos)
      << t.status().message();
}

TEST_P(BadInput, MissingFileIsNotFound) {
  auto t = Read(dir_ + "/" + GetParam().file_name, false);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kNotFound);
}

TEST_P(BadInput, MaxJobsStopsEarly) {
  const auto& c = GetParam();
  ReadOptions o;
  o.max_jobs = 1;
  auto t = ReadTrace(Write({c.good[0], c.good[1]}), c.format, o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->jobs.size(), 1u);
}

// Mutated good lines (characters dropped, doubled, replaced by separators,
// signs, quotes, braces, high bytes; lines cut short) never crash a reader:
// each line is a job or a counted skip, and without skipping the error names
// the file and a line.
TEST_P(BadInput, MutatedLinesAreJobsOrCountedSkips) {
  const auto& c = GetParam();
  const std::string alphabet = ",\t-.0123456789e\"{}[]:x \xff";
  Rng rng(7);
  std::vector<std::string> lines;
  for (int i = 0; i < 300; ++i) {
    std::string l = c.good[rng.Uniform(2)];
    const int edits = 1 + static_cast<int>(rng.Uniform(3));
    for (int e = 0; e < edits && !l.empty(); ++e) {
      const size_t at = rng.Uniform(l.size());
      switch (rng.Uniform(4)) {
        case 0: l.erase(at, 1); break;
        case 1: l.insert(at, 1, l[at]); break;
        case 2: l[at] = alphabet[rng.Uniform(alphabet.size())]; break;
        default: l.resize(at); break;
      }
    }
    if (l.find_first_not_of(" \t") != std::string::npos) lines.push_back(l);
  }
  const std::string path = Write(lines);
  auto t = Read(path, true);
  if (t.ok()) {
    EXPECT_EQ(t->report.lines, static_cast<int64_t>(lines.size()));
    EXPECT_EQ(t->report.jobs + t->report.skipped, t->report.lines);
    EXPECT_GT(t->report.skipped, 0);
  } else {  // every line may have gone bad; the error must still say where
    EXPECT_EQ(t.status().message().rfind(path + ":", 0), 0u) << t.status().message();
  }
  auto strict = Read(path, false);
  if (!strict.ok()) {
    EXPECT_EQ(strict.status().message().rfind(path + ":", 0), 0u) << strict.status().message();
  }
}

INSTANTIATE_TEST_SUITE_P(AllFormats, BadInput, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return info.param.format; });

TEST(ReadTrace, RefusesUnknownFormatFiltersElsewhereAndZeroMaxJobs) {
  const std::string dir = TestDir();
  const std::string path = WriteFile(dir, "60_job.csv", "job_id,num_gpu,submit_time,duration\n0,1,0,10\n");
  EXPECT_FALSE(ReadTrace(path, "yaml", {}).ok());
  ReadOptions o;
  o.tenants = {"vc1"};
  auto t = ReadTrace(path, "", o);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("philly"), std::string::npos);
  ReadOptions z;
  z.max_jobs = 0;
  EXPECT_FALSE(ReadTrace(path, "", z).ok());
  EXPECT_TRUE(ReadTrace(path, "", {}).ok());
}

TEST(ReadTrace, GuessesFormatsFromFileNames) {
  EXPECT_EQ(GuessTraceFormat("a/openb_pod_list_default.csv"), "openb");
  EXPECT_EQ(GuessTraceFormat("../philly.csv"), "philly");
  EXPECT_EQ(GuessTraceFormat("msr/seed=0/6214e9.trace"), "gavel");
  EXPECT_EQ(GuessTraceFormat("jobs.jsonl"), "native");
  EXPECT_EQ(GuessTraceFormat("60_job.csv"), "tiresias");
  EXPECT_EQ(GuessTraceFormat("jobs.csv"), "");
}

}  // namespace
}  // namespace berth::sim
