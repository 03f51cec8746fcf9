// The concept every streamsafe allocator satisfies: stream-ordered allocation with lifetime
// extension by record_stream.
#pragma once

#include <concepts>
#include <cstddef>

#include "streamsafe/stream.hpp"

namespace streamsafe {

/// allocate(n, s): the pointer may be used on `s` at once. Using it on stream t is undefined
///   unless t first waits on an event recorded on s after the allocation.
/// deallocate(p): the block may be reused at once by work ordered after the allocation stream's
///   work so far; streams passed to record_stream(p, t) are waited for first.
/// record_stream(p, t): t also uses p; the memory is not reused until t's work enqueued before
///   the deallocate completes.
/// Stream lifetime (every resource and adaptor): a stream may be destroyed before the blocks
///   allocated on it or recorded with it are freed, and while its work still runs. The rules
///   above still hold: the resource keeps what it needs of the stream (a share of the underlying
///   stream, never a raw pointer that the handle's end leaves dangling) until the blocks are
///   freed and the stream's work enqueued before the frees is done.
template <typename R>
concept stream_ordered_resource = requires(R& resource, std::size_t bytes, void* ptr, StreamRef stream) {
  { resource.allocate(bytes, stream) } -> std::same_as<void*>;
  { resource.deallocate(ptr) } -> std::same_as<void>;
  { resource.record_stream(ptr, stream) } -> std::same_as<void>;
};

}  // namespace streamsafe
