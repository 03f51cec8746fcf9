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

segment* caching_allocator_impl::reserve_range(stream_pool& pool, pool_kind kind, std::size_t rounded) {
  const std::size_t bytes = range_bytes(pool, kind, rounded);
  auto fresh = std::make_unique<segment>();
  fresh->address = source_->reserve(bytes);
  fresh->size = bytes;
  fresh->kind = kind;
  fresh->expandable = true;
  fresh->granularity = options_.granularity;
  fresh->place_at_chunk_end = kind == pool_kind::small && options_.small_placement == small_block_placement::chunk_end;
  fresh->chunk_mapped.assign(bytes / options_.granularity, false);
  note_reserved(0, 1);
  return fresh.release();
}

std::size_t caching_allocator_impl::range_bytes(const stream_pool& pool, pool_kind kind, std::size_t rounded) const {
  std::size_t held = 0;
  {
    std::lock_guard lock(pool.mutex);
    for (const segment* s : pool.segments()) held += s->kind == kind ? s->size : 0;
  }
  const std::size_t bytes = next_range_bytes(round_up(rounded, options_.granularity), held, options_.expandable_reserve_bytes);
  return round_up(bytes, options_.granularity);
}

block* caching_allocator_impl::grow_expandable(stream_pool& pool, pool_kind kind, std::size_t rounded) {
  std::lock_guard slow(pool.growth);  // the chunks mapped and moved below are this call's alone
  segment* fresh = nullptr;
  std::unique_lock lock(pool.mutex);
  block* candidate = pool.find(kind, rounded);
  if (candidate == nullptr) {  // no range yet, or they are full: reserve another
    lock.unlock();
    fresh = reserve_range(pool, kind, rounded);
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
  const std::vector<std::size_t> missing = missing_chunks(*b);
  released_memory moved;
  if (remap) {
    std::size_t chunks = chunks_to_move(pool, *b);
    for (segment* s : pool.segments()) {
      if (chunks == 0) break;
      if (s->expandable && s != b->owner) chunks -= take_free_chunks(*s, moved, chunks);
    }
    if (chunks != 0) take_free_chunks(*b->owner, moved, chunks);
  }
  lock.unlock();
  try {
    // Work already enqueued on the stream may still use a freed block's moved chunks.
    if (!moved.empty()) give_back_memory(pool, moved, true);
    map_chunks(pool, b, missing);
  } catch (...) {
    undo_growth(pool, b, missing, fresh);
    throw;
  }
  return b;
}

std::vector<std::size_t> caching_allocator_impl::missing_chunks(const block& b) {
  const segment& s = *b.owner;
  const chunk_range range = chunks_of(s, b.address, b.size);
  std::vector<std::size_t> missing;
  for (std::size_t chunk = range.first; chunk <= range.last; ++chunk) {
    if (!s.chunk_mapped[chunk]) missing.push_back(chunk);
  }
  return missing;
}

void caching_allocator_impl::map_chunks(stream_pool& pool, block* b, const std::vector<std::size_t>& chunks) {
  segment& s = *b->owner;
  std::size_t mapped = 0;
  const auto book = [&] {
    {
      std::lock_guard lock(pool.mutex);
      for (std::size_t i = 0; i < mapped; ++i) {
        s.chunk_mapped[chunks[i]] = true;
        s.chunks_touched = std::max(s.chunks_touched, chunks[i] + 1);
      }
      s.mapped_bytes += mapped * s.granularity;
      b->mapped = mapped == chunks.size();
    }
    for (std::size_t i = 0; i < mapped; ++i) note_reserved(static_cast<std::int64_t>(s.granularity), 0);
  };
  try {
    for (; mapped < chunks.size(); ++mapped) source_->map_chunk(s.address + chunks[mapped] * s.granularity, s.granularity);
  } catch (...) {
    book();  // what was mapped is known, to be given back
    throw;
  }
  book();
}

void caching_allocator_impl::undo_growth(stream_pool& pool, block* b, const std::vector<std::size_t>& mapped,
                                         segment* fresh) {
  released_memory taken;
  {
    std::lock_guard lock(pool.mutex);
    segment& s = *b->owner;
    (void)pool.unlist_live(b->address);  // take() listed it: a later block at its address must not find it
    pool.give_back(b);
    if (fresh != nullptr && wholly_free(*fresh)) {
      disown_segment(pool, fresh);  // released whole, its chunks with it
      taken.segments.push_back(fresh);
    } else {
      // Free again, the block's new chunks lie wholly in free space: nothing else maps them.
      for (const std::size_t chunk : mapped) {
        if (!s.chunk_mapped[chunk]) continue;
        s.chunk_mapped[chunk] = false;
        taken.chunks.push_back({&s, chunk});
      }
    }
  }
  try {
    give_back_memory(pool, taken, false);  // never used: no stream to wait for
  } catch (...) {
    // The growth's own error is the one to report; what could not be given back stays booked.
  }
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
  retire_abandoned();
  {
    std::lock_guard lock(stats_mutex_);
    ++device_stats_.num_sync_all_streams;
  }
  for (stream_pool* pool : all_pools()) release_free_memory(*pool);
}

void caching_allocator_impl::release_free_memory(stream_pool& pool) {
  std::lock_guard slow(pool.growth);
  released_memory taken;
  {
    std::lock_guard lock(pool.mutex);
    take_free_memory(pool, taken);
  }
  // Taken before the sync: blocks freed from here on are not released by this pass, and every
  // block taken was freed after its last use was enqueued, so the sync covers it.
  give_back_memory(pool, taken, true);
}

void caching_allocator_impl::take_free_memory(stream_pool& pool, released_memory& out) {
  pool.merge_deferred();  // whole free chunks and segments show only once neighbours are merged
  take_free_stitched(pool, out.windows);
  out.stitcher_to_flush = pool.stitched != nullptr;
  std::vector<segment*> wholly_free_fixed;
  for (segment* s : pool.segments()) {
    if (s->expandable) {
      take_free_chunks(*s, out, s->chunk_mapped.size());
    } else if (!s->stitched && wholly_free(*s)) {
      wholly_free_fixed.push_back(s);
    }
  }
  for (segment* s : wholly_free_fixed) {
    disown_segment(pool, s);
    out.segments.push_back(s);
  }
}

bool caching_allocator_impl::take_all_memory(stream_pool& pool, released_memory& out) {
  pool.merge_deferred();
  const std::vector<segment*>& segments = pool.segments();
  if (!std::all_of(segments.begin(), segments.end(), [](const segment* s) { return wholly_free(*s); })) return false;
  take_free_stitched(pool, out.windows);
  out.stitcher_to_flush = pool.stitched != nullptr;
  while (!pool.segments().empty()) {
    segment* s = pool.segments().back();
    disown_segment(pool, s);
    out.segments.push_back(s);
  }
  return true;
}

std::size_t caching_allocator_impl::take_free_chunks(segment& s, released_memory& out, std::size_t limit) {
  std::size_t taken = 0;
  if (limit == 0) return 0;
  for_each_free_mapped_chunk(s, [&](block& holder, std::size_t chunk) {
    // Unmapped in the books from here on, so no request takes it; its bytes are booked once the
    // device call succeeds (see give_back_memory).
    s.chunk_mapped[chunk] = false;
    holder.mapped = false;
    out.chunks.push_back({&s, chunk});
    return ++taken < limit;
  });
  return taken;
}

void caching_allocator_impl::give_back_memory(stream_pool& pool, released_memory& taken, bool synchronize) {
  if (taken.empty()) return;
  released_memory::progress done;
  try {
    if (synchronize) {
      pool.stream().synchronize();
      note_host_sync();
    }
    if (taken.stitcher_to_flush) release_stitched(pool, taken.windows);
    for (; done.chunks < taken.chunks.size(); ++done.chunks) {
      const released_memory::chunk& c = taken.chunks[done.chunks];
      source_->unmap_chunk(c.owner->address + c.index * c.owner->granularity, c.owner->granularity);
    }
    for (; done.segments < taken.segments.size(); ++done.segments) {
      const segment& s = *taken.segments[done.segments];
      if (s.expandable) {
        source_->release(s.address, s.size);
      } else {
        source_->deallocate(reinterpret_cast<void*>(s.address));
      }
    }
  } catch (...) {
    book_given_back(pool, taken, done);
    restore_books(pool, taken, done);
    throw;
  }
  book_given_back(pool, taken, done);
}

void caching_allocator_impl::book_given_back(stream_pool& pool, const released_memory& taken,
                                             const released_memory::progress& done) {
  {
    std::lock_guard lock(pool.mutex);
    for (std::size_t i = 0; i < done.chunks; ++i) taken.chunks[i].owner->mapped_bytes -= taken.chunks[i].owner->granularity;
  }
  for (std::size_t i = 0; i < done.chunks; ++i) note_reserved(-static_cast<std::int64_t>(taken.chunks[i].owner->granularity), 0);
  for (std::size_t i = 0; i < done.segments; ++i) {
    segment* s = taken.segments[i];
    note_reserved(-static_cast<std::int64_t>(s->mapped_bytes), -1);
    if (!s->expandable && options_.history_capacity != 0) {
      remember(trace_action::segment_free, s->address, s->size, pool.stream().id());
    }
    delete s;
  }
}

void caching_allocator_impl::restore_books(stream_pool& pool, released_memory& taken,
                                           const released_memory::progress& done) {
  // What the device still holds goes back into the books as it was: a chunk whose unmap failed
  // is still mapped, a segment whose free failed still the pool's, a window not dissolved yet
  // dormant in the stitcher (which unmaps it later).
  for (stitched_window& window : taken.windows) pool.stitched->dissolve(std::move(window));
  taken.windows.clear();
  std::lock_guard lock(pool.mutex);
  for (std::size_t i = done.chunks; i < taken.chunks.size(); ++i) {
    taken.chunks[i].owner->chunk_mapped[taken.chunks[i].index] = true;
  }
  for (std::size_t i = done.segments; i < taken.segments.size(); ++i) adopt_segment(pool, taken.segments[i]);
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
