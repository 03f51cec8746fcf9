// A debug resource without a cache: every allocation goes to the device, every free returns to
// it, ordered on a stream and without a device-wide synchronization.
#pragma once

#include <cstddef>
#include <memory>

#include "streamsafe/alloc/memory_resource.hpp"
#include "streamsafe/device.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe {

namespace detail {
class uncached_state;
}

/// cuda: cudaMallocAsync / cudaFreeAsync on the allocation stream (stream-ordered, no device
/// sync, so a missing record_stream is not hidden the way a synchronizing cudaFree hides it).
/// sim: the device arena; a freed range can be handed out again by the next allocate.
/// record_stream(p, t): at free, the allocation stream waits on an event recorded on t before
/// the stream-ordered free, so the memory outlives t's use. Thread-safe.
/// Streams: a live block keeps its allocation stream and its recorded streams (not the handles:
/// the underlying streams) until its free is enqueued, so a Stream may be destroyed before the
/// blocks allocated on it or recorded with it are freed.
class uncached_resource {
 public:
  explicit uncached_resource(const Device& device);
  ~uncached_resource();
  uncached_resource(const uncached_resource&) = delete;
  uncached_resource& operator=(const uncached_resource&) = delete;

  /// Throws out_of_memory when the device has no room, usage_error for a foreign stream.
  [[nodiscard]] void* allocate(std::size_t bytes, StreamRef stream);
  /// nullptr is ignored; a pointer not live here throws usage_error.
  void deallocate(void* ptr);
  void record_stream(void* ptr, StreamRef stream);

 private:
  std::unique_ptr<detail::uncached_state> state_;
};

static_assert(stream_ordered_resource<uncached_resource>, "uncached_resource does not satisfy stream_ordered_resource");

}  // namespace streamsafe
