#include "alloc/offset_planner.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <memory_resource>
#include <numeric>
#include <utility>

#include "common/expects.hpp"

namespace streamsafe::detail {

namespace {

bool overlap_linear(std::uint64_t a0, std::uint64_t a1, std::uint64_t b0, std::uint64_t b1) noexcept {
  return a0 < b1 && b0 < a1;
}

struct placed_range {
  std::size_t offset;
  std::size_t end;
};

/// The lowest offset at or above 0 where `bytes` fit between `taken` (sorted by offset).
std::size_t lowest_gap(std::vector<placed_range>& taken, std::size_t bytes) {
  std::sort(taken.begin(), taken.end(), [](const placed_range& a, const placed_range& b) { return a.offset < b.offset; });
  std::size_t candidate = 0;
  for (const placed_range& p : taken) {
    if (p.offset >= candidate + bytes) break;
    candidate = std::max(candidate, p.end);
  }
  return candidate;
}

}  // namespace

namespace {

/// Whether [a0, a1) and [b0, b1), each on the period's circle (a lifetime may run past its end),
/// share a point.
bool overlap_cyclic(std::uint64_t a0, std::uint64_t a1, std::uint64_t b0, std::uint64_t b1, std::uint64_t period) noexcept {
  return overlap_linear(a0, a1, b0, b1) || overlap_linear(a0, a1, b0 + period, b1 + period) ||
         overlap_linear(a0 + period, a1 + period, b0, b1);
}

}  // namespace

bool overlap_in_time(const cyclic_lifetime& a, const cyclic_lifetime& b, std::uint64_t period) noexcept {
  return overlap_cyclic(a.start, a.start + a.length, b.start, b.start + b.length, period);
}

namespace {

/// For each block, the blocks whose lifetimes overlap its own: a sweep over two turns of the
/// period (each lifetime once per turn, so those running past the end meet the start's), in
/// O(n log n) plus the number of pairs.
std::vector<std::vector<std::uint32_t>> time_conflicts(std::span<const cyclic_lifetime> blocks, std::uint64_t period) {
  struct interval {
    std::uint64_t begin;
    std::uint64_t end;
    std::uint32_t block;
  };
  std::vector<interval> all;
  all.reserve(blocks.size() * 2);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const std::uint64_t length = std::max<std::uint64_t>(blocks[i].length, 1);
    for (const std::uint64_t turn : {std::uint64_t{0}, period}) {
      all.push_back({blocks[i].start + turn, blocks[i].start + turn + length, static_cast<std::uint32_t>(i)});
    }
  }
  std::sort(all.begin(), all.end(), [](const interval& a, const interval& b) { return a.begin < b.begin; });
  std::vector<std::vector<std::uint32_t>> conflicts(blocks.size());
  std::vector<interval> active;
  for (const interval& next : all) {
    std::erase_if(active, [&](const interval& a) { return a.end <= next.begin; });
    for (const interval& a : active) {
      if (a.block == next.block) continue;
      conflicts[next.block].push_back(a.block);
      conflicts[a.block].push_back(next.block);
    }
    active.push_back(next);
  }
  // A pair meets up to three times (once per turn and across the wrap); keep its first meeting.
  // A stamp per block dedupes in one pass, where sorting every list cost most of the planning.
  std::vector<std::uint32_t> seen_by(blocks.size(), std::numeric_limits<std::uint32_t>::max());
  for (std::uint32_t i = 0; i < conflicts.size(); ++i) {
    std::erase_if(conflicts[i], [&](std::uint32_t j) { return std::exchange(seen_by[j], i) == i; });
  }
  return conflicts;
}

/// About how many pairs of `blocks` live together (each meeting once per turn of the period):
/// from the starts and ends alone, without listing the pairs.
std::size_t overlapping_pairs(std::span<const cyclic_lifetime> blocks, std::uint64_t period) {
  std::vector<std::uint64_t> begins;
  std::vector<std::uint64_t> ends;
  for (const cyclic_lifetime& b : blocks) {
    for (const std::uint64_t turn : {std::uint64_t{0}, period}) {
      begins.push_back(b.start + turn);
      ends.push_back(b.start + turn + std::max<std::uint64_t>(b.length, 1));
    }
  }
  std::sort(begins.begin(), begins.end());
  std::sort(ends.begin(), ends.end());
  std::size_t pairs = 0;
  std::size_t ended = 0;
  for (std::size_t i = 0; i < begins.size(); ++i) {
    while (ended < ends.size() && ends[ended] <= begins[i]) ++ended;
    pairs += i - ended;  // intervals begun before this one and not yet ended
  }
  return pairs;
}

/// Places blocks in `order` one by one. Sparse lifetimes (few blocks live together): each block
/// sorts the placed blocks it conflicts with, listed by one sweep. Dense ones (a training step's
/// activations, most alive together): each scans one list of all placed blocks kept in offset
/// order, skipping those whose lifetimes miss its own, where listing the pairs and sorting each
/// block's every time cost n^2 log n and most of a plan's time.
class block_placer {
 public:
  block_placer(std::span<const cyclic_lifetime> blocks, std::uint64_t period, std::span<const std::size_t> boundaries)
      : blocks_(blocks), period_(period), boundaries_(boundaries) {
    dense_ = overlapping_pairs(blocks, period) > 64 * blocks.size();
    if (!dense_) conflicts_ = time_conflicts(blocks, period);
    offsets_.assign(blocks.size(), 0);
    placed_.assign(blocks.size(), false);
  }

