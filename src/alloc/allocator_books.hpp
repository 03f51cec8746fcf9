// The caching allocator's books: what each allocation and free changes in a stream's figures, and
// the device-wide counters (reserved memory, segments, the ladder's and the device's events).
// Placement (stream_pool, the growth policies, the ladder) tells the books what happened; the
// figures are read back only for stats() and snapshots, never to decide a placement (but for
// remap's slack, which reads the pool's own figures under its lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "alloc/block.hpp"
#include "streamsafe/alloc/allocator_stats.hpp"

namespace streamsafe::detail {

/// Per-stream figures: a pool's `stats`, changed under that pool's mutex (the caller's).
namespace stream_figures {
void note_allocated(allocator_stats& stats, const block& b, std::size_t requested) noexcept;
void note_freed(allocator_stats& stats, const block& b) noexcept;
/// The block stops being active: freed and no recorded stream holds it any more.
void note_inactive(allocator_stats& stats, std::size_t bytes) noexcept;
/// Adds the per-stream figures of `stream` into `total` (device-wide sums).
void add_to(allocator_stats& total, const allocator_stats& stream) noexcept;
/// Every counter's peak to its current value.
void reset_peaks(allocator_stats& stats) noexcept;
}  // namespace stream_figures

/// A device-wide event that the books count.
enum class device_event { alloc_retry, out_of_memory, cross_stream_reuse, sync_all_streams, host_sync };

/// The device-wide figures. Every member is thread-safe; the lock is a leaf (no other lock is
/// taken under it), so the books may be told from under any of the allocator's locks.
class allocator_books {
 public:
  /// Device memory taken (bytes > 0) or given back (bytes < 0), and segments made or ended.
  void note_reserved(std::int64_t bytes, std::int64_t segments);
  void count(device_event event);
  /// A retired stream's per-stream totals stay in the device's figures.
  void fold_retired(const allocator_stats& gone);
  void reset_peaks();
  void reset_reserved_peak();
  /// The device-wide figures (without the live streams' per-stream sums).
  [[nodiscard]] allocator_stats figures() const;

 private:
  mutable std::mutex mutex_;
  allocator_stats device_;
};

}  // namespace streamsafe::detail
