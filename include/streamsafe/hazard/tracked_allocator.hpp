// The caching allocator seen by a hazard tracker: allocations, frees and record_stream calls
// give the engine its lifetimes, so a missing record_stream is reported as a reuse race, and
// under `enforce` the missing record_stream is made at the free, before the block can be reused.
// The allocator also tells the engine where its physical bytes go (allocator_observer::on_mapping):
// when remap moves a free chunk to another address, or memory given back by empty_cache or the
// out-of-memory ladder is mapped again elsewhere, old-lifetime accesses follow the bytes.
#pragma once

#include <cstddef>
#include "streamsafe/source_location.hpp"

#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/alloc/memory_resource.hpp"
#include "streamsafe/hazard/tracker.hpp"

namespace streamsafe::hazard {

/// Both references must outlive this object. Thread-safe as its two parts are.
class tracked_allocator {
 public:
  /// Attaches the allocator's mapping watcher (caching_allocator::watch_mappings): usage_error
  /// when another tracked_allocator watches the same allocator.
  tracked_allocator(caching_allocator& allocator, tracker& hazards);
  /// Takes back the record_stream action it gave the tracker (which may outlive it) and detaches
  /// the watcher; no other thread may be inside the allocator's growth then.
  ~tracked_allocator();
  tracked_allocator(const tracked_allocator&) = delete;
  tracked_allocator& operator=(const tracked_allocator&) = delete;

  /// As caching_allocator::allocate; the new lifetime starts on `stream`. If the engine refuses
  /// the lifetime (usage_error: it overlaps one the engine still holds), the block goes back to
  /// the allocator before the error is rethrown.
  [[nodiscard]] void* allocate(std::size_t bytes, StreamRef stream,
                               streamsafe::source_location where = streamsafe::source_location::current());
  /// Tells the engine first: under `enforce`, record_stream is called for every stream whose
  /// work on the block is not yet covered (also a stream whose handle is already destroyed:
  /// the tracker keeps such streams until their work is done), so the allocator holds the
  /// block until it is done. Then the engine ends the lifetime, then the allocator takes the
  /// block. If a record_stream throws, so does this call, and the block is still allocated for
  /// both the allocator and the engine: freeing it again retries. Thread-safe; the block must
  /// not be used by another thread during the call.
  void deallocate(void* ptr, streamsafe::source_location where = streamsafe::source_location::current());
  void record_stream(void* ptr, StreamRef stream, streamsafe::source_location where = streamsafe::source_location::current());

  [[nodiscard]] caching_allocator& allocator() const noexcept { return allocator_; }

 private:
  caching_allocator& allocator_;
  tracker& hazards_;
};

static_assert(stream_ordered_resource<tracked_allocator>,
              "tracked_allocator must serve device_buffer like the allocator it wraps");

}  // namespace streamsafe::hazard
