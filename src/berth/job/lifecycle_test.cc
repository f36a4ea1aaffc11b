// Tests of the job lifecycle state machine: the full table of allowed edges,
// terminal states, and error messages naming both states.
#include "berth/job/lifecycle.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>

namespace berth::job {
namespace {

constexpr JobState kAll[] = {JobState::kPending,   JobState::kAdmitted,  JobState::kRunning,  JobState::kSucceeded,
                             JobState::kFailed,    JobState::kPreempted, JobState::kCancelled};

using S = JobState;

const std::set<std::pair<S, S>>& AllowedEdges() {
  static const std::set<std::pair<S, S>> edges = {
      {S::kPending, S::kAdmitted},   {S::kPending, S::kCancelled}, {S::kPending, S::kFailed},
      {S::kAdmitted, S::kRunning},   {S::kAdmitted, S::kPending},  {S::kAdmitted, S::kCancelled},
      {S::kRunning, S::kSucceeded},  {S::kRunning, S::kFailed},    {S::kRunning, S::kPreempted},
      {S::kRunning, S::kCancelled},  {S::kPreempted, S::kPending}, {S::kPreempted, S::kCancelled},
  };
  return edges;
}

TEST(Lifecycle, EveryPairAgainstTheTable) {
  int allowed = 0;
  for (S from : kAll) {
    for (S to : kAll) {
      const bool expect = AllowedEdges().count({from, to}) > 0;
      Status s = CheckTransition(from, to);
      EXPECT_EQ(s.ok(), expect) << JobStateName(from) << " -> " << JobStateName(to);
      if (!s.ok()) {
        EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
        EXPECT_EQ(s.message(), std::string("job cannot go from ") + JobStateName(from) + " to " + JobStateName(to));
      }
      allowed += s.ok();
    }
  }
  EXPECT_EQ(allowed, 12);
}

TEST(Lifecycle, TerminalStatesHaveNoWayOut) {
  for (S s : kAll) {
    EXPECT_EQ(IsTerminal(s), s == S::kSucceeded || s == S::kFailed || s == S::kCancelled) << JobStateName(s);
    if (!IsTerminal(s)) continue;
    for (S to : kAll) EXPECT_FALSE(CheckTransition(s, to).ok()) << JobStateName(s) << " -> " << JobStateName(to);
  }
}

TEST(Lifecycle, NoSelfLoops) {
  for (S s : kAll) EXPECT_FALSE(CheckTransition(s, s).ok()) << JobStateName(s);
}

TEST(Lifecycle, EveryStateIsReachableFromPendingAndEveryPathEnds) {
  // Breadth-first over the edges: all states reachable, and each non-terminal
  // state can reach a terminal one (no trap).
  std::set<S> seen = {S::kPending};
  std::vector<S> frontier = {S::kPending};
  while (!frontier.empty()) {
    S s = frontier.back();
    frontier.pop_back();
    for (S to : kAll)
      if (CheckTransition(s, to).ok() && seen.insert(to).second) frontier.push_back(to);
  }
  EXPECT_EQ(seen.size(), std::size(kAll));
  for (S s : kAll) {
    if (IsTerminal(s)) continue;
    bool reaches_end = false;
    for (S to : kAll) reaches_end = reaches_end || (CheckTransition(s, to).ok() && (IsTerminal(to) || to == S::kPending));
    EXPECT_TRUE(reaches_end) << JobStateName(s);
  }
}

TEST(Lifecycle, PreemptedJobsAreRequeuedNotRestartedInPlace) {
  EXPECT_TRUE(CheckTransition(S::kRunning, S::kPreempted).ok());
  EXPECT_TRUE(CheckTransition(S::kPreempted, S::kPending).ok());
  EXPECT_FALSE(CheckTransition(S::kPreempted, S::kRunning).ok());
}

TEST(Lifecycle, Names) {
  std::set<std::string> names;
  for (S s : kAll) names.insert(JobStateName(s));
  EXPECT_EQ(names.size(), std::size(kAll));
  EXPECT_STREQ(JobStateName(S::kRunning), "running");
}

}  // namespace
}  // namespace berth::job
