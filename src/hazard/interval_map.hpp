// A map from byte ranges to cells: the shadow state. Segments are disjoint half-open ranges
// [start, end) keyed by start, so a view at an offset and a partial overlap touch exactly the
// bytes they name: a segment is split where an access begins or ends, and neighbours whose cells
// became equal are merged again so the map stays as small as the program's distinct ranges.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>

#include "streamsafe/hazard/ids.hpp"

namespace streamsafe::hazard::detail {

template <typename Cell>
class interval_map {
 public:
  /// Calls fn(cell, piece) for each piece of `range`, in address order, after splitting segments
  /// at the range's edges; bytes not yet tracked get a default cell first. fn may modify cells.
  template <typename Fn>
  void update(byte_range range, Fn&& fn) {
    if (range.empty()) return;
    split_at(range.first);
    split_at(range.end());
    std::uint64_t cursor = range.first;
    auto it = segments_.lower_bound(range.first);
    while (cursor < range.end()) {
      if (it == segments_.end() || it->first > cursor) {
        std::uint64_t gap_end = (it == segments_.end()) ? range.end() : std::min(it->first, range.end());
        it = segments_.emplace_hint(it, cursor, segment{gap_end, Cell{}});
      }
      fn(it->second.cell, byte_range{it->first, it->second.end - it->first});
      cursor = it->second.end;
      ++it;
    }
    merge_equal_neighbours(range);
  }

  /// Calls fn(cell, piece) for the tracked pieces of `range` without changing the map.
  template <typename Fn>
  void visit(byte_range range, Fn&& fn) const {
    if (range.empty()) return;
    auto it = segments_.upper_bound(range.first);
    if (it != segments_.begin()) --it;
    for (; it != segments_.end() && it->first < range.end(); ++it) {
      const std::uint64_t first = std::max(it->first, range.first);
      const std::uint64_t end = std::min(it->second.end, range.end());
      if (first < end) fn(it->second.cell, byte_range{first, end - first});
    }
  }

  [[nodiscard]] std::size_t size() const noexcept { return segments_.size(); }

 private:
  struct segment {
    std::uint64_t end;
    Cell cell;
  };

  // Makes `at` a segment boundary if a segment straddles it.
  void split_at(std::uint64_t at) {
    auto it = segments_.upper_bound(at);
    if (it == segments_.begin()) return;
    --it;
    if (it->first == at || it->second.end <= at) return;
    segment upper{it->second.end, it->second.cell};
    it->second.end = at;
    segments_.emplace_hint(std::next(it), at, std::move(upper));
  }

  // Merges touching neighbours with equal cells from just before `range` to just after it.
  void merge_equal_neighbours(byte_range range) {
    auto it = segments_.lower_bound(range.first);
    if (it != segments_.begin()) --it;
    while (it != segments_.end() && it->first <= range.end()) {
      auto after = std::next(it);
      if (after == segments_.end()) return;
      if (after->first == it->second.end && after->second.cell == it->second.cell) {
        it->second.end = after->second.end;
        segments_.erase(after);
      } else {
        it = after;
      }
    }
  }

  std::map<std::uint64_t, segment> segments_;
};

}  // namespace streamsafe::hazard::detail
