// Read reports: counting skipped lines and summarising them.
#include "berth/sim/trace.h"

#include <gtest/gtest.h>

namespace berth::sim {
namespace {

TEST(ReadReport, SummaryAndSkipDetails) {
  ReadReport r;
  r.lines = 10;
  r.jobs = 7;
  EXPECT_EQ(r.Summary(), "7 jobs from 10 lines");
  EXPECT_EQ(r.SkipDetails(), "");
  for (int i = 0; i < 7; ++i) r.Skip(i < 2 ? "not a number" : "wrong field count", "f.csv:" + std::to_string(i + 2) + ": bad");
  r.filtered = 1;
  EXPECT_EQ(r.Summary(), "7 jobs from 10 lines; 1 left out by filters; skipped 7 bad line(s): not a number 2; wrong field count 5");
  EXPECT_EQ(r.examples.size(), 5u);  // only the first few are kept
  EXPECT_EQ(r.SkipDetails(),
            "skipped 7 bad line(s) of 10:\n  2 not a number\n  5 wrong field count\nfirst errors:\n"
            "  f.csv:2: bad\n  f.csv:3: bad\n  f.csv:4: bad\n  f.csv:5: bad\n  f.csv:6: bad\n");
}

TEST(HandleBadLine, ErrorOrCount) {
  ReadReport r;
  ReadOptions strict;
  EXPECT_FALSE(HandleBadLine(strict, r, InvalidArgument("f:2: x"), "bad value").ok());
  EXPECT_EQ(r.skipped, 0);
  ReadOptions skip;
  skip.skip_bad_lines = true;
  EXPECT_TRUE(HandleBadLine(skip, r, InvalidArgument("f:2: x"), "bad value").ok());
  EXPECT_EQ(r.skipped_by_reason.at("bad value"), 1);
}

}  // namespace
}  // namespace berth::sim
