// Remap growth (expandable_growth::remap): while reserved bytes stay within the peak live bytes
// plus the slack, the block takes the bins' best fit and its missing chunks are mapped; beyond,
// it goes where it needs the fewest new chunks, and that many wholly free mapped chunks are
// unmapped (after synchronizing the stream that freed them) before the new ones are mapped, so
// reserved memory follows live memory. A stream climbing past its own peak is held to the
// device's budget too: the pools' mapped bytes together against the device's peak live bytes, so
// streams that peak at different times share physical memory (its own free chunks go first,
// then other streams') instead of each keeping the high-water mark of its own peak. At a level
// it reached before, a stream's budget is its own: a loop whose streams peak in turn settles
// (each keeps what its peak needs) instead of moving chunks between them every iteration.
#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "alloc/mapped_growth.hpp"

namespace streamsafe::detail {

namespace {

class remap_growth final : public mapped_growth {
 public:
  using mapped_growth::mapped_growth;

 protected:
  block* place(stream_pool& pool, pool_kind kind, std::size_t rounded, block* /*found*/) const override {
    pool.merge_deferred();  // whole free chunks show only in merged blocks
    block* found = pool.find(kind, rounded);
    // Within the budget, mapping what the best fit lacks moves nothing, and the best fit packs
    // tightest. Beyond it every missing chunk is a move (an unmap, a map and a stream
    // synchronization): the bins' choice is blind to mapping, and a hole with more of its chunks
    // still mapped (or a fully mapped block of another size class) needs fewer. A scan of the
    // blocks, on that path only.
    std::size_t cheapest_cost = unmapped_chunks(*found->owner, placement(*found, rounded), rounded);
    if (cheapest_cost <= chunks_within_budget(pool, rounded, found->owner->granularity)) return found;
    block* cheapest = found;
    for (segment* s : pool.segments()) {
      if (!s->expandable || s->kind != kind) continue;
      for (block* b = s->first; b != nullptr && cheapest_cost != 0; b = b->next) {
        if (b->state != block_state::free || b->size < rounded) continue;
        if (const std::size_t cost = unmapped_chunks(*s, placement(*b, rounded), rounded); cost < cheapest_cost) {
          cheapest = b;
          cheapest_cost = cost;
        }
      }
    }
    return cheapest;
  }

  void take_chunks_to_move(stream_pool& pool, const block& fresh, released_memory& moved) const override {
    std::size_t chunks = chunks_to_move(pool, fresh);
    for (segment* s : pool.segments()) {
      if (chunks == 0) break;
      if (s->expandable && s != fresh.owner) chunks -= pool_memory::take_free_chunks(*s, moved, chunks);
    }
    if (chunks != 0) pool_memory::take_free_chunks(*fresh.owner, moved, chunks);
  }

  void make_room_elsewhere(stream_pool& pool, const block& fresh, std::size_t chunks_to_map) const override {
    const std::vector<stream_pool*> pools = context_.all_pools();
    // One pool: its moves kept the device within its budget; below its own peak, a stream's
    // budget is its own.
    if (pools.size() < 2 || !climbs_past_own_peak(pool, fresh.size, false)) return;
    const std::size_t granularity = fresh.owner->granularity;
    const std::size_t allowed = device_budget(pools, nullptr, fresh.size);
    const std::size_t mapped = device_mapped(pools, nullptr) + chunks_to_map * granularity;
    if (mapped <= allowed) return;
    std::size_t excess = (mapped - allowed + granularity - 1) / granularity;
    for (stream_pool* other : pools) {
      if (excess == 0) break;
      if (other == &pool) continue;
      // A pool growing or releasing is skipped: waiting for it while this pool's growth lock is
      // held could deadlock with it waiting for this one.
      std::unique_lock slow(other->growth, std::try_to_lock);
      if (slow.owns_lock()) excess -= give_back_free_chunks(*other, excess);
    }
  }

 private:
  [[nodiscard]] std::size_t chunks_to_move(stream_pool& pool, const block& fresh) const {
    const segment& s = *fresh.owner;
    const std::size_t needed = unmapped_chunks(s, fresh.address, fresh.size);
    const std::size_t may_map = chunks_within_budget(pool, fresh.size, s.granularity);
    return needed > may_map ? needed - may_map : 0;
  }

