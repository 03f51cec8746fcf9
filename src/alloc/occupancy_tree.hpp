// Which block last took each stretch of an arena whose blocks have fixed offsets (the repeat
// plan's, iteration_plan.hpp): the bytes are cut into cells at every block's first and last
// byte, and a segment tree over the cells keeps, for each node, the one holder of all its cells,
// if they have one. Taking a block's cells and listing who held them before cost
// O((k + 1) log n) for k holders, with no allocation once sized: the plan follows its blocks'
// occupants this way in the first period it serves.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace streamsafe::detail {

class occupancy_tree {
 public:
  static constexpr std::uint32_t nobody = ~std::uint32_t{0};

  /// `cells` cells, each held by `holder` (nobody: none is).
  void reset(std::size_t cells, std::uint32_t holder);
  /// Calls `visit(holder)` for the holders of cells [begin, end), nobody left out; a holder of
  /// cells apart from each other may be visited more than once.
  template <typename Visit>
  void for_each_holder(std::uint32_t begin, std::uint32_t end, Visit visit) const {
    auto held = [&visit](std::uint32_t holder, std::uint32_t, std::uint32_t) {
      if (holder != nobody) visit(holder);
    };
    if (begin < end) visit_range(1, 0, cells_, begin, end, held);
  }
  /// Cells [begin, end) are `holder`'s now; `visit(previous)` is called for the holders they had,
  /// as for_each_holder names them, in the same walk of the tree.
  template <typename Visit>
  void take(std::uint32_t begin, std::uint32_t end, std::uint32_t holder, Visit visit) {
    auto held = [&visit](std::uint32_t previous, std::uint32_t, std::uint32_t) {
      if (previous != nobody) visit(previous);
    };
    if (begin < end) take_range(1, 0, cells_, begin, end, holder, held);
  }
  void take(std::uint32_t begin, std::uint32_t end, std::uint32_t holder) {
    take(begin, end, holder, [](std::uint32_t) {});
  }
  /// As take, but `visit(previous, first, end)` is told each stretch of cells [first, end) that
  /// had one holder, nobody included: which of the cells taken had which holder.
  template <typename Visit>
  void take_stretches(std::uint32_t begin, std::uint32_t end, std::uint32_t holder, Visit visit) {
    if (begin < end) take_range(1, 0, cells_, begin, end, holder, visit);
  }
  [[nodiscard]] std::size_t cells() const noexcept { return cells_; }

 private:
  static constexpr std::uint32_t mixed = nobody - 1;  // the node's cells have several holders

  template <typename Visit>
  void visit_range(std::size_t node, std::uint32_t low, std::uint32_t high, std::uint32_t begin, std::uint32_t end,
                   Visit& visit) const {
    if (end <= low || high <= begin) return;
    if (const std::uint32_t holder = holder_[node]; holder != mixed) {
      visit(holder, std::max(low, begin), std::min(high, end));
      return;
    }
    const std::uint32_t middle = low + (high - low) / 2;
    visit_range(2 * node, low, middle, begin, end, visit);
    visit_range(2 * node + 1, middle, high, begin, end, visit);
  }
  template <typename Visit>
  void take_range(std::size_t node, std::uint32_t low, std::uint32_t high, std::uint32_t begin, std::uint32_t end,
                  std::uint32_t holder, Visit& visit) {
    if (end <= low || high <= begin) return;
    if (begin <= low && high <= end) {
      // A node reached from the root is exact, so is the subtree of a mixed one.
      visit_range(node, low, high, begin, end, visit);
      holder_[node] = holder;
      return;
    }
    if (holder_[node] != mixed) {  // the children held what the node held
      holder_[2 * node] = holder_[node];
      holder_[2 * node + 1] = holder_[node];
    }
    const std::uint32_t middle = low + (high - low) / 2;
    take_range(2 * node, low, middle, begin, end, holder, visit);
    take_range(2 * node + 1, middle, high, begin, end, holder, visit);
    holder_[node] = holder_[2 * node] == holder_[2 * node + 1] ? holder_[2 * node] : mixed;
  }

  std::uint32_t cells_ = 0;
  std::vector<std::uint32_t> holder_;  // by node, the root at 1
};

}  // namespace streamsafe::detail
