#include "monitor/intervals.hpp"

#include <algorithm>

namespace streamsafe::monitor::detail {

std::vector<interval> merge_intervals(std::vector<interval> pieces) {
  std::erase_if(pieces, [](const interval& i) { return !(i.end > i.begin); });
  std::sort(pieces.begin(), pieces.end(), [](const interval& a, const interval& b) { return a.begin < b.begin; });
  std::vector<interval> merged;
  for (const auto& piece : pieces) {
    if (!merged.empty() && piece.begin <= merged.back().end) {
      merged.back().end = std::max(merged.back().end, piece.end);
    } else {
      merged.push_back(piece);
    }
  }
  return merged;
}

double total_length(const std::vector<interval>& merged) {
  double total = 0;
  for (const auto& i : merged) total += i.end - i.begin;
  return total;
}

std::vector<interval> intersect(const std::vector<interval>& a, const std::vector<interval>& b) {
  std::vector<interval> out;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const double begin = std::max(a[i].begin, b[j].begin);
    const double end = std::min(a[i].end, b[j].end);
    if (end > begin) out.push_back({begin, end});
    // Advance whichever ends first; the other may still meet the next one.
    if (a[i].end < b[j].end) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

double intersection_length(const std::vector<interval>& a, const std::vector<interval>& b) {
  return total_length(intersect(a, b));
}

}  // namespace streamsafe::monitor::detail
