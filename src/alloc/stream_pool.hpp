// One stream's cache: its segments, their free blocks in bins, its statistics, and the locks
// that guard them. Threads on different streams never share a lock on the fast path.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "alloc/address_map.hpp"
#include "alloc/block.hpp"
#include "alloc/free_bins.hpp"
#include "common/spin_mutex.hpp"
#include "streamsafe/alloc/allocator_stats.hpp"

namespace streamsafe::detail {

class StreamImpl;

/// Every member but the constructor, `growth` and `stream` requires `mutex` held by the caller.
class stream_pool {
 public:
  explicit stream_pool(std::shared_ptr<StreamImpl> stream) : stream_(std::move(stream)) {}
  ~stream_pool();
  stream_pool(const stream_pool&) = delete;
  stream_pool& operator=(const stream_pool&) = delete;

  /// Guards the books: bins, blocks, segments, stats. Held for bookkeeping only: no device call
  /// (map, unmap, synchronize, event record) and no observer callback runs under it.
  mutable spin_mutex mutex;
  /// Serializes the pool's slow path (growing, moving and releasing chunks, retiring): a thread
  /// waiting here sleeps while the holder maps, unmaps or synchronizes. Taken before `mutex`.
  std::mutex growth;

  /// The stream served; the pool holds a share of it (see caching_allocator_impl::retire_abandoned).
  /// Constant while the pool serves it: readable without a lock.
  [[nodiscard]] StreamImpl& stream() const noexcept { return *stream_; }
  [[nodiscard]] const std::shared_ptr<StreamImpl>& stream_share() const noexcept { return stream_; }
  /// Whether the pool's share is the stream's last one: the user destroyed it, and no pending free
  /// or record_stream'd block refers to it, so no work can be enqueued on it any more. A stream
  /// that no handle owns (a device's default stream) is never abandoned.
  [[nodiscard]] bool abandoned() const noexcept { return stream_.use_count() == 1; }
  /// Whether no block of the pool's segments is live or pending, and no block allocated on its
  /// stream is (borrowed blocks included).
  [[nodiscard]] bool unused() const noexcept;
  /// Stops serving its stream (the pool holds no segment any more): returns the pool's share,
  /// for the caller to drop outside the locks (destroying a stream is a device call).
  [[nodiscard]] std::shared_ptr<StreamImpl> unbind() noexcept;
  /// Serves `stream` from now on; after unbind only.
  void rebind(std::shared_ptr<StreamImpl> stream) noexcept { stream_ = std::move(stream); }

  /// A free block of at least `bytes` in `kind`'s bins, not removed; nullptr when none.
  [[nodiscard]] block* find(pool_kind kind, std::size_t bytes) const noexcept { return bins_[index(kind)].find(bytes); }
  /// The fast path's search: as find, but a block that would have to be split (not within
  /// 1/32 of `bytes`) is taken only after the deferred merges are done, so that deferring them
  /// never changes where a request is placed (fragmentation stays that of merging at once).
  [[nodiscard]] block* find_close_fit(pool_kind kind, std::size_t bytes);
  /// A free block whose `bytes` a request would take (see placement) are mapped, not removed;
  /// when find has none, merges the blocks whose merge was deferred and looks again (the slow
  /// path's search, before memory is grown or borrowed). nullptr when none.
  [[nodiscard]] block* find_mapped(pool_kind kind, std::size_t bytes);
  /// Takes `candidate` (from find) out of the bins, places `bytes` in it (see placement), splits
  /// off what they do not need, and marks them live for `user`. The live block is listed here,
  /// in its segment's pool.
  block* take(block* candidate, std::size_t bytes, stream_pool& user);
  /// As take, with the bytes placed at `at` (in `candidate`; at its start, or where the head
  /// left free before it is a block of its own).
  block* take_at(block* candidate, std::uintptr_t at, std::size_t bytes, stream_pool& user);
  /// The live block at `address` in this pool's segments, unlisted (its free follows); nullptr
  /// when there is none.
  [[nodiscard]] block* unlist_live(std::uintptr_t address) noexcept { return live_.take(address); }
  /// The live block at `address` in this pool's segments; nullptr when there is none.
  [[nodiscard]] block* find_live(std::uintptr_t address) const noexcept { return live_.find(address); }
  /// Returns a live or pending block of a segment this pool owns; merges with free neighbours.
  void give_back(block* b);
  /// Returns a live block freed on its own stream, without merging it yet: the next request
  /// of its size takes it back whole, so a same-stream alloc/free cycle neither splits nor
  /// merges. The merge happens when a search finds nothing close, when memory is released, or once
  /// `deferred_merge_limit` blocks wait (so free space fragments by a bounded amount).
  void cache(block* b);
  /// Both pools' bins place by best fit from now on (free_bins::use_best_fit).
  void use_best_fit() noexcept {
    for (free_bins& bins : bins_) bins.use_best_fit();
  }
  /// Merges every block whose merge was deferred with its free neighbours.
  void merge_deferred();

