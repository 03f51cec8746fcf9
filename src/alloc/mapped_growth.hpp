// Expandable segments that grow by mapping chunks (expandable_growth map_new, remap, settle):
// a block is placed in a stream's virtual ranges (a new range when none has room) and the chunks
// it touches that are not mapped yet are mapped. The policies differ only in where the block
// goes and whether free chunks are moved to it: the hooks below.
#pragma once

#include <cstddef>
#include <vector>

#include "alloc/growth_policy.hpp"

namespace streamsafe::detail {

class mapped_growth : public growth_policy {
 public:
  using growth_policy::growth_policy;

  /// Serialized per pool on its growth mutex: the chunks mapped and moved are this call's alone.
  block* grow(stream_pool& pool, pool_kind kind, std::size_t rounded) final;

 protected:
  /// The free block to take for the request; `found` is the bins' choice. Caller holds pool.mutex.
  [[nodiscard]] virtual block* place(stream_pool& /*pool*/, pool_kind /*kind*/, std::size_t /*rounded*/,
                                     block* found) const {
    return found;
  }
  /// Lists, in `moved`, free mapped chunks to unmap before `fresh`'s chunks are mapped (marked
  /// unmapped already). Caller holds pool.mutex.
  virtual void take_chunks_to_move(stream_pool& /*pool*/, const block& /*fresh*/, released_memory& /*moved*/) const {}
  /// Before `chunks_to_map` chunks are mapped for `fresh`, with the moved ones given back: gives
  /// other pools' free chunks back to the device where the policy wants reserved memory flat.
  /// Caller holds pool.growth, not pool.mutex.
  virtual void make_room_elsewhere(stream_pool& /*pool*/, const block& /*fresh*/, std::size_t /*chunks_to_map*/) const {}

 private:
  /// A virtual range for a segment of `kind` able to hold `rounded` (see range_bytes).
  [[nodiscard]] segment* reserve_range(stream_pool& pool, pool_kind kind, std::size_t rounded);
  /// Bytes of the next range (next_range_bytes over the pool's ranges of `kind`): no stream
  /// reserves the device's whole address range before it needs it.
  [[nodiscard]] std::size_t range_bytes(const stream_pool& pool, pool_kind kind, std::size_t rounded) const;
  /// The chunks of live block `b` not mapped yet. Caller holds the owner's lock.
  [[nodiscard]] static std::vector<std::size_t> missing_chunks(const block& b);
  /// Maps `chunks` of live block `b`'s segment, then books them; chunks mapped before a failure
  /// are booked, then the error is rethrown. Caller holds pool.growth, not pool.mutex.
  void map_chunks(stream_pool& pool, block* b, const std::vector<std::size_t>& chunks);
  /// After a failed growth: `b` goes back free, the chunks mapped for it are unmapped, and the
  /// range reserved for it (`fresh`, when not null) is released when nothing else uses it.
  void undo_growth(stream_pool& pool, block* b, const std::vector<std::size_t>& mapped, segment* fresh);
};

}  // namespace streamsafe::detail
