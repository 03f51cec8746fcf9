#include "hazard/interval_map.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace streamsafe::hazard::detail {
namespace {

struct tag_cell {
  int tag = 0;
  friend bool operator==(const tag_cell&, const tag_cell&) = default;
};

struct piece {
  byte_range range;
  int tag;
  friend bool operator==(const piece&, const piece&) = default;
};

std::vector<piece> pieces(const interval_map<tag_cell>& map, byte_range range) {
  std::vector<piece> out;
  map.visit(range, [&](const tag_cell& cell, byte_range r) { out.push_back({r, cell.tag}); });
  return out;
}

void set_tag(interval_map<tag_cell>& map, byte_range range, int tag) {
  map.update(range, [&](tag_cell& cell, byte_range) { cell.tag = tag; });
}

TEST(IntervalMap, UpdateCreatesOneSegmentForUntrackedBytes) {
  interval_map<tag_cell> map;
  set_tag(map, {100, 50}, 1);
  EXPECT_EQ(map.size(), 1U);
  EXPECT_EQ(pieces(map, {0, 1000}), (std::vector<piece>{{{100, 50}, 1}}));
}

TEST(IntervalMap, PartialOverlapSplitsExactlyAtTheEdges) {
  interval_map<tag_cell> map;
  set_tag(map, {0, 100}, 1);
  set_tag(map, {40, 20}, 2);
  EXPECT_EQ(pieces(map, {0, 100}), (std::vector<piece>{{{0, 40}, 1}, {{40, 20}, 2}, {{60, 40}, 1}}));
}

TEST(IntervalMap, UpdateVisitsGapsAndExistingPiecesInOrder) {
  interval_map<tag_cell> map;
  set_tag(map, {10, 10}, 1);
  std::vector<byte_range> seen;
  map.update({0, 40}, [&](tag_cell& cell, byte_range r) {
    seen.push_back(r);
    cell.tag += 10;
  });
  EXPECT_EQ(seen, (std::vector<byte_range>{{0, 10}, {10, 10}, {20, 20}}));
  EXPECT_EQ(pieces(map, {0, 40}), (std::vector<piece>{{{0, 10}, 10}, {{10, 10}, 11}, {{20, 20}, 10}}));
}

TEST(IntervalMap, EqualNeighboursMergeBack) {
  interval_map<tag_cell> map;
  set_tag(map, {0, 100}, 1);
  set_tag(map, {40, 20}, 2);
  EXPECT_EQ(map.size(), 3U);
  set_tag(map, {40, 20}, 1);
  EXPECT_EQ(map.size(), 1U);
  EXPECT_EQ(pieces(map, {0, 100}), (std::vector<piece>{{{0, 100}, 1}}));
}

TEST(IntervalMap, VisitClipsToTheRangeAndSkipsUntrackedBytes) {
  interval_map<tag_cell> map;
  set_tag(map, {0, 10}, 1);
  set_tag(map, {20, 10}, 2);
  EXPECT_EQ(pieces(map, {5, 20}), (std::vector<piece>{{{5, 5}, 1}, {{20, 5}, 2}}));
  EXPECT_TRUE(pieces(map, {10, 10}).empty());
}

TEST(IntervalMap, EmptyRangeTouchesNothing) {
  interval_map<tag_cell> map;
  set_tag(map, {5, 0}, 1);
  EXPECT_EQ(map.size(), 0U);
}

}  // namespace
}  // namespace streamsafe::hazard::detail
