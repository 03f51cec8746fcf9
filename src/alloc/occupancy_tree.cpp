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

}  // namespace streamsafe::detail
