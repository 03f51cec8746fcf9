// A hook for layers above the allocator (the hazard engine): told of every allocation, free,
// record_stream and cross-stream reuse, after the allocator's books are done.
#pragma once

#include <cstddef>

#include "streamsafe/stream.hpp"

namespace streamsafe {

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
};

}  // namespace streamsafe
