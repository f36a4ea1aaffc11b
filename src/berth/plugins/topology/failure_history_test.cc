// Tests of the failure history that the topology-reliable plan reads.
#include "berth/plugins/topology/failure_history.h"

#include <gtest/gtest.h>

namespace berth::plugins {
namespace {

constexpr TimeUs kHour = 3600 * kUsPerSecond;

TEST(FailureHistory, RiskCountsQuartersOfDecayedFaults) {
  FailureHistory h(24 * kHour);
  EXPECT_EQ(h.Risk(0, 8, 0), 0);
  h.Record(NodeId(2), 0);
  h.Record(NodeId(5), 0);
  EXPECT_DOUBLE_EQ(h.recorded(), 2);
  EXPECT_EQ(h.Risk(0, 8, 0), 8);       // two faults, now
  EXPECT_EQ(h.Risk(0, 4, 0), 4);       // only node 2
  EXPECT_EQ(h.Risk(8, 16, 0), 0);      // another domain
  EXPECT_EQ(h.Risk(0, 8, 24 * kHour), 4);  // one half-life later: 1 fault
  EXPECT_EQ(h.Risk(0, 8, 48 * kHour), 2);
  // A fault after `now` does not count yet.
  h.Record(NodeId(3), 72 * kHour);
  EXPECT_EQ(h.Risk(0, 8, 48 * kHour), 2);
}

TEST(FailureHistory, SpreadFaultsAddUpToOne) {
  FailureHistory h(24 * kHour);
  for (int32_t k = 8; k < 16; ++k) h.Record(NodeId(k), 0, 1.0 / 8);  // a leaf switch
  EXPECT_EQ(h.Risk(8, 16, 0), 4);
  EXPECT_EQ(h.Risk(8, 12, 0), 2);
  h.Record(NodeId(3), 0, 0);  // no weight: ignored
  h.Record(NodeId(), 0);      // no node: ignored
  EXPECT_DOUBLE_EQ(h.recorded(), 1);
}

}  // namespace
}  // namespace berth::plugins
