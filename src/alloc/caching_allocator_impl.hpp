// The mechanics behind caching_allocator (include/streamsafe/alloc/caching_allocator.hpp).
// Lock order: a stream_pool's mutex, then (leaf locks) stats_mutex_, history_mutex_, owners_'
// lock, the memory source's own lock. Two stream_pool locks are never held together; pools_mutex_ and
// pending_frees' mutex are never held while taking a stream_pool lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "alloc/block.hpp"
#include "alloc/counting_memory_source.hpp"
#include "alloc/memory_source.hpp"
#include "alloc/pending_frees.hpp"
#include "alloc/segment_owners.hpp"
#include "alloc/stitcher.hpp"
#include "alloc/stream_pool.hpp"
#include "streamsafe/alloc/allocator_options.hpp"
#include "streamsafe/alloc/allocator_stats.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/alloc/trace_replay.hpp"
#include "streamsafe/event_pool.hpp"

namespace streamsafe::detail {

/// What to try when a request cannot be met, in order (the out-of-memory ladder).
enum class ladder_step { reclaim_completed, release_cached, wait_for_pending };

class caching_allocator_impl {
 public:
  caching_allocator_impl(const Device& device, allocator_options options);
  ~caching_allocator_impl();

  void* allocate(std::size_t bytes, StreamRef stream);
  void deallocate(void* ptr);
  void record_stream(void* ptr, StreamRef stream);
  void process_pending_frees(poll_mode mode);
  void empty_cache();

  [[nodiscard]] allocator_stats stats() const;
  [[nodiscard]] allocator_stats stats(StreamRef stream) const;
  void reset_peak_stats();
  void reset_reserved_peak();
  [[nodiscard]] block_info block_of(const void* ptr) const;
  [[nodiscard]] StreamRef allocation_stream(const void* ptr) const;
  [[nodiscard]] std::string snapshot_json() const;
  [[nodiscard]] std::string history_csv() const;

  [[nodiscard]] const Device& device() const noexcept { return device_; }
  [[nodiscard]] const allocator_options& options() const noexcept { return options_; }

 private:
  [[nodiscard]] stream_pool& pool_for(StreamImpl& stream);
  [[nodiscard]] stream_pool& pool_for_slow(StreamImpl& stream);
  /// Keeps `stream` alive while the allocator lives: pools and pending frees use their streams
  /// after the user's handles may be gone.
  void retain(StreamImpl& stream);
  [[nodiscard]] stream_pool* find_pool(stream_id id) const;
  [[nodiscard]] std::vector<stream_pool*> all_pools() const;
  [[nodiscard]] pool_kind kind_for(std::size_t rounded) const noexcept;
  /// A live block with its segment's pool locked (block fields are guarded by that lock).
  struct locked_block {
    block* live = nullptr;
    std::unique_lock<spin_mutex> lock;
  };
  enum class lookup { find, unlist };
  /// The live block at `ptr`: first in the pool this thread used last (one lock, no shared
  /// table), else in the pool owning the segment there. Throws usage_error naming `call`.
  [[nodiscard]] locked_block lock_live(const void* ptr, const char* call, lookup how) const;
  void free_pending(block* b, stream_pool& owner, std::unique_lock<spin_mutex> owner_lock);

