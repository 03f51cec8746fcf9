// The concept every streamsafe allocator and adaptor satisfies: stream-ordered allocation with
// lifetime extension by record_stream.
#pragma once

#include <concepts>
#include <cstddef>

#include "streamsafe/stream.hpp"

namespace streamsafe {

/// A stream-ordered resource. What each call guarantees:
///
/// Ordering.
///   allocate(n, s): the pointer may be used on `s` at once, by work enqueued after the call.
///     Using it on stream t is undefined unless t first waits on an event recorded on s after
///     the allocation. 0 bytes may give nullptr.
///   deallocate(p): the block may be reused at once by work ordered after the allocation
///     stream's work so far (the allocation stream is the one p was allocated on); work enqueued
///     before the call on the streams passed to record_stream(p, t) completes first. nullptr is
///     ignored.
///   record_stream(p, t): t also uses p; the memory is not reused until t's work enqueued before
///     the deallocate completes. Recording the allocation stream does nothing.
/// Lifetime. The host owns p from allocate until deallocate; a pointer not live in the resource
///   (a double free, a foreign pointer) throws usage_error and changes nothing. Stream lifetime
///   (every resource and adaptor): a stream may be destroyed before the blocks allocated on it
///   or recorded with it are freed, and while its work still runs. The rules above still hold:
///   the resource keeps what it needs of the stream (a share of the underlying stream, never a
///   raw pointer that the handle's end leaves dangling) until the blocks are freed and the
///   stream's work enqueued before the frees is done. An adaptor's upstream outlives it.
/// Threads. Every call may be made from any thread, concurrently with any other call, for
///   different pointers; calls for the same pointer are ordered by the caller (a deallocate
///   races with nothing for its pointer). No call blocks the host on device work on the fast
///   path; where one may (a resource's out-of-memory path), its header says so.
template <typename R>
concept stream_ordered_resource = requires(R& resource, std::size_t bytes, void* ptr, StreamRef stream) {
  { resource.allocate(bytes, stream) } -> std::same_as<void*>;
  { resource.deallocate(ptr) } -> std::same_as<void>;
  { resource.record_stream(ptr, stream) } -> std::same_as<void>;
};

}  // namespace streamsafe
