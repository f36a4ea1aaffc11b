// Tests of the virtual node agents: completions in end order, kills and
// relaunches, crashed nodes, and that finding the runs due looks only at those
// that end, however many run.
#include "berth/server/virtual_nodes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "berth/server/service_test_util.h"

namespace berth::server {
namespace {
using testing::WaitFor;

class RecordingSink : public VirtualNodes::Sink {
 public:
  void Heartbeats(const std::vector<int32_t>& nodes) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++beats_;
    last_beat_ = nodes;
  }
  void JobDone(int64_t job, int32_t generation) override {
    std::lock_guard<std::mutex> lock(mu_);
    done_.emplace_back(job, generation);
  }
  int beats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return beats_;
  }
  std::vector<int32_t> last_beat() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_beat_;
  }
  std::vector<std::pair<int64_t, int32_t>> done() const {
    std::lock_guard<std::mutex> lock(mu_);
    return done_;
  }

 private:
  mutable std::mutex mu_;
  int beats_ = 0;
  std::vector<int32_t> last_beat_;
  std::vector<std::pair<int64_t, int32_t>> done_;
};

constexpr TimeUs kHour = 3'600'000'000;

TEST(VirtualNodesTest, FindingDueRunsLooksOnlyAtThoseThatEnd) {
  RecordingSink sink;
  VirtualNodes v(4, 5'000, sink);
  v.Start();
  // 60,000 runs on nodes 0-2 that do not end during the test: half never, half
  // in an hour.
  for (int64_t j = 0; j < 60'000; ++j) v.Launch(1'000'000 + j, 1, {static_cast<int32_t>(j % 3)}, j % 2 ? kHour : -1);
  // Killed and relaunched runs leave nothing behind.
  v.Launch(7, 1, {0}, kHour);
  v.Kill(7);
  v.Launch(8, 1, {1}, kHour);
  v.Launch(8, 2, {1}, 0);  // the second start replaces the first
  v.Crash(3);
  v.Launch(9, 1, {3}, 0);  // on a crashed node: lost at once, never reported
  v.Launch(10, 1, {2}, 0);
  ASSERT_TRUE(WaitFor([&] { return sink.done().size() >= 2; }));
  const int beats = sink.beats();
  ASSERT_TRUE(WaitFor([&] { return sink.beats() >= beats + 3; }));  // several more wakes
  std::vector<std::pair<int64_t, int32_t>> done = sink.done();
  std::sort(done.begin(), done.end());
  EXPECT_EQ(done, (std::vector<std::pair<int64_t, int32_t>>{{8, 2}, {10, 1}}));
  EXPECT_EQ(v.runs_examined(), 2u);  // jobs 8 and 10 only, not the 60,000 at every wake
  EXPECT_EQ(v.running_jobs(), 60'000u);
  EXPECT_EQ(sink.last_beat(), (std::vector<int32_t>{0, 1, 2}));
  v.Stop();
}

TEST(VirtualNodesTest, CrashLosesTheRunsOnTheNode) {
  RecordingSink sink;
  VirtualNodes v(2, 5'000, sink);
  v.Start();
  v.Launch(1, 1, {0, 1}, kHour);
  v.Launch(2, 1, {1}, kHour);
  v.Launch(3, 1, {0}, kHour);
  v.Crash(1);
  EXPECT_EQ(v.running_jobs(), 1u);  // jobs 1 and 2 are lost
  EXPECT_TRUE(v.crashed(1));
  v.Restore(1);
  v.Launch(4, 1, {1}, 0);
  ASSERT_TRUE(WaitFor([&] { return !sink.done().empty(); }));
  EXPECT_EQ(sink.done(), (std::vector<std::pair<int64_t, int32_t>>{{4, 1}}));
  EXPECT_EQ(v.running_jobs(), 1u);  // job 3
  v.Stop();
}

// A repair moves a run off a crashed node: it is reported done, later by the
// delay; a run left on the crashed node never is.
TEST(VirtualNodesTest, AMovedRunEndsOnItsNewNodes) {
  RecordingSink sink;
  VirtualNodes v(3, 5'000, sink);
  v.Start();
  v.Launch(1, 1, {0, 1}, 50'000);
  v.Launch(2, 1, {1}, 50'000);
  v.Crash(1);
  EXPECT_EQ(v.running_jobs(), 0u);
  EXPECT_FALSE(v.Move(1, 2, {0, 2}, 0));  // not its run
  EXPECT_FALSE(v.Move(7, 1, {0, 2}, 0));
  ASSERT_TRUE(v.Move(1, 1, {0, 2}, 20'000));
  EXPECT_EQ(v.running_jobs(), 1u);
  ASSERT_TRUE(WaitFor([&] { return !sink.done().empty(); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // job 2's end has passed too
  EXPECT_EQ(sink.done(), (std::vector<std::pair<int64_t, int32_t>>{{1, 1}}));
  EXPECT_EQ(v.running_jobs(), 0u);
  v.Stop();
}

}  // namespace
}  // namespace berth::server
