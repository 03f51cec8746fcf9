#include "hazard/vector_clock.hpp"

#include <gtest/gtest.h>

namespace streamsafe::hazard::detail {
namespace {

constexpr agent_slot host{0};
constexpr agent_slot s1{1};
constexpr agent_slot s2{2};

TEST(VectorClock, MissingEntriesAreZero) {
  vector_clock clock;
  EXPECT_EQ(clock.get(s2), epoch{0});
  EXPECT_EQ(clock.size(), 0U);
}

TEST(VectorClock, TickAdvancesOnlyTheOwnEntry) {
  vector_clock clock;
  EXPECT_EQ(clock.tick(s2), epoch{1});
  EXPECT_EQ(clock.tick(s2), epoch{2});
  EXPECT_EQ(clock.get(s2), epoch{2});
  EXPECT_EQ(clock.get(s1), epoch{0});
  EXPECT_EQ(clock.get(host), epoch{0});
}

TEST(VectorClock, JoinTakesTheMaximumPerEntry) {
  vector_clock a;
  vector_clock b;
  a.tick(s1);
  a.tick(s1);
  b.tick(s1);
  b.tick(s2);
  b.tick(s2);
  b.tick(s2);
  a.join(b);
  EXPECT_EQ(a.get(s1), epoch{2});
  EXPECT_EQ(a.get(s2), epoch{3});
}

TEST(VectorClock, CoversExactlyTheEpochsSeen) {
  vector_clock clock;
  clock.tick(s1);
  clock.tick(s1);
  EXPECT_TRUE(clock.covers(s1, epoch{2}));
  EXPECT_FALSE(clock.covers(s1, epoch{3}));
  EXPECT_FALSE(clock.covers(s2, epoch{1}));
}

TEST(VectorClock, IncludesIsEntrywiseLessOrEqual) {
  vector_clock small;
  vector_clock big;
  small.tick(s1);
  big.tick(s1);
  big.tick(s2);
  EXPECT_TRUE(big.includes(small));
  EXPECT_FALSE(small.includes(big));
  EXPECT_TRUE(small.includes(vector_clock{}));
}

TEST(VectorClock, ACopyIsASnapshotThatLaterTicksDoNotChange) {
  vector_clock stream;
  stream.tick(s1);
  const vector_clock recorded = stream;  // event_record
  stream.tick(s1);
  EXPECT_TRUE(recorded.covers(s1, epoch{1}));
  EXPECT_FALSE(recorded.covers(s1, epoch{2}));
}

}  // namespace
}  // namespace streamsafe::hazard::detail
