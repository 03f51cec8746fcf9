#include "streamsafe/hazard/tracked_allocator.hpp"

#include <memory>

#include "streamsafe/alloc/allocator_observer.hpp"
#include "streamsafe/error.hpp"

namespace streamsafe::hazard {

namespace {

/// Where the allocator's physical bytes go, told to the engine: every policy maps a chunk at one
/// virtual address at a time and reports each map and unmap, so the engine, which knows bytes by
/// virtual address, follows them when they move.
class mapping_bridge final : public allocator_observer {
 public:
  explicit mapping_bridge(tracker& hazards) : hazards_(hazards) {}
  void on_mapping(void* at, std::size_t bytes, mapping_change change) override {
    hazards_.track_mapping(at, bytes, change);
  }

 private:
  tracker& hazards_;
};

}  // namespace

tracked_allocator::tracked_allocator(caching_allocator& allocator, tracker& hazards)
    : allocator_(allocator), hazards_(hazards) {
  allocator_.watch_mappings(std::make_shared<mapping_bridge>(hazards_));
  hazards_.set_record_stream_action(
      [&allocator](const void* block, StreamRef stream) { allocator.record_stream(const_cast<void*>(block), stream); });
}

tracked_allocator::~tracked_allocator() {
  hazards_.set_record_stream_action({});
  allocator_.watch_mappings(nullptr);
}

void* tracked_allocator::allocate(std::size_t bytes, StreamRef stream, streamsafe::source_location where) {
  void* ptr = allocator_.allocate(bytes, stream);
  if (ptr == nullptr) return ptr;
  try {
    hazards_.track_alloc(ptr, allocator_.block_of(ptr).size, stream, where);
  } catch (...) {
    allocator_.deallocate(ptr);  // the engine refused the lifetime: neither keeps the block
    throw;
  }
  return ptr;
}

void tracked_allocator::deallocate(void* ptr, streamsafe::source_location where) {
  if (ptr == nullptr) return;
  (void)allocator_.block_of(ptr);  // a foreign pointer or double free throws here, engine untouched
  hazards_.track_free(ptr, where);
  allocator_.deallocate(ptr);
}

void tracked_allocator::record_stream(void* ptr, StreamRef stream, streamsafe::source_location where) {
  allocator_.record_stream(ptr, stream);
  hazards_.track_record_stream(ptr, stream, where);
}

}  // namespace streamsafe::hazard
