#include "streamsafe/hazard/tracked_allocator.hpp"

namespace streamsafe::hazard {

tracked_allocator::tracked_allocator(caching_allocator& allocator, tracker& hazards)
    : allocator_(allocator), hazards_(hazards) {
  hazards_.set_record_stream_action(
      [&allocator](const void* block, StreamRef stream) { allocator.record_stream(const_cast<void*>(block), stream); });
}

tracked_allocator::~tracked_allocator() { hazards_.set_record_stream_action({}); }

void* tracked_allocator::allocate(std::size_t bytes, StreamRef stream, streamsafe::source_location where) {
  void* ptr = allocator_.allocate(bytes, stream);
  if (ptr != nullptr) hazards_.track_alloc(ptr, allocator_.block_of(ptr).size, stream, where);
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
