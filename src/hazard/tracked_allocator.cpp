#include "streamsafe/hazard/tracked_allocator.hpp"

#include "streamsafe/error.hpp"

namespace streamsafe::hazard {

namespace {

/// The engine knows bytes by virtual address. Stitching maps one physical chunk at several
/// virtual addresses, so two blocks could share bytes the engine sees as disjoint: refused.
caching_allocator& without_aliased_bytes(caching_allocator& allocator) {
  const auto& options = allocator.options();
  if (options.segments == segment_kind::expandable && options.growth == expandable_growth::stitch) {
    throw usage_error(
        "tracked_allocator: the allocator uses expandable_growth:stitch, which maps the same physical "
        "bytes at a second virtual address; the hazard engine identifies bytes by virtual address and "
        "would miss races between the two. Use expandable_growth:remap (the default) or map_new, or "
        "segments:fixed, for an allocator the tracker watches");
  }
  return allocator;
}

}  // namespace

tracked_allocator::tracked_allocator(caching_allocator& allocator, tracker& hazards)
    : allocator_(without_aliased_bytes(allocator)), hazards_(hazards) {
  hazards_.set_record_stream_action(
      [&allocator](const void* block, StreamRef stream) { allocator.record_stream(const_cast<void*>(block), stream); });
}

tracked_allocator::~tracked_allocator() { hazards_.set_record_stream_action({}); }

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
