// Offsets for blocks whose lifetimes are known in advance (one period of a repeating workload),
// so that blocks alive at the same time never share bytes and the whole takes little more than
// the most bytes ever alive together: the allocator's static plan (iteration_plan.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory_resource>
#include <span>
#include <vector>

namespace streamsafe::detail {

/// A block of `bytes`, alive from request `start` for `length` requests of a period: on a circle,
/// so a lifetime may run past the period's end into the start of the next.
struct cyclic_lifetime {
  std::size_t bytes = 0;
  std::uint64_t start = 0;
  std::uint64_t length = 0;
};

struct offset_plan {
  std::vector<std::size_t> offsets;  // one per block, in the order given
  std::size_t footprint = 0;         // bytes from 0 to the end of the highest block
};

/// Greedy by size: the largest block first, each at the lowest offset where it overlaps no
/// block already placed whose lifetime overlaps its own, nor straddles one of `boundaries` (the
/// ends of separate ranges that the offsets cover in turn). Offsets are multiples of 512 when
/// the sizes (and boundaries) are. Each block is compared only with the blocks whose lifetimes
/// overlap its own (found by one sweep), so the cost follows how many blocks live together,
/// not n^2. The planner's own memory (some hundreds of bytes per request of the period) comes
/// from `scratch`; the result's, from the heap.
[[nodiscard]] offset_plan plan_offsets(std::span<const cyclic_lifetime> blocks, std::uint64_t period,
                                       std::span<const std::size_t> boundaries = {},
                                       std::pmr::memory_resource* scratch = std::pmr::new_delete_resource());

/// plan_offsets for several plans of one period: the order of placing and which lifetimes
/// overlap (a sweep over the period, most of a sparse plan's time) are worked out once, then
/// each plan() places the blocks over its own ranges. The blocks must outlive the planner; its
/// memory comes from `scratch` until it is destroyed.
class offset_planner {
 public:
  offset_planner(std::span<const cyclic_lifetime> blocks, std::uint64_t period,
                 std::pmr::memory_resource* scratch = std::pmr::new_delete_resource());
  /// Blocks from which the planner sorts its placing order on a second thread while it sweeps
  /// their lifetimes (below, starting a thread costs more than it saves).
  static constexpr std::size_t sort_on_a_thread_from = 4096;

  /// plan_offsets(blocks, period, boundaries). With `give_up_above`, placing stops as soon as
  /// the footprint passes it: the footprint is then above it and there are no offsets (for a
  /// caller that only needs to know whether the plan fits).
  [[nodiscard]] offset_plan plan(std::span<const std::size_t> boundaries = {},
                                 std::size_t give_up_above = std::numeric_limits<std::size_t>::max()) const;

  /// Told of each block as it is placed (its offset and end); returns true to stop placing. The
  /// plan then has no offsets: for a caller whose test of a plan has a bound that only rises as
  /// blocks are placed, so a plan it would refuse is refused before it is whole.
  using placed_check = std::function<bool(std::size_t offset, std::size_t end)>;
  [[nodiscard]] offset_plan plan(std::span<const std::size_t> boundaries, const placed_check& stop) const;

 private:
  std::span<const cyclic_lifetime> blocks_;
  std::uint64_t period_;
  std::pmr::memory_resource* scratch_;
  std::pmr::vector<std::uint32_t> order_;  // largest first, then longest
  bool dense_ = false;                     // most lifetimes overlap: placing scans, no lists
  std::pmr::vector<std::size_t> conflict_first_;  // sparse: block i's overlapping blocks are
  std::pmr::vector<std::uint32_t> conflict_list_;  // conflict_list_[first[i], first[i + 1])
};

/// Whether two lifetimes of a period overlap.
[[nodiscard]] bool overlap_in_time(const cyclic_lifetime& a, const cyclic_lifetime& b, std::uint64_t period) noexcept;

/// Whether no two of `blocks` placed at `offsets` (one each) share a byte while alive together:
/// the check of a placement the planner did not make.
[[nodiscard]] bool disjoint_in_use(std::span<const cyclic_lifetime> blocks, std::span<const std::size_t> offsets,
                                   std::uint64_t period);

/// The most bytes alive at one request of the period: no plan's footprint is below it.
[[nodiscard]] std::size_t peak_live_bytes(std::span<const cyclic_lifetime> blocks, std::uint64_t period,
                                         std::pmr::memory_resource* scratch = std::pmr::new_delete_resource());

}  // namespace streamsafe::detail
