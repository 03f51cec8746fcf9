// The caching allocator's slow path: borrowing from other streams, growing, and the
// out-of-memory ladder (reclaim completed frees, release cached memory, wait for pending frees).
#include <algorithm>
#include <memory>
#include <sstream>

#include "alloc/caching_allocator_impl.hpp"
#include "alloc/size_classes.hpp"
#include "common/expects.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/stream_impl.hpp"
#include "streamsafe/alloc/allocator_observer.hpp"

namespace streamsafe::detail {

block* caching_allocator_impl::allocate_slow(stream_pool& pool, pool_kind kind, std::size_t rounded,
                                             std::size_t requested) {
  block* b = obtain(pool, kind, rounded);
  if (b == nullptr) {
    {
      std::lock_guard lock(stats_mutex_);
      ++device_stats_.num_alloc_retries;
    }
    for (const ladder_step step : {ladder_step::reclaim_completed, ladder_step::release_cached,
                                   ladder_step::wait_for_pending}) {
      run(step);
      b = obtain(pool, kind, rounded);
      if (b != nullptr) break;
    }
  }
  if (b == nullptr) {
    {
      std::lock_guard lock(stats_mutex_);
      ++device_stats_.num_ooms;
    }
    throw out_of_memory(out_of_memory_message(requested, rounded, pool.stream()));
  }
  std::lock_guard lock(pool.mutex);
  b->requested = requested;
  note_allocated(pool.stats, *b, requested);
  return b;
}

block* caching_allocator_impl::obtain(stream_pool& pool, pool_kind kind, std::size_t rounded) {
  if (block* b = take_own(pool, kind, rounded)) return b;
  // Growing comes before borrowing: a borrowed block goes home at its free, so a stream that
  // borrowed in steady state would pay an event record, a wait and a pending free on every
  // allocation. Borrowing is for when the device has no more to give.
  try {
    return grow(pool, kind, rounded);
  } catch (const out_of_memory&) {
    if (options_.reuse == cross_stream_reuse::borrow) return borrow(pool, kind, rounded);
    return nullptr;  // the ladder decides what to do next
  }
}

block* caching_allocator_impl::take_own(stream_pool& pool, pool_kind kind, std::size_t rounded) {
  std::lock_guard lock(pool.mutex);
  block* candidate = pool.find_mapped(kind, rounded);
  return candidate != nullptr && may_take(*candidate, kind, rounded) ? pool.take(candidate, rounded, pool) : nullptr;
}

block* caching_allocator_impl::borrow(stream_pool& pool, pool_kind kind, std::size_t rounded) {
  for (stream_pool* lender : all_pools()) {
    if (lender == &pool) continue;
    block* b = nullptr;
    {
      std::lock_guard lock(lender->mutex);
      block* candidate = lender->find_mapped(kind, rounded);
      if (candidate == nullptr) continue;
      b = lender->take(candidate, rounded, pool);
    }
    // The borrower's use starts after everything the lender enqueued so far, the block's past
    // users included (their frees were stream-ordered on the lender, or waited for).
    PooledEvent lender_done = events_.acquire();
    lender_done.record(StreamRef(&lender->stream()));
    StreamRef(&pool.stream()).wait(lender_done);
    {
      std::lock_guard lock(stats_mutex_);
      ++device_stats_.num_cross_stream_reuses;
    }
    if (options_.observer != nullptr) {
      options_.observer->on_reuse(reinterpret_cast<void*>(b->address), b->size, lender->stream().id(),
                                  pool.stream().id());
    }
    return b;
  }
  return nullptr;
}

void caching_allocator_impl::adopt_segment(stream_pool& pool, segment* s) {
  pool.adopt(s);
  owners_.add(*s, &pool);
}

void caching_allocator_impl::disown_segment(stream_pool& pool, segment* s) {
  owners_.remove(*s);
  pool.disown(s);
}

block* caching_allocator_impl::grow(stream_pool& pool, pool_kind kind, std::size_t rounded) {
  if (stitching()) return grow_stitched(pool, kind, rounded);
  return expandable_ ? grow_expandable(pool, kind, rounded) : grow_fixed(pool, kind, rounded);
}

std::size_t caching_allocator_impl::fixed_segment_bytes(pool_kind kind, std::size_t rounded) const noexcept {
  if (kind == pool_kind::small) return options_.small_segment_bytes;
  if (rounded < options_.large_segment_bytes / 2) return options_.large_segment_bytes;
  return round_up(rounded, std::size_t{2} << 20);
}

block* caching_allocator_impl::grow_fixed(stream_pool& pool, pool_kind kind, std::size_t rounded) {
  std::size_t bytes = fixed_segment_bytes(kind, rounded);
  auto fresh = std::make_unique<segment>();
  try {
    fresh->address = reinterpret_cast<std::uintptr_t>(source_->allocate(bytes));
  } catch (const out_of_memory&) {
    // The preferred segment does not fit: the smallest that serves the request may.
    const std::size_t smallest = round_up(rounded, std::size_t{2} << 20);
    if (kind == pool_kind::small || smallest >= bytes) throw;
    bytes = smallest;
    fresh->address = reinterpret_cast<std::uintptr_t>(source_->allocate(bytes));
  }
  fresh->size = fresh->mapped_bytes = bytes;
  fresh->kind = kind;
  note_reserved(static_cast<std::int64_t>(bytes), 1);
  if (options_.history_capacity != 0) remember(trace_action::segment_alloc, fresh->address, bytes, pool.stream().id());
  std::lock_guard lock(pool.mutex);
  segment* adopted = fresh.release();
  adopt_segment(pool, adopted);
  return pool.take(adopted->first, rounded, pool);
}

namespace {

/// Calls visit(free block, chunk index) for each mapped chunk of `s` that lies wholly inside a
/// free block (the chunks that can be unmapped), in address order, while visit returns true.
template <typename Visit>
void for_each_free_mapped_chunk(segment& s, Visit visit) {
  for (block* b = s.first; b != nullptr; b = b->next) {
    if (b->state != block_state::free) continue;
    const std::size_t offset = b->address - s.address;
    const std::size_t first = round_up(offset, s.granularity) / s.granularity;
    // Chunks wholly inside the block; none above the high-water mark is mapped (the free tail
    // of a range is most of its chunks).
    const std::size_t end = std::min((offset + b->size) / s.granularity, s.chunks_touched);
    for (std::size_t chunk = first; chunk < end; ++chunk) {
      if (s.chunk_mapped[chunk] && !visit(*b, chunk)) return;
    }
  }
}

}  // namespace

block* caching_allocator_impl::grow_expandable(stream_pool& pool, pool_kind kind, std::size_t rounded) {
  std::unique_lock lock(pool.mutex);
  block* candidate = pool.find(kind, rounded);
  if (candidate == nullptr) {  // no range yet, or it is full: reserve another
    lock.unlock();
    const std::size_t bytes = std::max(options_.expandable_reserve_bytes, round_up(rounded, options_.granularity));
    auto* fresh = new segment;
    fresh->address = source_->reserve(bytes);
    fresh->size = bytes;
    fresh->kind = kind;
    fresh->expandable = true;
    fresh->granularity = options_.granularity;
    fresh->place_at_chunk_end = kind == pool_kind::small && options_.small_placement == small_block_placement::chunk_end;
    fresh->chunk_mapped.assign(bytes / options_.granularity, false);
    note_reserved(0, 1);
    lock.lock();
    adopt_segment(pool, fresh);
    candidate = pool.find(kind, rounded);
  }
  const bool remap = options_.growth == expandable_growth::remap;
  if (remap) {
    pool.merge_deferred();  // whole free chunks show only in merged blocks
    candidate = cheapest_placement(pool, kind, rounded, pool.find(kind, rounded));
  }
  block* b = pool.take(candidate, rounded, pool);
  try {
    if (remap) unmap_free_chunks(pool, chunks_to_move(pool, *b));
    map_block(b);
  } catch (...) {
    b->user = &pool;
    pool.give_back(b);
    throw;
  }
  return b;
}

block* caching_allocator_impl::cheapest_placement(stream_pool& pool, pool_kind kind, std::size_t rounded,
                                                  block* found) const {
  // The bins' choice is the best fit by size, blind to mapping: a hole with more of its chunks
  // still mapped (or a fully mapped block of another size class) needs fewer new chunks, and
  // fewer chunks to move. A scan of the blocks, on the growth path only.
  block* cheapest = found;
  std::size_t cheapest_cost = unmapped_chunks(*found->owner, placement(*found, rounded), rounded);
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

std::size_t caching_allocator_impl::chunks_to_move(const stream_pool& pool, const block& fresh) const {
  // Free chunks stay mapped (no stream synchronization, no unmap) while the stream's reserved
  // bytes stay within the slack above its peak live bytes; beyond, the new block's chunks are
  // moved from free ones. Measured against the peak, not the current live bytes, so that a
  // workload that repeats its pattern settles and stops moving chunks.
  const segment& s = *fresh.owner;
  const std::size_t needed = unmapped_chunks(s, fresh.address, fresh.size);
  std::size_t mapped = 0;
  for (const segment* owned : pool.segments()) mapped += owned->mapped_bytes;
  const std::size_t live = static_cast<std::size_t>(pool.stats.allocated_bytes.current) + fresh.size;
  const std::size_t peak_live = std::max(static_cast<std::size_t>(pool.stats.allocated_bytes.peak), live);
  const std::size_t allowed = peak_live + peak_live / 100 * options_.remap_slack_percent;
  const std::size_t may_map = allowed > mapped ? (allowed - mapped) / s.granularity : 0;
  return needed > may_map ? needed - may_map : 0;
}

void caching_allocator_impl::unmap_free_chunks(stream_pool& pool, std::size_t chunks) {
  if (chunks == 0) return;
  bool synchronized = false;
  for (segment* s : pool.segments()) {
    if (!s->expandable) continue;
    for_each_free_mapped_chunk(*s, [&](block& holder, std::size_t chunk) {
      if (!synchronized) {  // work already enqueued on the stream may still use a freed block
        pool.stream().synchronize();
        note_host_sync();
        synchronized = true;
      }
      unmap_chunk(*s, holder, chunk);
      return --chunks != 0;
    });
    if (chunks == 0) return;
  }
}

void caching_allocator_impl::map_block(block* b) {
  segment& s = *b->owner;
  const chunk_range range = chunks_of(s, b->address, b->size);
  for (std::size_t chunk = range.first; chunk <= range.last; ++chunk) {
    if (s.chunk_mapped[chunk]) continue;
    const std::uintptr_t at = s.address + chunk * s.granularity;
    source_->map_chunk(at, s.granularity);
    s.chunk_mapped[chunk] = true;
    s.chunks_touched = std::max(s.chunks_touched, chunk + 1);
    s.mapped_bytes += s.granularity;
    note_reserved(static_cast<std::int64_t>(s.granularity), 0);
  }
  b->mapped = true;
}

void caching_allocator_impl::run(ladder_step step) {
  switch (step) {
    case ladder_step::reclaim_completed: process_pending_frees(poll_mode::eager); return;
    case ladder_step::release_cached: release_cached(); return;
    case ladder_step::wait_for_pending:
      wait_for_pending();
      release_cached();
      return;
  }
}

void caching_allocator_impl::empty_cache() {
  wait_for_pending();
  release_cached();
}

void caching_allocator_impl::release_cached() {
  std::lock_guard ladder(ladder_mutex_);
  {
    std::lock_guard lock(stats_mutex_);
    ++device_stats_.num_sync_all_streams;
  }
  for (stream_pool* pool : all_pools()) {
    // Locked before the sync: blocks freed from here on cannot be released by this pass, and
    // every block freed before was freed after its last use was enqueued, so the sync covers it.
    std::lock_guard lock(pool->mutex);
    pool->stream().synchronize();
    note_host_sync();
    release_free_memory(*pool);
  }
}

void caching_allocator_impl::release_free_memory(stream_pool& pool) {
  pool.merge_deferred();  // whole free chunks and segments show only once neighbours are merged
  if (pool.stitched) release_stitched(pool);
  std::vector<segment*> wholly_free_fixed;
  for (segment* s : pool.segments()) {
    if (s->expandable) {
      unmap_free_chunks(*s);
    } else if (!s->stitched && wholly_free(*s)) {
      wholly_free_fixed.push_back(s);
    }
  }
  for (segment* s : wholly_free_fixed) {
    disown_segment(pool, s);
    source_->deallocate(reinterpret_cast<void*>(s->address));
    note_reserved(-static_cast<std::int64_t>(s->size), -1);
    if (options_.history_capacity != 0) remember(trace_action::segment_free, s->address, s->size, pool.stream().id());
    delete s;
  }
}

void caching_allocator_impl::unmap_free_chunks(segment& s) {
  for_each_free_mapped_chunk(s, [&](block& holder, std::size_t chunk) {
    unmap_chunk(s, holder, chunk);
    return true;
  });
}

void caching_allocator_impl::unmap_chunk(segment& s, block& holder, std::size_t chunk) {
  source_->unmap_chunk(s.address + chunk * s.granularity, s.granularity);
  s.chunk_mapped[chunk] = false;
  s.mapped_bytes -= s.granularity;
  holder.mapped = false;
  note_reserved(-static_cast<std::int64_t>(s.granularity), 0);
}

std::size_t caching_allocator_impl::largest_free_block() const {
  std::size_t largest = 0;
  for (stream_pool* pool : all_pools()) {
    std::lock_guard lock(pool->mutex);
    for (const segment* s : pool->segments()) {
      for (const block* b = s->first; b != nullptr; b = b->next) {
        if (b->state == block_state::free && b->mapped) largest = std::max(largest, b->size);
      }
    }
  }
  return largest;
}

std::string caching_allocator_impl::out_of_memory_message(std::size_t requested, std::size_t rounded,
                                                          StreamImpl& stream) const {
  const allocator_stats now = stats();
  const memory_info device = source_->memory();
  std::ostringstream out;
  out << "caching_allocator: out of memory: cannot allocate " << requested << " bytes (" << rounded
      << " rounded) on stream '" << stream.name() << "' of " << device_.name() << ". Device: " << device.free_bytes
      << " bytes free of " << device.total_bytes << ". Allocator: " << now.allocated_bytes.current
      << " bytes allocated, " << now.reserved_bytes.current << " reserved, " << now.pending_free_bytes
      << " pending-free (" << now.pending_free_blocks << " blocks), largest free block " << largest_free_block()
      << ". Tried: reclaiming completed frees, releasing cached memory, waiting for pending frees. "
      << "What to try: free buffers earlier or keep fewer alive; check that record_stream'd streams make "
         "progress; use segments:expandable in STREAMSAFE_ALLOC_CONF if reserved is far above allocated; "
         "smaller batches.";
  return out.str();
}

}  // namespace streamsafe::detail