  void place(std::uint32_t i) {
    offsets_[i] = dense_ ? lowest_gap_dense(i) : lowest_gap_sparse(i);
    footprint_ = std::max(footprint_, offsets_[i] + blocks_[i].bytes);
    placed_[i] = true;
    if (dense_) {
      const placed_block entry{offsets_[i], offsets_[i] + blocks_[i].bytes, blocks_[i].start,
                               blocks_[i].start + blocks_[i].length};
      const auto at = std::upper_bound(by_offset_.begin(), by_offset_.end(), entry.offset,
                                       [](std::size_t offset, const placed_block& p) { return offset < p.offset; });
      by_offset_.insert(at, entry);
    }
  }

  [[nodiscard]] offset_plan result() && { return {std::move(offsets_), footprint_}; }

 private:
  [[nodiscard]] std::size_t lowest_gap_sparse(std::uint32_t i) {
    taken_.clear();
    for (const std::size_t at : boundaries_) taken_.push_back({at, at});
    for (const std::uint32_t j : conflicts_[i]) {
      if (placed_[j]) taken_.push_back({offsets_[j], offsets_[j] + blocks_[j].bytes});
    }
    return lowest_gap(taken_, blocks_[i].bytes);
  }

  [[nodiscard]] std::size_t lowest_gap_dense(std::uint32_t i) {
    const std::size_t bytes = blocks_[i].bytes;
    const std::uint64_t start = blocks_[i].start;
    const std::uint64_t stop = start + blocks_[i].length;
    std::size_t candidate = 0;
    auto wall = boundaries_.begin();
    // Walls are empty ranges: one inside [candidate, candidate + bytes) moves the candidate to it.
    const auto fits_before = [&](std::size_t offset, std::size_t end) {
      if (offset >= candidate + bytes) return true;
      candidate = std::max(candidate, end);
      return false;
    };
    const auto walls_fit_below = [&](std::size_t offset) {
      for (; wall != boundaries_.end() && *wall < offset; ++wall) {
        if (fits_before(*wall, *wall)) return true;
      }
      return false;
    };
    for (const placed_block& p : by_offset_) {
      if (p.offset >= candidate + bytes) {
        // This block and every later one lie above the gap, whenever they live. Only a wall
        // below this block can still move the candidate up, into this block's way.
        if (walls_fit_below(p.offset)) return candidate;
        if (p.offset >= candidate + bytes) return candidate;
      }
      if (!overlap_cyclic(start, stop, p.start, p.stop, period_)) continue;
      if (walls_fit_below(p.offset) || fits_before(p.offset, p.end)) return candidate;
    }
    walls_fit_below(std::numeric_limits<std::size_t>::max());
    return candidate;
  }

