// The allocator's records: a block is a range of a segment, free or live; a segment is one
// device allocation (fixed) or one virtual range (expandable). Blocks of a segment form a list
// in address order so a free block merges with free neighbours in O(1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "alloc/size_classes.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::detail {

class StreamImpl;
class stream_pool;

enum class block_state : std::uint8_t {
  free,     // in its stream's bins
  live,     // handed out
  pending,  // freed by the host, waiting for recorded streams
};

enum class pool_kind : std::uint8_t { small, large };

struct segment;

struct block {
  std::uintptr_t address = 0;
  std::size_t size = 0;
  std::size_t requested = 0;
  block_state state = block_state::free;
  bool mapped = true;  // every byte backed by physical memory (always so in fixed segments)
  bool awaiting_merge = false;  // listed in its pool's deferred merges (see stream_pool::cache)
  bool lent = false;  // live: taken whole from the bins for the repeat plan's arena (iteration_plan.hpp)
  segment* owner = nullptr;
  stream_pool* user = nullptr;  // the allocation stream's pool (another stream's when borrowed)
  std::uint64_t sequence = 0;   // the repeat plan's number for its allocation (iteration_plan.hpp)
  block* prev = nullptr;  // address order within the segment
  block* next = nullptr;
  block* prev_free = nullptr;  // bin list
  block* next_free = nullptr;
  // Streams other than the owner that used it; shares, so that a recorded stream whose handle
  // is gone stays until the block's free is fenced on it.
  std::vector<std::shared_ptr<StreamImpl>> recorded_streams;
};

struct segment {
  std::uintptr_t address = 0;
  std::size_t size = 0;        // bytes of the range (virtual for expandable)
  std::size_t mapped_bytes = 0;  // physical bytes held (== size for fixed)
  pool_kind kind = pool_kind::small;
  bool expandable = false;
  stream_pool* owner = nullptr;  // whose lock guards the segment's blocks; never changes
  block* first = nullptr;
  std::size_t live_blocks = 0;   // live and pending blocks
  std::size_t granularity = 0;    // expandable only
  std::vector<bool> chunk_mapped;  // expandable only: one entry per granule
  std::size_t chunks_touched = 0;  // expandable only: no chunk at or above this was ever mapped
  bool place_at_chunk_end = false;  // expandable small pool with small_placement:chunk_end
};

/// Where a request of `bytes` goes inside free block `b`: at its start, except in a segment that
/// places at chunk ends, where the request ends on the first chunk boundary past
/// `b.address + bytes` when `b` reaches it. It then touches the same chunks as at the start (or
/// one fewer), but the rest of `b` begins on a chunk boundary, so the rest's whole free chunks can
/// be unmapped or moved, and the space left before the request, in a chunk that a live neighbour
/// holds already, takes later small requests.
[[nodiscard]] inline std::uintptr_t placement(const block& b, std::size_t bytes) noexcept {
  // An exact fit (the fast path's reuse) has nowhere else to go: no division for it.
  if (!b.owner->place_at_chunk_end || b.size == bytes) return b.address;
  const segment& s = *b.owner;
  const std::uintptr_t chunk_end = s.address + round_up(b.address + bytes - s.address, s.granularity);
  return chunk_end <= b.address + b.size ? chunk_end - bytes : b.address;
}

/// The chunks of expandable segment `s` that [address, address + bytes) touches, first and last.
struct chunk_range {
  std::size_t first = 0;
  std::size_t last = 0;
};
[[nodiscard]] inline chunk_range chunks_of(const segment& s, std::uintptr_t address, std::size_t bytes) noexcept {
  return {(address - s.address) / s.granularity, (address + bytes - 1 - s.address) / s.granularity};
}

/// The chunks of `s` that [address, address + bytes) touches and that are not mapped: what
/// placing a block there costs in new physical memory.
[[nodiscard]] inline std::size_t unmapped_chunks(const segment& s, std::uintptr_t address, std::size_t bytes) noexcept {
  const chunk_range range = chunks_of(s, address, bytes);
  std::size_t missing = 0;
  for (std::size_t chunk = range.first; chunk <= range.last; ++chunk) missing += s.chunk_mapped[chunk] ? 0 : 1;
  return missing;
}

/// Whether the `bytes` of free block `b` that a request would take (see placement) are backed by
/// physical memory, so they can be handed out without mapping. A merged free block may be partly
/// mapped (mapped is then false): the chunk map says whether the part a request needs is.
[[nodiscard]] inline bool placement_mapped(const block& b, std::size_t bytes) noexcept {
  return b.mapped || unmapped_chunks(*b.owner, placement(b, bytes), bytes) == 0;
}

[[nodiscard]] inline bool wholly_free(const segment& s) noexcept {
  return s.live_blocks == 0 && s.first != nullptr && s.first->next == nullptr;
}

}  // namespace streamsafe::detail
