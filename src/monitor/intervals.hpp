// Interval arithmetic on the time line: the union, its length and the length of an intersection.
// Internal to the monitor; every busy/idle/overlap figure is built from these three.
#pragma once

#include <vector>

namespace streamsafe::monitor::detail {

struct interval {
  double begin = 0;
  double end = 0;
};

/// Sorted, disjoint intervals covering exactly the union of `pieces` (empty ones dropped).
[[nodiscard]] std::vector<interval> merge_intervals(std::vector<interval> pieces);

/// Total length of sorted, disjoint intervals.
[[nodiscard]] double total_length(const std::vector<interval>& merged);

/// Length of the intersection of two sorted, disjoint interval lists.
[[nodiscard]] double intersection_length(const std::vector<interval>& a, const std::vector<interval>& b);

/// Intersection of two sorted, disjoint interval lists, itself sorted and disjoint.
[[nodiscard]] std::vector<interval> intersect(const std::vector<interval>& a, const std::vector<interval>& b);

}  // namespace streamsafe::monitor::detail
