// Memory taken out of a pool's books under its mutex, to be given back to the device after it
// (pool_memory.hpp).
#pragma once

#include <cstddef>
#include <vector>

#include "alloc/block.hpp"

namespace streamsafe::detail {

/// Disowned segments and chunks marked unmapped in the books: no request can take them, and the
/// device still holds them until they are given back.
struct released_memory {
  std::vector<segment*> segments;  // disowned, wholly free: fixed, or expandable ranges
  struct chunk {
    segment* owner = nullptr;
    std::size_t index = 0;
  };
  std::vector<chunk> chunks;              // free chunks of kept segments, marked unmapped
  [[nodiscard]] bool empty() const noexcept { return segments.empty() && chunks.empty(); }
};

}  // namespace streamsafe::detail