  /// Chunks that may still be mapped, once `more` bytes are live beside what is: the pool's
  /// reserved bytes stay within the slack above its peak live bytes, and while the stream climbs
  /// past that peak beside other streams, the pools' together within the slack above the
  /// device's. Measured against peaks, not the current live bytes, so that a workload that
  /// repeats its pattern settles and stops moving chunks. Caller holds pool.mutex.
  [[nodiscard]] std::size_t chunks_within_budget(stream_pool& pool, std::size_t more, std::size_t granularity) const {
    const std::vector<stream_pool*> pools = context_.all_pools();
    const auto chunks_left = [granularity](std::size_t allowed, std::size_t mapped) {
      return allowed > mapped ? (allowed - mapped) / granularity : 0;
    };
    const std::vector<stream_pool*> own{&pool};
    const std::size_t own_chunks = chunks_left(device_budget(own, &pool, more), device_mapped(own, &pool));
    if (pools.size() < 2 || !climbs_past_own_peak(pool, more, true)) return own_chunks;
    return std::min(own_chunks, chunks_left(device_budget(pools, &pool, more), device_mapped(pools, &pool)));
  }

  /// Whether `more` bytes live beside the stream's take it past its own peak (the block being
  /// grown is counted live once the growth is done: compare before it). `held`: caller holds
  /// pool.mutex.
  [[nodiscard]] static bool climbs_past_own_peak(stream_pool& pool, std::size_t more, bool held) {
    std::unique_lock lock(pool.mutex, std::defer_lock);
    if (!held) lock.lock();
    return static_cast<std::size_t>(pool.stats.allocated_bytes.current) + more >
           static_cast<std::size_t>(pool.stats.allocated_bytes.peak);
  }

  /// Runs `visit` on each pool under its lock, one at a time; `held`, whose lock the caller
  /// holds, as it is. Another pool whose lock is taken is skipped when `held` is set: waiting
  /// for it under a pool lock could deadlock.
  template <typename Visit>
  static void for_each_pool(const std::vector<stream_pool*>& pools, stream_pool* held, Visit visit) {
    for (stream_pool* p : pools) {
      if (p == held) {
        visit(*p);
        continue;
      }
      std::unique_lock lock(p->mutex, std::defer_lock);
      if (held != nullptr ? lock.try_lock() : (lock.lock(), true)) visit(*p);
    }
  }

  /// Mapped bytes of every pool's expandable segments.
  [[nodiscard]] static std::size_t device_mapped(const std::vector<stream_pool*>& pools, stream_pool* held) {
    std::size_t mapped = 0;
    for_each_pool(pools, held, [&](const stream_pool& p) {
      for (const segment* s : p.segments()) mapped += s->expandable ? s->mapped_bytes : 0;
    });
    return mapped;
  }

  /// The bytes the pools may map once `more` are live beside what is: the peak live bytes plus
  /// the slack. The device's peak is the one growth has seen (a peak the cache alone served
  /// needs no growth), and at least each stream's own.
  [[nodiscard]] std::size_t device_budget(const std::vector<stream_pool*>& pools, stream_pool* held,
                                          std::size_t more) const {
    std::size_t live = more;
    std::size_t peak = 0;
    for_each_pool(pools, held, [&](const stream_pool& p) {
      live += static_cast<std::size_t>(p.stats.allocated_bytes.current);
      peak = std::max(peak, static_cast<std::size_t>(p.stats.allocated_bytes.peak));
    });
    // One pool: its own figures are the device's (and honour reset_peaks).
    if (pools.size() > 1) peak = std::max(peak, note_device_live(live));
    peak = std::max(peak, live);
    return peak + peak / 100 * context_.options.remap_slack_percent;
  }

  /// Notes `live` bytes live on the device; the peak before it.
  std::size_t note_device_live(std::size_t live) const noexcept {
    std::size_t peak = device_peak_live_.load(std::memory_order_relaxed);
    while (live > peak && !device_peak_live_.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
    }
    return peak;
  }

  /// Gives up to `most` wholly free mapped chunks of `other` back to the device, after
  /// synchronizing its stream (its queued work may still use a freed block there); how many.
  /// Caller holds other.growth, not other.mutex.
  std::size_t give_back_free_chunks(stream_pool& other, std::size_t most) const {
    released_memory taken;
    std::size_t count = 0;
    {
      std::lock_guard lock(other.mutex);
      other.merge_deferred();  // whole free chunks show only in merged blocks
      for (segment* s : other.segments()) {
        if (count == most) break;
        if (s->expandable) count += pool_memory::take_free_chunks(*s, taken, most - count);
      }
    }
    context_.memory.give_back(other, taken, true);
    return count;
  }

  mutable std::atomic<std::size_t> device_peak_live_{0};
};

}  // namespace

std::unique_ptr<growth_policy> make_remap_growth(const growth_context& context) {
  return std::make_unique<remap_growth>(context);
}

}  // namespace streamsafe::detail
