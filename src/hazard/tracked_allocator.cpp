#include "streamsafe/hazard/tracked_allocator.hpp"

#include <memory>

#include "streamsafe/alloc/allocator_observer.hpp"
#include "streamsafe/error.hpp"

namespace streamsafe::hazard {

namespace {

/// The engine knows bytes by virtual address. Stitching maps one physical chunk at several
/// virtual addresses at once, so two live blocks could share bytes the engine sees as disjoint:
/// refused. The other policies map a chunk at one address at a time, and the allocator reports
/// every map and unmap (on_mapping), so the engine follows the bytes when they move.
caching_allocator& without_aliased_bytes(caching_allocator& allocator) {
  const auto& options = allocator.options();
  if (options.segments == segment_kind::expandable && options.growth == expandable_growth::stitch) {
    throw usage_error(
        "tracked_allocator: the allocator uses expandable_growth:stitch, which maps the same physical "
        "bytes at a second virtual address while the first is in use; the hazard engine identifies bytes by "
        "virtual address and would miss races between the two. Use expandable_growth:remap (the default), "
        "map_new or settle, or segments:fixed, for an allocator the tracker watches: the tracker follows "
        "their physical bytes from one address to the next");
  }
  return allocator;
}

/// Where the allocator's physical bytes go, told to the engine.
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
    : allocator_(without_aliased_bytes(allocator)), hazards_(hazards) {
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
