// A hook for layers above the allocator (the hazard engine): told of every allocation, free,
// record_stream and cross-stream reuse, after the allocator's books are done.
#pragma once

#include <cstddef>

#include "streamsafe/stream.hpp"

namespace streamsafe {

/// Callbacks run on the calling thread, outside the allocator's locks, after bookkeeping; they
/// must be thread-safe and must not call back into the allocator. Default bodies do nothing.
class allocator_observer {
 public:
  virtual ~allocator_observer() = default;
  /// `ptr` of `bytes` is now owned by `stream`.
  virtual void on_allocate(void* /*ptr*/, std::size_t /*bytes*/, stream_id /*stream*/) {}
  /// The host freed `ptr`; its release point is the allocation stream plus every stream
  /// recorded on it (GUIDE.md section 3).
  virtual void on_free(void* /*ptr*/, std::size_t /*bytes*/, stream_id /*stream*/) {}
  virtual void on_record_stream(void* /*ptr*/, stream_id /*stream*/) {}
  /// A cached range of `bytes` at `base` moved from stream `from` to stream `to`; `to` was made
  /// to wait on an event recorded on `from`.
  virtual void on_reuse(void* /*base*/, std::size_t /*bytes*/, stream_id /*from*/, stream_id /*to*/) {}
};

}  // namespace streamsafe
