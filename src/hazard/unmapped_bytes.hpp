// The identity of device bytes across addresses. The engine knows bytes by virtual address, but
// an allocator gives physical memory back to the device (a chunk unmapped, a segment freed) and
// maps physical memory again at other addresses, where the device may hand out the same bytes:
// expandable_growth:remap moves a wholly free chunk to the block that needs one, empty_cache and
// the out-of-memory ladder give chunks back that a later growth maps anywhere. The allocator
// synchronizes the stream that cached them first, so what can still touch the bytes is work the
// host has not seen finish: accesses of streams a missing record_stream left out. Those accesses
// leave the old address with the bytes and are given to every later mapping, at the same offset
// within the piece (a physical chunk is mapped whole), until the host has seen them finish: a
// new-lifetime access there that is not ordered after one is a reuse race, as at the old address.
#pragma once

#include <cstdint>

#include "hazard/interval_map.hpp"
#include "hazard/shadow_cell.hpp"
#include "hazard/vector_clock.hpp"

namespace streamsafe::hazard::detail {

class unmapped_bytes {
 public:
  /// [range] was given back to the device: its retired accesses the host has not seen finish
  /// move out of `shadow` (the address keeps its state: touching it is a use-after-free) into
  /// the bytes kept here, by offset within the range.
  void take(interval_map<shadow_cell>& shadow, byte_range range, const vector_clock& host);
  /// Physical memory was mapped at [range]: it may hold any bytes given back before, so every
  /// kept access the host has not seen finish is retired there too (the cells become `freed`
  /// until an allocation covers them). A live cell is left alone.
  void give(interval_map<shadow_cell>& shadow, byte_range range, const vector_clock& host);
  /// Segments of kept offsets (for tests of the engine's size).
  [[nodiscard]] std::size_t size() const noexcept { return kept_.size(); }

 private:
  /// Drops kept accesses the host has seen finish: they precede every later access.
  void forget_seen(const vector_clock& host);

  interval_map<shadow_cell> kept_;  // keyed by offset within a given-back piece
  std::uint64_t kept_end_ = 0;      // no offset at or above is kept
};

}  // namespace streamsafe::hazard::detail
