// The mechanics behind caching_allocator (include/streamsafe/alloc/caching_allocator.hpp).
// Lock order: the repeat plan's mutex (iteration_plan.hpp), ladder_mutex_, retire_mutex_, a stream_pool's growth mutex, pools_mutex_, a
// stream_pool's (spin) mutex, then (leaf locks) the books', the history's, owners_' lock, the
// memory source's own lock. Two stream_pool locks are never held together; pending_frees' mutex
// is never held while taking another. Device calls that map, unmap, allocate, free, record or
// synchronize, and observer callbacks, run under no spin lock: the books are changed under the
// pool's mutex, the device calls made after it is released (under the growth mutex when they
// must not interleave with the pool's other slow paths).
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

#include "alloc/allocation_history.hpp"
#include "alloc/allocator_books.hpp"
#include "alloc/block.hpp"
#include "alloc/counting_memory_source.hpp"
#include "alloc/growth_policy.hpp"
#include "alloc/iteration_plan.hpp"
#include "alloc/mapping_reports.hpp"
#include "alloc/memory_source.hpp"
#include "alloc/pool_memory.hpp"
#include "alloc/pending_frees.hpp"
#include "alloc/segment_owners.hpp"
#include "alloc/stream_pool.hpp"
#include "streamsafe/alloc/allocator_options.hpp"
#include "streamsafe/alloc/allocator_stats.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/alloc/trace_replay.hpp"
#include "streamsafe/event_pool.hpp"

namespace streamsafe::detail {

/// What to try when a request cannot be met, in order (the out-of-memory ladder).
enum class ladder_step { reclaim_completed, release_cached, wait_for_pending };

class caching_allocator_impl final : public plan_host {
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
  /// Attaches the one watcher of on_mapping (nullptr detaches); see caching_allocator.
  void watch_mappings(std::shared_ptr<allocator_observer> watcher) { mappings_.watch(std::move(watcher)); }

  [[nodiscard]] const Device& device() const noexcept { return device_; }
  [[nodiscard]] const allocator_options& options() const noexcept { return options_; }

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
  void run(ladder_step step);
  void release_cached();

 public:
  // plan_host: what the repeat plan asks of the allocator (public for the tests of lending).
  void release_pool_cache() override;
  void release_pool_cache_when_done() override;
  bool finish_releases() noexcept override;
  [[nodiscard]] std::uint64_t device_calls_on_this_thread() const override {
    return counting_memory_source::calls_on_this_thread();
  }
  [[nodiscard]] std::vector<lent_range> lend_free_memory(std::size_t most) override;
  [[nodiscard]] std::vector<lent_range> free_memory_view(std::size_t most) override;
  void take_back(const lent_range& range, const std::vector<StreamImpl*>& users) override;
  [[nodiscard]] bool within_slack(std::size_t more_live) const override;
  [[nodiscard]] std::size_t slack_beside(std::size_t more_live) const override;

 private:
  /// The bytes live on every stream now, plus `more_live`.
  [[nodiscard]] std::size_t live_beside(std::size_t more_live) const;
  /// The bytes remap_slack_percent lets reserved stay above `live`.
  [[nodiscard]] std::size_t slack_of(std::size_t live) const;
  /// The pools' largest runs of mapped free bytes, up to `most`; with `take`, lent to the plan.
  [[nodiscard]] std::vector<lent_range> gather_free_runs(std::size_t most, bool take);
  void note_reserved(std::int64_t bytes, std::int64_t segments) override { books_.note_reserved(bytes, segments); }
  void note_host_sync() override { books_.count(device_event::host_sync); }
  void tell_mapping(std::uintptr_t at, std::size_t bytes, mapping_change change) noexcept override {
    mappings_.tell(at, bytes, change);
  }
  [[nodiscard]] std::uint64_t device_calls() const override { return source_->total(); }
  [[nodiscard]] std::uint64_t host_syncs() const override { return books_.figures().num_host_syncs; }
  void release_free_memory(stream_pool& pool);
  // All of the pool's free memory, out of its books (what waited to go back included); caller
  // holds pool.growth.
  released_memory take_pool_cache(stream_pool& pool);
  void wait_for_pending();
  void reclaim(const std::vector<finished_free>& done);
  [[nodiscard]] std::string out_of_memory_message(std::size_t requested, std::size_t rounded, StreamImpl& stream) const;
  [[nodiscard]] std::size_t largest_free_block() const;

  Device device_;
  allocator_options options_;
  std::unique_ptr<counting_memory_source> source_;
  EventPool events_;
  std::uint64_t token_;  // identifies this allocator in the per-thread pool cache
  allocator_books books_;
  allocation_history history_;
  segment_owners owners_;
  mapping_reports mappings_;
  pool_memory memory_;
  std::unique_ptr<growth_policy> growth_;

  mutable std::mutex pools_mutex_;
  std::unordered_map<stream_id, std::unique_ptr<stream_pool>> pools_;
  std::vector<stream_pool*> pool_list_;
  std::vector<std::unique_ptr<stream_pool>> retired_pools_;  // records for the next streams
  std::mutex retire_mutex_;  // one thread at a time retires

  pending_frees pending_;

  std::mutex ladder_mutex_;  // one thread at a time releases memory

  std::unique_ptr<iteration_plan> plan_;  // null when off or without mapping; destroyed first
};

}  // namespace streamsafe::detail
