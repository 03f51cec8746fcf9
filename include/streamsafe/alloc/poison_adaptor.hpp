// A debug adaptor that makes a missing record_stream corrupt every time instead of sometimes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/alloc/memory_resource.hpp"

namespace streamsafe {

/// At deallocate, the block is filled with `pattern` on its allocation stream, then handed back
/// to the caching allocator, which reuses it as early as its rules allow (at once on that
/// stream; after an event wait on another). A reader on a stream that was not recorded with
/// record_stream then sees the pattern or the new owner's data, never the old contents.
/// Ordering, lifetime and thread safety are the upstream's; the fill is ordinary work on the
/// allocation stream, enqueued before the block can be handed out again.
class poison_adaptor {
 public:
  static constexpr std::uint8_t default_pattern = 0xA5;

  explicit poison_adaptor(caching_allocator& upstream, std::uint8_t pattern = default_pattern)
      : upstream_(upstream), pattern_(pattern) {}

  [[nodiscard]] void* allocate(std::size_t bytes, StreamRef stream) { return upstream_.allocate(bytes, stream); }
  void record_stream(void* ptr, StreamRef stream) { upstream_.record_stream(ptr, stream); }
  void deallocate(void* ptr) {
    if (ptr == nullptr) return;
    const block_info block = upstream_.block_of(ptr);
    upstream_.allocation_stream(ptr).fill(block.base, pattern_, block.size);
    upstream_.deallocate(ptr);
  }
  [[nodiscard]] std::uint8_t pattern() const noexcept { return pattern_; }
  [[nodiscard]] caching_allocator& upstream() noexcept { return upstream_; }

 private:
  caching_allocator& upstream_;
  std::uint8_t pattern_;
};

static_assert(stream_ordered_resource<poison_adaptor>, "poison_adaptor does not satisfy stream_ordered_resource");

}  // namespace streamsafe
