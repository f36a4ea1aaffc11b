// The progress bar's text, and its silence for short runs.
#include "progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace berth::apps {
namespace {

std::string ReadAll(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  char buf[256];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  return s;
}

TEST(ProgressBar, Line) {
  EXPECT_EQ(ProgressBar::Line(2, 6, 4.1, 30), "[##########....................]  2/6  33%  elapsed 4.1s  eta 8.2s");
  EXPECT_EQ(ProgressBar::Line(6, 6, 12.0, 10), "[##########]  6/6  100%  elapsed 12.0s");
  EXPECT_EQ(ProgressBar::Line(0, 3, 1.0, 4), "[....]  0/3  0%  elapsed 1.0s");
  EXPECT_EQ(ProgressBar::Line(9, 3, 75.0, 4), "[####]  9/3  100%  elapsed 1m15s");  // clamped
  // Unknown total: a moving marker, no count.
  const std::string unknown = ProgressBar::Line(5, 0, 0.35, 10);
  EXPECT_EQ(unknown, "[...#......]  elapsed 0.3s");
}

TEST(ProgressBar, ShortRunPrintsNothing) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressBar::Options o;
    o.out = f;
    o.delay = std::chrono::hours(1);
    ProgressBar bar(o);
    bar.Update(1, 2);
    bar.Update(2, 2);
    bar.Finish();
    bar.Finish();  // idempotent
  }
  EXPECT_EQ(ReadAll(f), "");
  std::fclose(f);
}

TEST(ProgressBar, WhenShownEndsWithNewline) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressBar::Options o;
    o.out = f;
    o.delay = std::chrono::milliseconds(0);
    ProgressBar bar(o);
    bar.Update(1, 1);
  }  // the destructor finishes
  const std::string s = ReadAll(f);
  if (!s.empty()) {  // whether the ticker drew before Finish() is a race; the ending is not
    EXPECT_EQ(s.front(), '\r');
    EXPECT_EQ(s.back(), '\n');
    EXPECT_NE(s.find("1/1  100%"), std::string::npos) << s;
  }
  std::fclose(f);
}

TEST(ProgressBar, QuietWins) { EXPECT_FALSE(ShouldShowProgress(true, true)); }

}  // namespace
}  // namespace berth::apps