  // Slow path.
  [[nodiscard]] block* allocate_slow(stream_pool& pool, pool_kind kind, std::size_t rounded, std::size_t requested);
  [[nodiscard]] block* obtain(stream_pool& pool, pool_kind kind, std::size_t rounded);
  [[nodiscard]] block* take_own(stream_pool& pool, pool_kind kind, std::size_t rounded);
  [[nodiscard]] block* borrow(stream_pool& pool, pool_kind kind, std::size_t rounded);
  [[nodiscard]] block* grow(stream_pool& pool, pool_kind kind, std::size_t rounded);
  /// A new segment into the pool and the owners' map (frees from other threads find it there);
  /// and back out. Caller holds pool.mutex.
  void adopt_segment(stream_pool& pool, segment* s);
  void disown_segment(stream_pool& pool, segment* s);
  [[nodiscard]] block* grow_fixed(stream_pool& pool, pool_kind kind, std::size_t rounded);
  [[nodiscard]] block* grow_expandable(stream_pool& pool, pool_kind kind, std::size_t rounded);
  [[nodiscard]] block* grow_stitched(stream_pool& pool, pool_kind kind, std::size_t rounded);
  [[nodiscard]] bool stitching() const noexcept { return expandable_ && options_.growth == expandable_growth::stitch; }
  /// Whether free block `b` may serve a request of `rounded` bytes: a stitched large segment is
  /// not split for a request much smaller than it (a segment of its own packs better, and the
  /// larger one is dissolved for it when wholly free).
  [[nodiscard]] bool may_take(const block& b, pool_kind kind, std::size_t rounded) const noexcept {
    return kind == pool_kind::small || !b.owner->stitched || b.size - rounded <= rounded / 32;
  }
  [[nodiscard]] stitcher& stitcher_of(stream_pool& pool);  // caller holds pool.mutex
  /// Gives the bytes of the pool's wholly free stitched segments back to its chunks; their
  /// mappings stay, dormant (see stitcher). Caller holds pool.mutex.
  void dissolve_free_segments(stream_pool& pool);
  /// Dissolves, unmaps and releases what the pool's stitched memory holds free; the stream is
  /// synchronized. Caller holds pool.mutex.
  void release_stitched(stream_pool& pool);
  [[nodiscard]] block* cheapest_placement(stream_pool& pool, pool_kind kind, std::size_t rounded,
                                          block* found) const;  // caller holds pool.mutex
  [[nodiscard]] std::size_t fixed_segment_bytes(pool_kind kind, std::size_t rounded) const noexcept;
  void map_block(block* b);                       // caller holds the owner's lock
  void run(ladder_step step);
  void release_cached();
  void release_free_memory(stream_pool& pool);    // caller holds pool.mutex, stream synced
  void unmap_free_chunks(segment& s);             // caller holds the owner's lock
  [[nodiscard]] std::size_t chunks_to_move(const stream_pool& pool, const block& fresh) const;  // holds pool.mutex
  void unmap_free_chunks(stream_pool& pool, std::size_t chunks);  // up to `chunks`; caller holds pool.mutex
  void unmap_chunk(segment& s, block& holder, std::size_t chunk);  // caller holds the owner's lock
  void wait_for_pending();
  void reclaim(const std::vector<finished_free>& done);
  [[nodiscard]] std::string out_of_memory_message(std::size_t requested, std::size_t rounded, StreamImpl& stream) const;
  [[nodiscard]] std::size_t largest_free_block() const;

  // Books.
  static void note_allocated(allocator_stats& stats, const block& b, std::size_t requested) noexcept;
  static void note_freed(allocator_stats& stats, const block& b) noexcept;
  static void note_inactive(allocator_stats& stats, std::size_t bytes) noexcept;
  void note_reserved(std::int64_t bytes, std::int64_t segments);
  void note_host_sync();
  void remember(trace_action action, std::uintptr_t address, std::size_t bytes, stream_id stream);

  Device device_;
  std::mutex retained_mutex_;
  std::unordered_map<stream_id, std::shared_ptr<StreamImpl>> retained_;  // destroyed after the pools
  allocator_options options_;
  std::unique_ptr<counting_memory_source> source_;
  bool expandable_;
  EventPool events_;
  std::uint64_t token_;  // identifies this allocator in the per-thread pool cache

  mutable std::mutex pools_mutex_;
  std::unordered_map<stream_id, std::unique_ptr<stream_pool>> pools_;
  std::vector<stream_pool*> pool_list_;

  segment_owners owners_;

  pending_frees pending_;

  mutable std::mutex stats_mutex_;
  allocator_stats device_stats_;  // reserved, segments, counters, pending

  mutable std::mutex history_mutex_;
  std::vector<trace_event> history_;
  std::size_t history_next_ = 0;

  std::mutex ladder_mutex_;  // one thread at a time releases memory
};

}  // namespace streamsafe::detail
