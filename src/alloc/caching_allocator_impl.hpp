// The mechanics behind caching_allocator (include/streamsafe/alloc/caching_allocator.hpp).
// Lock order: the repeat plan's mutex (iteration_plan.hpp), ladder_mutex_, retire_mutex_, a stream_pool's growth mutex, pools_mutex_, a
// stream_pool's (spin) mutex, then (leaf locks) stats_mutex_, history_mutex_, owners_' lock, the
// memory source's own lock. Two stream_pool locks are never held together; pending_frees' mutex
// is never held while taking another. Device calls that map, unmap, allocate, free, record or
// synchronize, and observer callbacks, run under no spin lock: the books are changed under the
// pool's mutex, the device calls made after it is released (under the growth mutex when they
// must not interleave with the pool's other slow paths). watcher_mutex_ is a leaf, held only to
// copy the watcher: on_mapping runs under a growth mutex at most, never under a spin lock.
//
// Streams. A pool holds a share of its stream, a record_stream'd block of each recorded stream,
// a pending free of each stream it waits for. So the allocator keeps a stream only while it has
// something of it; once the user's handles are gone and the pool's share is the last, its pool
// is retired (retire_abandoned): its cached memory goes back to the device, the stream goes, and
// the pool record is kept for the next stream (records are never deleted before the allocator,
// so a pointer to one read from a thread's cache or the owners' map stays valid).
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
#include "alloc/iteration_plan.hpp"
#include "alloc/memory_source.hpp"
#include "alloc/pending_frees.hpp"
#include "alloc/segment_owners.hpp"
#include "alloc/stitcher.hpp"
#include "alloc/stream_pool.hpp"
#include "streamsafe/alloc/allocator_observer.hpp"
#include "streamsafe/alloc/allocator_options.hpp"
#include "streamsafe/alloc/allocator_stats.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/alloc/trace_replay.hpp"
#include "streamsafe/event_pool.hpp"

namespace streamsafe::detail {

/// What to try when a request cannot be met, in order (the out-of-memory ladder).
enum class ladder_step { reclaim_completed, release_cached, wait_for_pending };

class caching_allocator_impl final : private plan_host {
 public:
  caching_allocator_impl(const Device& device, allocator_options options);
  ~caching_allocator_impl() override;

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
  void watch_mappings(std::shared_ptr<allocator_observer> watcher);