  /// A placed block as the dense scan reads it: its bytes and its lifetime, side by side.
  struct placed_block {
    std::size_t offset;
    std::size_t end;
    std::uint64_t start;
    std::uint64_t stop;
  };

  std::span<const cyclic_lifetime> blocks_;
  std::uint64_t period_;
  std::span<const std::size_t> boundaries_;
  bool dense_ = false;
  std::vector<std::vector<std::uint32_t>> conflicts_;  // sparse only
  std::vector<std::size_t> offsets_;
  std::size_t footprint_ = 0;
  std::vector<bool> placed_;
  std::vector<placed_range> taken_;
  std::vector<placed_block> by_offset_;  // dense: placed blocks in offset order
};

}  // namespace

offset_plan plan_offsets(std::span<const cyclic_lifetime> blocks, std::uint64_t period,
                         std::span<const std::size_t> boundaries) {
  std::vector<std::uint32_t> order(blocks.size());
  std::iota(order.begin(), order.end(), std::uint32_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t x, std::uint32_t y) {
    if (blocks[x].bytes != blocks[y].bytes) return blocks[x].bytes > blocks[y].bytes;
    return blocks[x].length > blocks[y].length;
  });
  block_placer placer(blocks, period, boundaries);
  for (const std::uint32_t i : order) placer.place(i);
  return std::move(placer).result();
}

std::size_t peak_live_bytes(std::span<const cyclic_lifetime> blocks, std::uint64_t period) {
  // Live bytes change only where a lifetime starts or ends: a change per request of the period,
  // and a lifetime that runs past the end is live from the start (its previous turn).
  std::vector<std::int64_t> change(period + 1, 0);
  std::int64_t live = 0;
  for (const cyclic_lifetime& b : blocks) {
    const auto bytes = static_cast<std::int64_t>(b.bytes);
    SS_EXPECTS(b.start < period && b.length <= period, "peak_live_bytes: a lifetime from ", b.start, " for ",
               b.length, " requests does not fit a period of ", period);
    const std::uint64_t end = b.start + b.length;
    change[b.start] += bytes;
    if (end < period) {
      change[end] -= bytes;
    } else {
      change[end - period] -= bytes;
      live += bytes;
    }
  }
  std::int64_t peak = 0;
  for (std::uint64_t t = 0; t < period; ++t) peak = std::max(peak, live += change[t]);
  return static_cast<std::size_t>(peak);
}

bool disjoint_in_use(std::span<const cyclic_lifetime> blocks, std::span<const std::size_t> offsets,
                     std::uint64_t period) {
  // Every instance alive in the second turn began in the first or the second: a sweep over two
  // turns meets every pair of blocks alive together.
  struct change {
    std::uint64_t at;
    bool begins;
    std::size_t block;
    bool operator<(const change& other) const noexcept {
      return at != other.at ? at < other.at : begins < other.begins;  // ends first
    }
  };
  std::vector<change> changes;
  changes.reserve(blocks.size() * 4);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    for (const std::uint64_t turn : {std::uint64_t{0}, period}) {
      changes.push_back({blocks[i].start + turn, true, i});
      changes.push_back({blocks[i].start + blocks[i].length + turn, false, i});
    }
  }
  std::sort(changes.begin(), changes.end());
  // Nodes from one buffer, freed together: the sweep allocates and frees one per lifetime.
  std::pmr::monotonic_buffer_resource nodes;
  std::pmr::map<std::size_t, std::size_t> live(&nodes);  // offset -> end, of the blocks alive now
  for (const change& c : changes) {
    const std::size_t begin = offsets[c.block];
    if (!c.begins) {
      live.erase(begin);
      continue;
    }
    const std::size_t end = begin + blocks[c.block].bytes;
    const auto next = live.lower_bound(begin);
    if (next != live.end() && next->first < end) return false;
    if (next != live.begin() && std::prev(next)->second > begin) return false;
    live.emplace_hint(next, begin, end);
  }
  return true;
}

}  // namespace streamsafe::detail
