// A hook for layers above the allocator (the hazard engine): told of every allocation, free,
// record_stream and cross-stream reuse, and of every mapping it makes or gives back, after the
// allocator's books are done.
#pragma once

#include <cstddef>

#include "streamsafe/stream.hpp"

namespace streamsafe {

/// What happened to the physical memory behind a range (see allocator_observer::on_mapping).
enum class mapping_change {
  /// Physical memory now backs the range: a new chunk of an expandable segment, or a new fixed
  /// segment. The device may have handed out these physical bytes before, at another address.
  mapped,
  /// The range's physical memory went back to the device (a chunk unmapped, a segment freed):
  /// by a move of remap, empty_cache, the out-of-memory ladder, a retired stream's cache, a
  /// failed growth undone, or the allocator's end. The allocator synchronized the stream that
  /// cached it first, not the streams a missing record_stream left out: their work may still
  /// touch the bytes, which may come back at any address of a later `mapped`.
  unmapped,
};

/// Callbacks run on the calling thread, after bookkeeping, with none of the allocator's locks held
/// (so a slow callback delays only its own thread, and it may read the allocator: stats,
/// block_of, snapshot_json). They must be thread-safe and must not allocate, free or record
/// through the allocator they observe. Default bodies do nothing.
class allocator_observer {
 public:
  virtual ~allocator_observer() = default;
  /// `ptr` of `bytes` is now owned by `stream`.
  virtual void on_allocate(void* /*ptr*/, std::size_t /*bytes*/, stream_id /*stream*/) {}
  /// The host freed `ptr`; its release point is the allocation stream plus every stream
  /// recorded on it (GUIDE.md section 3). Called before the block can be reused, so no
  /// observer hears of its next allocation first.
  virtual void on_free(void* /*ptr*/, std::size_t /*bytes*/, stream_id /*stream*/) {}
  virtual void on_record_stream(void* /*ptr*/, stream_id /*stream*/) {}
  /// A cached range of `bytes` at `base` moved from stream `from` to stream `to`; `to` was made
  /// to wait on an event recorded on `from`.
  virtual void on_reuse(void* /*base*/, std::size_t /*bytes*/, stream_id /*from*/, stream_id /*to*/) {}
  /// One piece of physical memory at `at` of `bytes` changed (one chunk of `granularity` bytes,
  /// or one fixed segment): the identity of device bytes, for an observer that knows bytes by
  /// address. Every `unmapped` of a piece comes after the `mapped` of it and before the next
  /// `mapped` of its address. Unlike the others, called under the stream's growth mutex (never
  /// a spin lock), so a slow callback delays that stream's growth, and, where the repeat plan
  /// maps its arena or has the pools release memory, under the plan's mutex too: it must not
  /// read the allocator (stats, snapshot_json would wait for that mutex). A callback that throws is
  /// reported on stderr, naming the call, and the allocator goes on (its books are done; its
  /// destructor keeps releasing).
  virtual void on_mapping(void* /*at*/, std::size_t /*bytes*/, mapping_change /*change*/) {}
};

}  // namespace streamsafe