 private:
  [[nodiscard]] stream_pool& pool_for(StreamImpl& stream);
  [[nodiscard]] stream_pool& pool_for_slow(StreamImpl& stream);
  /// A pool for `stream`: a retired one when there is one. Caller holds pools_mutex_.
  [[nodiscard]] std::unique_ptr<stream_pool> new_pool(StreamImpl& stream);
  /// Retires the pools whose streams are abandoned (see stream_pool::abandoned) and idle: their
  /// memory goes back to the device. Runs when a pool is created and on the out-of-memory ladder;
  /// returns at once when another thread is retiring. A stream still running is retried then.
  void retire_abandoned();
  void retire(stream_pool& pool, const std::shared_ptr<StreamImpl>& share);
  void fold_retired_stats(const allocator_stats& gone);
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
  /// Frees a pool block; its repeat-plan sequence number.
  std::uint64_t deallocate_pooled(void* ptr);
  void deallocate_planned(void* ptr);
  [[nodiscard]] bool planned(const void* ptr) const noexcept { return plan_ != nullptr && plan_->owns(ptr); }

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
  [[nodiscard]] stitcher& stitcher_of(stream_pool& pool);  // caller holds pool.growth
  /// Takes the pool's wholly free stitched segments out of its books, their windows to `out`
  /// (to dissolve into the stitcher: their mappings stay, dormant). Caller holds pool.mutex.
  void take_free_stitched(stream_pool& pool, std::vector<stitched_window>& out);
  /// Memory taken out of a pool's books under its mutex, given back to the device after it.
  struct released_memory {
    std::vector<segment*> segments;  // disowned, wholly free: fixed, or expandable ranges
    struct chunk {
      segment* owner = nullptr;
      std::size_t index = 0;
    };
    std::vector<chunk> chunks;                  // free chunks of kept segments, marked unmapped
    std::vector<stitched_window> windows;       // of dissolved stitched segments
    bool stitcher_to_flush = false;             // the pool's stitcher unmaps and releases what it can
    [[nodiscard]] bool empty() const noexcept {
      return segments.empty() && chunks.empty() && windows.empty() && !stitcher_to_flush;
    }
    struct progress {  // how many of the chunks and segments the device took back
      std::size_t chunks = 0;
      std::size_t segments = 0;
    };
  };
  /// Takes the pool's wholly free fixed and stitched segments and the free chunks of its
  /// expandable ones out of its books. Caller holds pool.growth and pool.mutex.
  void take_free_memory(stream_pool& pool, released_memory& out);
  /// Takes every segment of an unused pool out of its books; false, taking nothing, when one is
  /// not wholly free. Caller holds pool.growth and pool.mutex.
  [[nodiscard]] bool take_all_memory(stream_pool& pool, released_memory& out);
  /// Marks up to `limit` free mapped chunks of `s` unmapped and lists them; how many.
  std::size_t take_free_chunks(segment& s, released_memory& out, std::size_t limit);
  /// Gives taken memory back to the device, after synchronizing the stream when `synchronize`;
  /// a chunk or segment whose release fails goes back into the books, then the first error is
  /// rethrown. Caller holds pool.growth, not pool.mutex.
  void give_back_memory(stream_pool& pool, released_memory& taken, bool synchronize);
  void book_given_back(stream_pool& pool, const released_memory& taken, const released_memory::progress& done);
  void restore_books(stream_pool& pool, released_memory& taken, const released_memory::progress& done);
  /// Dissolves windows into the pool's stitcher, unmaps what it holds unmapped-ready and
  /// releases its free chunks. Caller holds pool.growth; the stream is idle.
  void release_stitched(stream_pool& pool, std::vector<stitched_window>& windows);
  [[nodiscard]] block* cheapest_placement(stream_pool& pool, pool_kind kind, std::size_t rounded,
                                          block* found) const;  // caller holds pool.mutex
  [[nodiscard]] std::size_t fixed_segment_bytes(pool_kind kind, std::size_t rounded) const noexcept;
  /// A virtual range for a segment of `kind` able to hold `rounded` (see range_bytes).
  [[nodiscard]] segment* reserve_range(stream_pool& pool, pool_kind kind, std::size_t rounded);
  /// Bytes of the next range (next_range_bytes over the pool's ranges of `kind`): no stream
  /// reserves the device's whole address range before it needs it.
  [[nodiscard]] std::size_t range_bytes(const stream_pool& pool, pool_kind kind, std::size_t rounded) const;
  /// The chunks of live block `b` not mapped yet. Caller holds the owner's lock.
  [[nodiscard]] static std::vector<std::size_t> missing_chunks(const block& b);
  /// Maps `chunks` of live block `b`'s segment, then books them; chunks mapped before a failure
  /// are booked, then the error is rethrown. Caller holds pool.growth, not pool.mutex.
  void map_chunks(stream_pool& pool, block* b, const std::vector<std::size_t>& chunks);
  /// After a failed growth: `b` goes back free, the chunks mapped for it are unmapped, and the
  /// range reserved for it (`fresh`, when not null) is released when nothing else uses it.
  void undo_growth(stream_pool& pool, block* b, const std::vector<std::size_t>& mapped, segment* fresh);
  void run(ladder_step step);
  void release_cached();
  // plan_host: what the repeat plan asks of the allocator.
  void release_pool_cache() override;
  [[nodiscard]] std::uint64_t device_calls() const override { return source_->counts().total(); }
  void release_free_memory(stream_pool& pool);
  [[nodiscard]] std::size_t chunks_to_move(const stream_pool& pool, const block& fresh) const;  // holds pool.mutex
  void wait_for_pending();
  void reclaim(const std::vector<finished_free>& done);
  [[nodiscard]] std::string out_of_memory_message(std::size_t requested, std::size_t rounded, StreamImpl& stream) const;
  [[nodiscard]] std::size_t largest_free_block() const;

  // Books.
  static void note_allocated(allocator_stats& stats, const block& b, std::size_t requested) noexcept;
  static void note_freed(allocator_stats& stats, const block& b) noexcept;
  static void note_inactive(allocator_stats& stats, std::size_t bytes) noexcept;
  void note_reserved(std::int64_t bytes, std::int64_t segments) override;
  void note_host_sync() override;
  /// on_mapping to the observer and the watcher (allocator_mappings.cpp); a throw is reported.
  void tell_mapping(std::uintptr_t at, std::size_t bytes, mapping_change change) noexcept override;
  /// `unmapped` for each piece of physical memory segment `s` held (given back whole).
  void tell_released(const segment& s) noexcept;
  void remember(trace_action action, std::uintptr_t address, std::size_t bytes, stream_id stream);

  Device device_;
  allocator_options options_;
  std::unique_ptr<counting_memory_source> source_;
  bool expandable_;
  EventPool events_;
  std::uint64_t token_;  // identifies this allocator in the per-thread pool cache

  mutable std::mutex pools_mutex_;
  std::unordered_map<stream_id, std::unique_ptr<stream_pool>> pools_;
  std::vector<stream_pool*> pool_list_;
  std::vector<std::unique_ptr<stream_pool>> retired_pools_;  // records for the next streams
  std::mutex retire_mutex_;  // one thread at a time retires

  segment_owners owners_;

  pending_frees pending_;

  mutable std::mutex stats_mutex_;
  allocator_stats device_stats_;  // reserved, segments, counters, pending

  mutable std::mutex history_mutex_;
  std::vector<trace_event> history_;
  std::size_t history_next_ = 0;

  std::mutex ladder_mutex_;  // one thread at a time releases memory

  std::mutex watcher_mutex_;
  std::shared_ptr<allocator_observer> watcher_;  // hears on_mapping (see watch_mappings)

  std::unique_ptr<iteration_plan> plan_;  // null when off or without mapping; destroyed first
};

}  // namespace streamsafe::detail
