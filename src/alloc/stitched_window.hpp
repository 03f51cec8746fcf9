// What a stitched segment's memory is: bytes of physical chunks, in a window that maps them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace streamsafe::detail {

/// Bytes [begin, end) of chunk `chunk` (an index of the stream's chunk_packer).
struct chunk_piece {
  std::size_t chunk = 0;
  std::size_t begin = 0;
  std::size_t end = 0;
};

/// Chunks mapped at consecutive granularity-aligned addresses: chunks[i] at base + i * granularity.
struct chunk_mapping {
  std::uintptr_t base = 0;
  std::vector<std::size_t> chunks;
};

/// A segment's memory: its pieces, mapped in order from slot `first_slot` of `window` on (piece i
/// in slot first_slot + i). The segment starts pieces.front().begin bytes into that slot.
struct stitched_window {
  chunk_mapping window;
  std::size_t first_slot = 0;
  std::vector<chunk_piece> pieces;
};

}  // namespace streamsafe::detail
