// One stream's cache: its segments, their free blocks in bins, its statistics, and the lock
// that guards them all. Threads on different streams never share this lock on the fast path.
#pragma once

#include <array>
#include <cstddef>
#include <mutex>
#include <vector>

#include "alloc/block.hpp"
#include "alloc/free_bins.hpp"
#include "streamsafe/alloc/allocator_stats.hpp"

namespace streamsafe::detail {

class StreamImpl;

/// Every member but the constructor requires `mutex` held by the caller.
class stream_pool {
 public:
  explicit stream_pool(StreamImpl& stream) : stream_(&stream) {}
  ~stream_pool();
  stream_pool(const stream_pool&) = delete;
  stream_pool& operator=(const stream_pool&) = delete;

  mutable std::mutex mutex;

  [[nodiscard]] StreamImpl& stream() const noexcept { return *stream_; }

  /// A free block of at least `bytes` in `kind`'s bins, not removed; nullptr when none.
  [[nodiscard]] block* find(pool_kind kind, std::size_t bytes) const noexcept { return bins_[index(kind)].find(bytes); }
  /// Takes `candidate` (from find) out of the bins, splits off what `bytes` does not need, and
  /// marks it live for `user`.
  block* take(block* candidate, std::size_t bytes, stream_pool& user);
  /// Returns a live or pending block of a segment this pool owns; merges with free neighbours.
  void give_back(block* b);

  /// Adopts a new segment whose blocks are one free block.
  void adopt(segment* s);
  /// Removes `s` (wholly free) and its block from the pool; the caller releases the memory.
  void disown(segment* s);
  /// Splits `b` so that [b.address, b.address + bytes) is one block; the rest stays free.
  void split(block* b, std::size_t bytes);
  [[nodiscard]] const std::vector<segment*>& segments() const noexcept { return segments_; }

  /// Allocated/active/requested figures of blocks allocated on this stream.
  allocator_stats stats;

 private:
  [[nodiscard]] static std::size_t index(pool_kind kind) noexcept { return kind == pool_kind::small ? 0 : 1; }
  [[nodiscard]] block* new_block();
  void recycle(block* b) noexcept;
  /// Absorbs `right` (free, next to `left`, out of the bins) into `left`.
  void absorb(block* left, block* right) noexcept;

  StreamImpl* stream_;
  std::array<free_bins, 2> bins_;
  std::vector<segment*> segments_;
  block* spare_blocks_ = nullptr;  // recycled block records, linked through next_free
};

}  // namespace streamsafe::detail
