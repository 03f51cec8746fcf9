// Remap growth (expandable_growth::remap): while the stream's reserved bytes stay within its peak
// live bytes plus the slack, the block takes the bins' best fit and its missing chunks are mapped;
// beyond, it goes where it needs the fewest new chunks, and that many wholly free mapped chunks of
// its segments are unmapped (after synchronizing the stream) before the new ones are mapped, so
// reserved memory follows live memory.
//
// A stream climbing past its own peak beside other streams is held to the device's budget too:
// the pools' mapped bytes together within the slack above the device's peak live bytes. Other
// streams' wholly free chunks are given back (those of a stream whose enqueued work is all done,
// asked with an event, never waited for) before its new ones are mapped, so streams that peak
// in turn share physical memory instead of each keeping the high-water mark of its own peak.
// A stream that has to grow again below its own peak after giving chunks away is held to it as
// well (it takes back free chunks instead of mapping beside them), and keeps its chunks from
// then on, until a growth takes it past its own peak again: a loop whose streams peak in turn, or a
// stream per request beside a long-lived one, settles after one exchange instead of moving
// chunks between them every iteration, while streams still setting their peaks (the first pass
// of requests spread over streams) go on sharing. A growth that takes the device's live bytes
// past their peak takes kept chunks too: the workload is still setting its peak, so no stream's
// cache has settled, and a loop that repeats sets it only once. Otherwise below its own peak a
// stream's budget is its own.
#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "alloc/mapped_growth.hpp"
#include "runtime/stream_impl.hpp"
#include "streamsafe/event_pool.hpp"
#include "streamsafe/stream.hpp"

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
    if (chunks_to_map == 0 || !held_to_device_budget(pool, fresh.size)) return;
    const std::vector<stream_pool*> pools = context_.all_pools();
    if (pools.size() < 2) return;  // its own moves kept the device within its budget
    const std::size_t granularity = fresh.owner->granularity;
    const device_memory now = device_memory_of(pools);
    const std::size_t live = now.live + fresh.size;
    const std::size_t device_peak_before = note_device_live(live);
    const std::size_t peak = std::max({now.largest_pool_peak, live, device_peak_before});
    // The device's live bytes setting a new peak: no stream's cache has settled yet.
    const bool device_climbs = live > device_peak_before;
    const std::size_t allowed = peak + peak / 100 * context_.options.remap_slack_percent;
    const std::size_t mapped = now.mapped + chunks_to_map * granularity;
    if (mapped <= allowed) return;
    std::size_t excess = (mapped - allowed + granularity - 1) / granularity;
    for (stream_pool* other : pools) {
      if (excess == 0) break;
      if (other == &pool) continue;
      // A pool growing or releasing is skipped: waiting for it while this pool's growth lock is
      // held could deadlock with it waiting for this one.
      std::unique_lock slow(other->growth, std::try_to_lock);
      if (slow.owns_lock()) excess -= give_back_free_chunks(*other, excess, device_climbs);
    }
  }

 private:
  [[nodiscard]] std::size_t chunks_to_move(const stream_pool& pool, const block& fresh) const {
    const segment& s = *fresh.owner;
    const std::size_t needed = unmapped_chunks(s, fresh.address, fresh.size);
    const std::size_t may_map = chunks_within_budget(pool, fresh.size, s.granularity);
    return needed > may_map ? needed - may_map : 0;
  }

  /// Chunks the pool may still map, once `more` bytes are live beside what is: its reserved bytes
  /// stay within the slack above its peak live bytes. Measured against the peak, not the current
  /// live bytes, so that a workload that repeats its pattern settles and stops moving chunks.
  [[nodiscard]] std::size_t chunks_within_budget(const stream_pool& pool, std::size_t more,
                                                 std::size_t granularity) const {
    std::size_t mapped = 0;
    for (const segment* owned : pool.segments()) mapped += owned->mapped_bytes;
    const std::size_t live = static_cast<std::size_t>(pool.stats.allocated_bytes.current) + more;
    const std::size_t peak_live = std::max(own_peak_live(pool), live);
    const std::size_t allowed = peak_live + peak_live / 100 * context_.options.remap_slack_percent;
    return allowed > mapped ? (allowed - mapped) / granularity : 0;
  }

  /// Whether the growth of a block of `more` bytes is held to the device's budget: it takes the
  /// stream past its own peak (the block is not counted live yet), or the stream grows again
  /// below it after giving chunks away. The first keeps nothing from the stream; the second
  /// makes it keep its chunks. Caller holds pool.growth, not pool.mutex.
  [[nodiscard]] static bool held_to_device_budget(stream_pool& pool, std::size_t more) {
    std::lock_guard lock(pool.mutex);
    const bool climbs = static_cast<std::size_t>(pool.stats.allocated_bytes.current) + more > own_peak_live(pool);
    if (climbs) {
      pool.gave_chunks = false;  // still setting its peak: what it keeps is not settled yet
      pool.keeps_chunks = false;
      return true;
    }
    if (!pool.gave_chunks) return false;
    pool.keeps_chunks = true;
    return true;
  }

  struct device_memory {
    std::size_t mapped = 0;             // in every pool's expandable segments
    std::size_t live = 0;               // allocated on every stream
    std::size_t largest_pool_peak = 0;  // the largest of the streams' own peaks
  };

  /// Each pool's figures under its own lock, one pool at a time.
  [[nodiscard]] static device_memory device_memory_of(const std::vector<stream_pool*>& pools) {
    device_memory total;
    for (stream_pool* p : pools) {
      std::lock_guard lock(p->mutex);
      for (const segment* s : p->segments()) total.mapped += s->expandable ? s->mapped_bytes : 0;
      total.live += static_cast<std::size_t>(p->stats.allocated_bytes.current);
      total.largest_pool_peak = std::max(total.largest_pool_peak, own_peak_live(*p));
    }
    return total;
  }

  /// Notes `live` bytes live on the device as growth saw them (a peak the cache alone served
  /// needs no growth); the peak before.
  std::size_t note_device_live(std::size_t live) const noexcept {
    std::size_t peak = device_peak_live_.load(std::memory_order_relaxed);
    while (live > peak && !device_peak_live_.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
    }
    return peak;
  }

  /// Gives up to `most` wholly free mapped chunks of `other` back to the device, when every use
  /// of them is done; how many. A freed block's last use was enqueued on `other`'s stream before
  /// its free: an event recorded there once the chunks are out of the books (no later work can
  /// use them) covers it. Work still queued keeps the chunks where they were: the growing stream
  /// never waits for another's work. Best effort: a failure leaves the chunks with `other` (its
  /// books as the device holds them) and the growth maps new ones. Caller holds other.growth,
  /// not other.mutex. A pool that keeps its chunks gives none, unless `device_climbs`.
  std::size_t give_back_free_chunks(stream_pool& other, std::size_t most, bool device_climbs) const {
    released_memory taken;
    std::size_t count = 0;
    {
      std::lock_guard lock(other.mutex);
      // A gone stream's pool is retired whole where it is reused.
      if ((other.keeps_chunks && !device_climbs) || other.abandoned()) return 0;
      other.merge_deferred();  // whole free chunks show only in merged blocks
      for (segment* s : other.segments()) {
        if (count == most) break;
        if (s->expandable) count += pool_memory::take_free_chunks(*s, taken, most - count);
      }
    }
    if (count == 0) return 0;
    bool done = false;
    try {
      done = stream_is_done(other);
    } catch (...) {
      done = false;  // no answer: as if the work were still queued
    }
    if (!done) {
      context_.memory.put_back(other, taken);
      return 0;
    }
    try {
      context_.memory.give_back(other, taken, false);
    } catch (...) {
      return 0;  // give_back booked what the device took back and restored the rest
    }
    std::lock_guard lock(other.mutex);
    other.gave_chunks = true;
    return count;
  }

  /// Whether every piece of work enqueued on the pool's stream so far is done (never waits).
  [[nodiscard]] bool stream_is_done(stream_pool& pool) const {
    PooledEvent done = context_.events.acquire();
    done.record(StreamRef(&pool.stream()));
    return done.query();
  }

  mutable std::atomic<std::size_t> device_peak_live_{0};
};

}  // namespace

std::unique_ptr<growth_policy> make_remap_growth(const growth_context& context) {
  return std::make_unique<remap_growth>(context);
}

}  // namespace streamsafe::detail
