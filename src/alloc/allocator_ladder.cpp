// The caching allocator's slow path: its own cache, then growing (the growth policy), then
// borrowing from other streams, and the out-of-memory ladder around them (reclaim completed
// frees, release cached memory, wait for pending frees).
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
    books_.count(device_event::alloc_retry);
    for (const ladder_step step : {ladder_step::reclaim_completed, ladder_step::release_cached,
                                   ladder_step::wait_for_pending}) {
      run(step);
      b = obtain(pool, kind, rounded);
      if (b != nullptr) break;
    }
  }
  if (b == nullptr) {
    books_.count(device_event::out_of_memory);
    throw out_of_memory(out_of_memory_message(requested, rounded, pool.stream()));
  }
  std::lock_guard lock(pool.mutex);
  b->requested = requested;
  stream_figures::note_allocated(pool.stats, *b, requested);
  return b;
}

block* caching_allocator_impl::obtain(stream_pool& pool, pool_kind kind, std::size_t rounded) {
  if (block* b = take_own(pool, kind, rounded)) return b;
  // Growing comes before borrowing: a borrowed block goes home at its free, so a stream that
  // borrowed in steady state would pay an event record, a wait and a pending free on every
  // allocation. Borrowing is for when the device has no more to give.
  try {
    return growth_->grow(pool, kind, rounded);
  } catch (const out_of_memory&) {
    if (options_.reuse == cross_stream_reuse::borrow) return borrow(pool, kind, rounded);
    return nullptr;  // the ladder decides what to do next
  }
}

block* caching_allocator_impl::take_own(stream_pool& pool, pool_kind kind, std::size_t rounded) {
  std::lock_guard lock(pool.mutex);
  block* candidate = pool.find_mapped(kind, rounded);
  return candidate != nullptr ? pool.take(candidate, rounded, pool) : nullptr;
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
    books_.count(device_event::cross_stream_reuse);
    if (options_.observer != nullptr) {
      options_.observer->on_reuse(reinterpret_cast<void*>(b->address), b->size, lender->stream().id(),
                                  pool.stream().id());
    }
    return b;
  }
  return nullptr;
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
  // The plan first: memory the pools lent it comes back to them, and goes to the device below.
  if (plan_ != nullptr) plan_->release_if_unused();
  release_pool_cache();
}

void caching_allocator_impl::release_pool_cache() {
  std::lock_guard ladder(ladder_mutex_);
  retire_abandoned();
  books_.count(device_event::sync_all_streams);
  for (stream_pool* pool : all_pools()) release_free_memory(*pool);
}

void caching_allocator_impl::release_pool_cache_when_done() {
  std::lock_guard ladder(ladder_mutex_);
  retire_abandoned();
  for (stream_pool* pool : all_pools()) {
    std::lock_guard slow(pool->growth);
    released_memory taken = take_pool_cache(*pool);
    memory_.give_back_when_done(*pool, taken, events_);
  }
}

bool caching_allocator_impl::finish_releases() noexcept { return memory_.finish_releases(); }

released_memory caching_allocator_impl::take_pool_cache(stream_pool& pool) {
  memory_.cancel_release(pool);  // taken again below, with the rest
  released_memory taken;
  std::lock_guard lock(pool.mutex);
  memory_.take_free_memory(pool, taken);
  return taken;
}

void caching_allocator_impl::release_free_memory(stream_pool& pool) {
  std::lock_guard slow(pool.growth);
  released_memory taken = take_pool_cache(pool);
  // Taken before the sync: blocks freed from here on are not released by this pass, and every
  // block taken was freed after its last use was enqueued, so the sync covers it.
  memory_.give_back(pool, taken, true);
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
