// A stream-aware caching allocator with record_stream, statistics, snapshots and an
// out-of-memory ladder (docs/allocator.md).
//
// Ordering. allocate(n, s) returns memory usable on s at once. A block freed by stream s is
// reusable at once by s (same-stream reuse, the fast path). Memory cached by another stream t is
// lent to s when s's own cache cannot serve it and the device has no more to give: s is made to
// wait, on the device, on an event recorded on t, so the host never stalls and memory cached by
// an idle stream is never stranded (cross_stream_reuse::borrow). A lent block goes back to t's
// cache once an event recorded on s at its free has completed.
//
// Lifetime. deallocate(p) ends the host's ownership. Without record_stream the block returns to
// its allocation stream's cache at once. With record_stream(p, t) a pooled event is recorded
// on each recorded stream at the free, and the block stays "pending" until they complete; it is
// reclaimed without blocking the host, by polling on later allocations and under memory
// pressure.
//
// Thread safety. Every member is thread-safe. Each stream has its own lock for its cache, so
// threads working on different streams do not contend on the fast path. No device call that
// may block (map, unmap, free, synchronize) and no observer callback runs under that lock: a
// thread that frees into a stream's cache never waits for another thread's device call.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "streamsafe/alloc/allocator_options.hpp"
#include "streamsafe/alloc/allocator_stats.hpp"
#include "streamsafe/alloc/memory_resource.hpp"
#include "streamsafe/device.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe {

namespace detail {
class caching_allocator_impl;
}

/// Where a live pointer came from; see caching_allocator::block_of.
struct block_info {
  void* base = nullptr;
  std::size_t size = 0;       ///< rounded size of the block
  std::size_t requested = 0;  ///< size asked for
  stream_id stream{};         ///< allocation stream
};

/// Streams. A Stream may be destroyed before the allocator, with blocks allocated on it still
/// live and with frees recorded on it (record_stream) still pending: deallocate, record_stream
/// and block_of stay valid for those blocks, and the rules above hold. The allocator keeps the
/// underlying stream (not the handle) only while it needs it: while a block allocated on it is
/// live or pending, while a pending free waits for it, and until its work is done. Then, at the
/// next stream's first allocation or on the out-of-memory ladder (empty_cache, or an
/// allocation the device cannot serve), the stream's cache goes back to the device and the
/// stream is let go. So a program that makes a stream per request holds the memory and address
/// space of its live streams, not of every stream it ever made.
class caching_allocator {
 public:
  explicit caching_allocator(const Device& device, allocator_options options = alloc_options_from_env());
  /// Waits for pending frees and synchronizes the streams that still have cached memory (not the
  /// device: other streams' work goes on), then returns all of it. Live blocks at destruction
  /// are a leak of the caller: their memory is returned with the rest.
  ~caching_allocator();
  caching_allocator(const caching_allocator&) = delete;
  caching_allocator& operator=(const caching_allocator&) = delete;

  /// `bytes` rounded up to 512, usable on `stream` at once. 0 bytes gives nullptr. Throws
  /// usage_error for a size beyond any device (2^47 bytes) or a stream of another device, and
  /// out_of_memory after the ladder (reclaim, release cached, wait for pending frees, retry).
  [[nodiscard]] void* allocate(std::size_t bytes, StreamRef stream);
  /// Returns `ptr` to the cache (see Lifetime above). nullptr is ignored. A pointer not live in
  /// this allocator (double free, foreign) throws usage_error and changes nothing.
  void deallocate(void* ptr);
  /// `stream` also uses the block at `ptr` (the pointer allocate returned). Recording
  /// the allocation stream does nothing. A pointer not live here throws usage_error.
  void record_stream(void* ptr, StreamRef stream);

  /// Reclaims pending frees whose streams finished, without blocking.
  void process_pending_frees();
  /// Waits for pending frees, synchronizes the streams with cached memory and gives every
  /// free segment (or free mapped chunk) back to the device.
  void empty_cache();

  [[nodiscard]] allocator_stats stats() const;
  [[nodiscard]] allocator_stats stats(StreamRef stream) const;
  /// Sets the peaks of every counter to their current values. The figures only: the peaks that
  /// growth decisions read (the device's and each stream's live bytes) are kept apart and stand,
  /// so calling it every iteration changes no placement and no device call. Thread-safe.
  void reset_peak_stats();
  /// Sets only reserved_bytes' peak to its current value: for measuring a phase of a workload
  /// (an iteration).
  void reset_reserved_peak();
  /// The live block at `ptr` (as allocate returned it); throws usage_error when not live.
  [[nodiscard]] block_info block_of(const void* ptr) const;
  /// The stream the live block at `ptr` was allocated on; usage_error when not live.
  [[nodiscard]] StreamRef allocation_stream(const void* ptr) const;
  /// Segments and their blocks as one JSON object (docs/allocator.md gives the schema).
  [[nodiscard]] std::string snapshot_json() const;
  /// The history ring buffer as a trace in the `replay` format (GUIDE.md section 5).
  [[nodiscard]] std::string history_csv() const;

  [[nodiscard]] const Device& device() const;
  [[nodiscard]] const allocator_options& options() const;

  /// `watcher` hears every allocator_observer::on_mapping of this allocator, after
  /// options().observer (the other callbacks go to that one only); nullptr detaches it. One at a
  /// time: attaching while another is attached throws usage_error. A callback running when the
  /// watcher is detached finishes on its own reference (the allocator shares ownership while it
  /// calls). Thread-safe. hazard::tracked_allocator attaches one to give the engine the identity
  /// of the bytes.
  void watch_mappings(std::shared_ptr<allocator_observer> watcher);

 private:
  std::unique_ptr<detail::caching_allocator_impl> impl_;
};

static_assert(stream_ordered_resource<caching_allocator>,
              "caching_allocator does not satisfy stream_ordered_resource");

}  // namespace streamsafe
