#include "alloc/offset_planner.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <utility>

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

bool overlap_in_time(const cyclic_lifetime& a, const cyclic_lifetime& b, std::uint64_t period) noexcept {
  const std::uint64_t a_end = a.start + a.length;
  const std::uint64_t b_end = b.start + b.length;
  return overlap_linear(a.start, a_end, b.start, b_end) || overlap_linear(a.start, a_end, b.start + period, b_end + period) ||
         overlap_linear(a.start + period, a_end + period, b.start, b_end);
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

}  // namespace

offset_plan plan_offsets(std::span<const cyclic_lifetime> blocks, std::uint64_t period) {
  std::vector<std::size_t> order(blocks.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    if (blocks[x].bytes != blocks[y].bytes) return blocks[x].bytes > blocks[y].bytes;
    return blocks[x].length > blocks[y].length;
  });
  const std::vector<std::vector<std::uint32_t>> conflicts = time_conflicts(blocks, period);
  offset_plan plan;
  plan.offsets.assign(blocks.size(), 0);
  std::vector<bool> placed(blocks.size(), false);
  std::vector<placed_range> taken;
  for (const std::size_t i : order) {
    taken.clear();
    for (const std::uint32_t j : conflicts[i]) {
      if (placed[j]) taken.push_back({plan.offsets[j], plan.offsets[j] + blocks[j].bytes});
    }
    plan.offsets[i] = lowest_gap(taken, blocks[i].bytes);
    plan.footprint = std::max(plan.footprint, plan.offsets[i] + blocks[i].bytes);
    placed[i] = true;
  }
  return plan;
}

std::size_t peak_live_bytes(std::span<const cyclic_lifetime> blocks, std::uint64_t period) {
  // Live bytes change only where a lifetime starts or ends: sweep those points over two turns.
  std::vector<std::pair<std::uint64_t, std::int64_t>> changes;
  changes.reserve(blocks.size() * 4);
  for (const cyclic_lifetime& b : blocks) {
    for (const std::uint64_t turn : {std::uint64_t{0}, period}) {
      changes.emplace_back(b.start + turn, static_cast<std::int64_t>(b.bytes));
      changes.emplace_back(b.start + b.length + turn, -static_cast<std::int64_t>(b.bytes));
    }
  }
  std::sort(changes.begin(), changes.end());  // at one point, ends (negative) before starts
  std::int64_t live = 0;
  std::int64_t peak = 0;
  for (const auto& [at, delta] : changes) {
    live += delta;
    if (at >= period) peak = std::max(peak, live);  // the second turn sees the wrapped lifetimes
  }
  return static_cast<std::size_t>(peak);
}

}  // namespace streamsafe::detail
