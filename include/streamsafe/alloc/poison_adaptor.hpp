// A debug adaptor that makes a missing record_stream corrupt every time instead of sometimes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/alloc/memory_resource.hpp"
#include "streamsafe/alloc/resource_ref.hpp"
#include "streamsafe/device.hpp"

namespace streamsafe {

namespace detail {
class poison_state;
}

/// Over any stream_ordered_resource (the upstream). At deallocate, the block's bytes (as
/// requested) are filled with `pattern` at the point the block becomes reusable, then the block
/// is handed back to the upstream, which reuses it as early as its rules allow.
///
/// Ordering. The fill runs after the work enqueued before the deallocate on the allocation
/// stream and on every stream passed to record_stream, and before the block can be handed out
/// again. Without recorded streams it is ordinary work on the allocation stream (a same-stream
/// free is reused at once, as upstream); with them it runs on the adaptor's own stream, which
/// waits on each of them, and the block is recorded upstream on that stream, so no user stream
/// is made to wait on another. A correct program never sees the pattern; a reader on a stream
/// that was not recorded sees the pattern or the next owner's data, never the old contents.
///
/// Lifetime. The upstream must outlive the adaptor. The adaptor knows the blocks allocated
/// through it: deallocate and record_stream of any other pointer throw usage_error and change
/// nothing. Each live block keeps its allocation stream and its recorded streams (not the
/// handles: the underlying streams) until its free, so a Stream may be destroyed first.
/// Thread safety: every member is thread-safe when the upstream's are.
class poison_adaptor {
 public:
  static constexpr std::uint8_t default_pattern = 0xA5;

  /// Over `upstream`, whose memory is on `device` (the adaptor's own stream is made there).
  poison_adaptor(resource_ref upstream, const Device& device, std::uint8_t pattern = default_pattern);
  /// Over a caching allocator, on its device.
  explicit poison_adaptor(caching_allocator& upstream, std::uint8_t pattern = default_pattern)
      : poison_adaptor(resource_ref(upstream), upstream.device(), pattern) {}
  ~poison_adaptor();
  poison_adaptor(const poison_adaptor&) = delete;
  poison_adaptor& operator=(const poison_adaptor&) = delete;

  /// As upstream's.
  [[nodiscard]] void* allocate(std::size_t bytes, StreamRef stream);
  /// As upstream's; a pointer not live here throws usage_error and records nothing.
  void record_stream(void* ptr, StreamRef stream);
  /// nullptr is ignored; a pointer not live here throws usage_error and changes nothing.
  void deallocate(void* ptr);
  [[nodiscard]] std::uint8_t pattern() const noexcept { return pattern_; }
  [[nodiscard]] resource_ref upstream() const noexcept { return upstream_; }

 private:
  resource_ref upstream_;
  std::uint8_t pattern_;
  std::unique_ptr<detail::poison_state> state_;
};

static_assert(stream_ordered_resource<poison_adaptor>, "poison_adaptor does not satisfy stream_ordered_resource");

}  // namespace streamsafe
