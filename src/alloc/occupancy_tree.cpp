#include "alloc/occupancy_tree.hpp"

#include "common/expects.hpp"

namespace streamsafe::detail {

void occupancy_tree::reset(std::size_t cells, std::uint32_t holder) {
  SS_EXPECTS(cells < mixed, "occupancy_tree: ", cells, " cells are more than it numbers");
  cells_ = static_cast<std::uint32_t>(cells);
  std::size_t nodes = 2;
  while (nodes < 2 * cells) nodes *= 2;
  holder_.assign(nodes, holder);
}

void occupancy_tree::take(std::uint32_t begin, std::uint32_t end, std::uint32_t holder) {
  if (begin < end) take_range(1, 0, cells_, begin, end, holder);
}

void occupancy_tree::take_range(std::size_t node, std::uint32_t low, std::uint32_t high, std::uint32_t begin,
                                std::uint32_t end, std::uint32_t holder) {
  if (end <= low || high <= begin) return;
  if (begin <= low && high <= end) {
    holder_[node] = holder;
    return;
  }
  if (holder_[node] != mixed) {  // the children held what the node held
    holder_[2 * node] = holder_[node];
    holder_[2 * node + 1] = holder_[node];
  }
  const std::uint32_t middle = low + (high - low) / 2;
  take_range(2 * node, low, middle, begin, end, holder);
  take_range(2 * node + 1, middle, high, begin, end, holder);
  holder_[node] = holder_[2 * node] == holder_[2 * node + 1] ? holder_[2 * node] : mixed;
}

}  // namespace streamsafe::detail