  /// Adopts a new segment whose blocks are one free block.
  void adopt(segment* s);
  /// Removes `s` (wholly free) and its block from the pool; the caller releases the memory.
  void disown(segment* s);
  /// Splits `b` so that [b.address, b.address + bytes) is one block; the rest stays free.
  void split(block* b, std::size_t bytes);
  [[nodiscard]] const std::vector<segment*>& segments() const noexcept { return segments_; }

  /// Allocated/active/requested figures of blocks allocated on this stream.
  allocator_stats stats;
  /// Remap growth: another stream took free chunks of this pool's (gave_chunks), and this stream
  /// then had to grow again below its own peak, so they take no more of them (keeps_chunks):
  /// a stream that is used again keeps what its peak needs, instead of its chunks being moved
  /// to each new stream and back. Both are cleared when a growth takes the stream past its own peak.
  bool gave_chunks = false;
  bool keeps_chunks = false;
  /// The stream's peak live bytes before the last reset_peak_stats: growth measures the
  /// stream's own peak with it, so a caller resetting the figures (each iteration, say) changes
  /// no placement. Under the pool's mutex.
  std::size_t peak_live_before_reset = 0;

 private:
  static constexpr std::size_t deferred_merge_limit = 16;
  [[nodiscard]] static std::size_t index(pool_kind kind) noexcept { return kind == pool_kind::small ? 0 : 1; }
  /// Marks `b` free and unowned (its neighbours untouched).
  static void mark_free(block* b) noexcept;
  /// Merges free `b` (out of the bins) with its free neighbours and bins the result.
  void merge_and_bin(block* b);
  /// find; when `accept` rejects what it found and merges were deferred, merges them and finds again.
  template <typename Accept>
  [[nodiscard]] block* find_merging(pool_kind kind, std::size_t bytes, Accept accept);
  [[nodiscard]] block* new_block();
  void recycle(block* b) noexcept;
  /// Absorbs `right` (free, next to `left`, out of the bins) into `left`.
  void absorb(block* left, block* right) noexcept;
  /// Absorbs the run of free blocks right of `b` (out of the bins, or about to leave them).
  void absorb_free_right(block* b) noexcept;

  std::shared_ptr<StreamImpl> stream_;
  address_map live_;  // live blocks of this pool's segments, whichever stream uses them
  std::array<free_bins, 2> bins_;
  std::vector<segment*> segments_;
  block* spare_blocks_ = nullptr;  // recycled block records, linked through next_free
  // Blocks cached unmerged. An entry may be stale (taken again, absorbed, recycled): its
  // awaiting_merge flag says whether it still waits. Records are recycled, never deleted,
  // while the pool lives, so a stale entry is safe to read.
  std::vector<block*> deferred_merges_;
};

/// The most bytes ever live on the pool's stream, whatever reset_peak_stats did since: what the
/// stream's own budget is measured against. Caller holds pool.mutex.
[[nodiscard]] inline std::size_t own_peak_live(const stream_pool& pool) noexcept {
  const auto since_reset = static_cast<std::size_t>(pool.stats.allocated_bytes.peak);
  return since_reset > pool.peak_live_before_reset ? since_reset : pool.peak_live_before_reset;
}

}  // namespace streamsafe::detail
