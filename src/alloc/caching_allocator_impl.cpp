// The caching allocator's fast path (same-stream reuse), frees, record_stream and the pending
// frees it creates, and retiring the pools of streams that are gone. The slow path (growing
// through the growth policy, borrowing, the OOM ladder) is in allocator_ladder.cpp.
#include "alloc/caching_allocator_impl.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <utility>

#include "alloc/allocator_snapshot.hpp"
#include "alloc/size_classes.hpp"
#include "common/expects.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/event_impl.hpp"
#include "runtime/stream_impl.hpp"
#include "streamsafe/alloc/allocator_observer.hpp"

namespace streamsafe::detail {

namespace {
std::atomic<std::uint64_t> next_token{1};
struct pool_cache_entry {
  std::uint64_t token = 0;
  const StreamImpl* stream = nullptr;
  stream_id id{};
  stream_pool* pool = nullptr;
};
thread_local pool_cache_entry last_pool;

/// The pool a thread allocated from or freed into last: where its next free most likely is.
struct pool_guess {
  std::uint64_t token = 0;
  stream_pool* pool = nullptr;
};
thread_local pool_guess guessed_pool;

/// A share of `stream`; for a stream no handle owns (a device's default stream, which lives as
/// long as its device), one that owns nothing and is never the last.
std::shared_ptr<StreamImpl> share_of(StreamImpl& stream) {
  if (std::shared_ptr<StreamImpl> share = stream.weak_from_this().lock()) return share;
  return std::shared_ptr<StreamImpl>(std::shared_ptr<StreamImpl>{}, &stream);
}
}  // namespace

caching_allocator_impl::caching_allocator_impl(const Device& device, allocator_options options)
    : device_(device),
      options_(options),
      source_(std::make_unique<counting_memory_source>(make_memory_source(device))),
      events_(device),
      token_(next_token.fetch_add(1)),
      history_(options.history_capacity),
      mappings_(options.observer),
      memory_(*source_, books_, history_, owners_, mappings_),
      growth_(make_growth_policy(growth_context{*source_, options_, books_, history_, events_, memory_, mappings_,
                                                [this] { return all_pools(); }},
                                 options.segments == segment_kind::expandable && source_->supports_mapping())),
      pending_(events_, fence_policy{options.fence_batch_frees, options.fence_batch_bytes}) {
  SS_EXPECTS(options_.granularity >= min_block_bytes && options_.granularity % min_block_bytes == 0,
             "caching_allocator: granularity must be a positive multiple of ", min_block_bytes);
  SS_EXPECTS(options_.small_request_limit <= options_.small_segment_bytes,
             "caching_allocator: small_request_limit must not exceed small_segment_bytes");
  options_.expandable_reserve_bytes = round_up(options_.expandable_reserve_bytes, options_.granularity);
  if (options_.segments == segment_kind::expandable && source_->supports_mapping() && options_.repeat_plan) {
    plan_host& host = *this;
    plan_ = std::make_unique<iteration_plan>(*source_, events_, options_.granularity, host, options_.observer,
                                             options_.plan_in_background);
  }
}

caching_allocator_impl::~caching_allocator_impl() {
  // A destructor cannot throw: a failed device cannot be waited for, and the memory is returned
  // all the same. Each failure is reported, naming its call, and the release goes on.
  const auto quietly = [](const char* call, auto work) {
    try {
      work();
    } catch (const std::exception& error) {
      std::fprintf(stderr, "streamsafe: ~caching_allocator: %s failed: %s (releasing the rest)\n", call, error.what());
    } catch (...) {
      std::fprintf(stderr, "streamsafe: ~caching_allocator: %s failed (releasing the rest)\n", call);
    }
  };
  // First: the plan gives back what the pools lent it, and unmaps its own arena.
  quietly("ending the repeat plan", [&] { plan_.reset(); });
  quietly("waiting for pending frees", [&] { wait_for_pending(); });
  for (stream_pool* pool : pool_list_) {
    // Only the streams whose cached memory work may still use: not the whole device.
    if (!pool->segments().empty()) quietly("stream synchronize", [&] { pool->stream().synchronize(); });
  }
  for (stream_pool* pool : pool_list_) {
    // Memory waiting to go back is still mapped: back in the books, it is released with the rest.
    quietly("ending a waiting release", [&] {
      std::lock_guard slow(pool->growth);
      memory_.cancel_release(*pool);
    });
    for (segment* s : pool->segments()) {
      for (block* b = s->first; b != nullptr;) delete std::exchange(b, b->next);
      if (s->expandable) {
        source_->release(s->address, s->size);
        mappings_.tell_released(*s);
      } else {
        quietly("deallocate of a fixed segment", [&] { source_->deallocate(reinterpret_cast<void*>(s->address)); });
        mappings_.tell_released(*s);
      }
      delete s;
    }
  }
}

pool_kind caching_allocator_impl::kind_for(std::size_t rounded) const noexcept {
  return rounded <= options_.small_request_limit ? pool_kind::small : pool_kind::large;
}

stream_pool& caching_allocator_impl::pool_for(StreamImpl& stream) {
  const pool_cache_entry& cached = last_pool;
  if (cached.token == token_ && cached.stream == &stream && cached.id == stream.id()) [[likely]] {
    return *cached.pool;
  }
  return pool_for_slow(stream);
}

stream_pool& caching_allocator_impl::pool_for_slow(StreamImpl& stream) {
  pool_cache_entry& cached = last_pool;
  SS_EXPECTS(&stream.device() == &device_.impl(), "caching_allocator: stream '", stream.name(),
             "' belongs to another device than the allocator's (", device_.name(), ")");
  stream_pool* pool = nullptr;
  bool created = false;
  {
    std::lock_guard lock(pools_mutex_);
    auto& slot = pools_[stream.id()];
    if (!slot) {
      slot = new_pool(stream);
      growth_->prepare(*slot);
      pool_list_.push_back(slot.get());
      created = true;
    }
    pool = slot.get();
  }
  // A new stream is when streams come and go: the time to give back what the gone ones cached.
  if (created) retire_abandoned();
  cached = pool_cache_entry{token_, &stream, stream.id(), pool};
  return *pool;
}

std::unique_ptr<stream_pool> caching_allocator_impl::new_pool(StreamImpl& stream) {
  if (retired_pools_.empty()) return std::make_unique<stream_pool>(share_of(stream));
  std::unique_ptr<stream_pool> pool = std::move(retired_pools_.back());
  retired_pools_.pop_back();
  std::lock_guard lock(pool->mutex);  // a thread's stale guess may still look into it
  pool->rebind(share_of(stream));
  return pool;
}

void caching_allocator_impl::retire_abandoned() {
  std::unique_lock retiring(retire_mutex_, std::try_to_lock);
  if (!retiring.owns_lock()) return;
  std::vector<std::pair<stream_pool*, std::shared_ptr<StreamImpl>>> abandoned;  // dropped last, unlocked
  {
    std::lock_guard lock(pools_mutex_);
    for (stream_pool* pool : pool_list_) {
      if (pool->abandoned()) abandoned.emplace_back(pool, pool->stream_share());
    }
  }
  for (const auto& [pool, share] : abandoned) {
    // No work can be enqueued on an abandoned stream: once it is idle, it stays idle.
    if (!StreamRef(share.get()).query()) continue;
    try {
      retire(*pool, share);
    } catch (const std::exception&) {
      // A device call failed giving its memory back: what the device still holds is booked in
      // the pool again, and the next sweep tries again. The caller's request is not at fault.
    }
  }
}

void caching_allocator_impl::retire(stream_pool& pool, const std::shared_ptr<StreamImpl>& share) {
  std::shared_ptr<StreamImpl> dropped;  // the stream's end is a device call: after the locks
  std::lock_guard slow(pool.growth);
  memory_.cancel_release(pool);  // all of it goes below, or none
  released_memory taken;
  {
    std::lock_guard lock(pool.mutex);
    // The pool's share and ours: any other means a block or a pending free refers to it again.
    if (pool.stream_share() != share || share.use_count() != 2 || !pool.unused()) return;
    if (!memory_.take_all_memory(pool, taken)) return;
  }
  memory_.give_back(pool, taken, false);
  std::lock_guard lock(pools_mutex_);
  const auto it = pools_.find(share->id());
  std::unique_ptr<stream_pool> record = std::move(it->second);
  pools_.erase(it);
  std::erase(pool_list_, &pool);
  {
    std::lock_guard pool_lock(pool.mutex);
    books_.fold_retired(pool.stats);
    dropped = pool.unbind();
  }
  retired_pools_.push_back(std::move(record));
}

stream_pool* caching_allocator_impl::find_pool(stream_id id) const {
  std::lock_guard lock(pools_mutex_);
  const auto it = pools_.find(id);
  return it == pools_.end() ? nullptr : it->second.get();
}

std::vector<stream_pool*> caching_allocator_impl::all_pools() const {
  std::lock_guard lock(pools_mutex_);
  return pool_list_;
}

void* caching_allocator_impl::allocate(std::size_t bytes, StreamRef stream) {
  if (bytes == 0) return nullptr;
  SS_EXPECTS(bytes <= max_request_bytes, "caching_allocator::allocate(", bytes,
             " bytes): larger than any device (limit 2^47 bytes); is the size computed from a negative value?");
  // Every 4th allocation of a thread polls: a poll takes a lock, and a fence needs some time.
  thread_local unsigned allocation_tick = 0;
  if (pending_.held() != 0 && (++allocation_tick & 3u) == 0) process_pending_frees(poll_mode::lazy);
  StreamImpl& stream_impl = stream.impl();
  stream_pool& pool = pool_for(stream_impl);
  guessed_pool = {token_, &pool};
  const std::size_t rounded = round_request(bytes);
  std::uint64_t sequence = 0;
  if (plan_ != nullptr) {
    const iteration_plan::served from_plan = plan_->allocate(rounded, bytes, stream_impl);
    if (from_plan.ptr != nullptr) {
      history_.remember(trace_action::alloc, reinterpret_cast<std::uintptr_t>(from_plan.ptr), bytes, stream_impl.id());
      if (options_.observer != nullptr) options_.observer->on_allocate(from_plan.ptr, bytes, stream_impl.id());
      return from_plan.ptr;
    }
    sequence = from_plan.sequence;
  }
  const pool_kind kind = kind_for(rounded);
  block* b = nullptr;
  {
    std::lock_guard lock(pool.mutex);
    if (block* candidate = pool.find_close_fit(kind, rounded);
        candidate != nullptr && placement_mapped(*candidate, rounded)) {
      b = pool.take(candidate, rounded, pool);
      b->requested = bytes;
      stream_figures::note_allocated(pool.stats, *b, bytes);
    }
  }
  if (b == nullptr) b = allocate_slow(pool, kind, rounded, bytes);
  b->sequence = sequence;  // read only at its free, which the caller orders after this return
  history_.remember(trace_action::alloc, b->address, bytes, stream_impl.id());
  if (options_.observer != nullptr) options_.observer->on_allocate(reinterpret_cast<void*>(b->address), bytes, stream_impl.id());
  return reinterpret_cast<void*>(b->address);
}

caching_allocator_impl::locked_block caching_allocator_impl::lock_live(const void* ptr, const char* call,
                                                                    lookup how) const {
  const auto address = reinterpret_cast<std::uintptr_t>(ptr);
  const auto look = [address, how](stream_pool& pool) {
    return how == lookup::unlist ? pool.unlist_live(address) : pool.find_live(address);
  };
  stream_pool* guess = guessed_pool.token == token_ ? guessed_pool.pool : nullptr;
  if (guess != nullptr) {
    std::unique_lock lock(guess->mutex);
    if (block* b = look(*guess)) return {b, std::move(lock)};
  }
  if (stream_pool* owner = owners_.owner_of(address); owner != nullptr && owner != guess) {
    std::unique_lock lock(owner->mutex);
    if (block* b = look(*owner)) {
      guessed_pool = {token_, owner};
      return {b, std::move(lock)};
    }
  }
  SS_EXPECTS(false, "caching_allocator::", call, "(", ptr, "): not a live allocation of this allocator (",
             how == lookup::unlist ? "double free, or a foreign pointer; nothing was freed"
                                   : "freed already, never allocated here, or not the pointer allocate returned",
             ")");
  return {};
}

void caching_allocator_impl::deallocate(void* ptr) {
  if (ptr == nullptr) return;
  if (planned(ptr)) {
    deallocate_planned(ptr);
    return;
  }
  const std::uint64_t sequence = deallocate_pooled(ptr);
  if (plan_ != nullptr) plan_->pool_freed(sequence, ptr);
}

void caching_allocator_impl::deallocate_planned(void* ptr) {
  if (history_.enabled()) {
    const block_info b = plan_->block_of(ptr);
    history_.remember(trace_action::free_requested, reinterpret_cast<std::uintptr_t>(ptr), b.size, b.stream);
  }
  plan_->deallocate(ptr);
}

std::uint64_t caching_allocator_impl::deallocate_pooled(void* ptr) {
  auto [b, owner_lock] = lock_live(ptr, "deallocate", lookup::unlist);
  const std::uint64_t sequence = b->sequence;
  stream_pool& owner = *b->owner->owner;
  stream_pool& user = *b->user;
  // Told before the block can be reused, so no one hears of its next allocation first.
  const stream_id user_id = user.stream().id();
  history_.remember(trace_action::free_requested, b->address, b->size, user_id);
  if (options_.observer != nullptr) {
    // Unlisted, the block is out of every thread's reach while the lock is released.
    owner_lock.unlock();
    options_.observer->on_free(ptr, b->size, user_id);
    owner_lock.lock();
  }
  if (&user == &owner && b->recorded_streams.empty()) {  // same-stream reuse: cached at once
    stream_figures::note_freed(owner.stats, *b);
    stream_figures::note_inactive(owner.stats, b->size);
    owner.cache(b);
    return sequence;
  }
  free_pending(b, owner, std::move(owner_lock));
  return sequence;
}

void caching_allocator_impl::free_pending(block* b, stream_pool& owner, std::unique_lock<spin_mutex> owner_lock) {
  stream_pool& user = *b->user;
  // Reused by this thread's frees: the block keeps its list's capacity, and so does this copy.
  thread_local std::vector<std::shared_ptr<StreamImpl>> waits_for;
  waits_for.clear();
  for (std::shared_ptr<StreamImpl>& recorded : b->recorded_streams) waits_for.push_back(std::move(recorded));
  b->recorded_streams.clear();
  b->state = block_state::pending;
  if (&user == &owner) {
    stream_figures::note_freed(owner.stats, *b);
  } else {  // a borrowed block goes home once the borrower is done with it
    owner_lock.unlock();
    std::lock_guard lock(user.mutex);
    stream_figures::note_freed(user.stats, *b);
    waits_for.push_back(user.stream_share());
  }
  if (owner_lock.owns_lock()) owner_lock.unlock();
  pending_.hold(b, &user, waits_for);  // last: from here on a poll may reclaim it
  waits_for.clear();  // the shares were moved: nothing is dropped here
}

void caching_allocator_impl::record_stream(void* ptr, StreamRef stream) {
  StreamImpl& recorded = stream.impl();
  SS_EXPECTS(&recorded.device() == &device_.impl(), "caching_allocator::record_stream(", ptr, "): stream '",
             recorded.name(), "' belongs to another device");
  if (planned(ptr)) {
    if (plan_->record_stream(ptr, recorded) && options_.observer != nullptr) {
      options_.observer->on_record_stream(ptr, recorded.id());
    }
    return;
  }
  std::shared_ptr<StreamImpl> share = share_of(recorded);  // taken before the lock: an atomic add
  {
    auto [b, lock] = lock_live(ptr, "record_stream", lookup::find);
    if (&recorded == &b->user->stream()) return;
    auto& streams = b->recorded_streams;
    if (std::find(streams.begin(), streams.end(), share) != streams.end()) return;
    streams.push_back(std::move(share));
  }
  if (options_.observer != nullptr) options_.observer->on_record_stream(ptr, recorded.id());
}

namespace {
/// Frees `collect` finds finished go back even when it fails after finding some: a completed
/// free dropped on the way out would never be reused.
template <typename Collect, typename Reclaim>
void reclaim_collected(Collect&& collect, Reclaim&& reclaim) {
  std::vector<finished_free> done;
  try {
    collect(done);
  } catch (...) {
    reclaim(done);
    throw;
  }
  reclaim(done);
}
}  // namespace

void caching_allocator_impl::process_pending_frees(poll_mode mode) {
  reclaim_collected([&](std::vector<finished_free>& done) { pending_.poll(mode, done); },
                    [&](const std::vector<finished_free>& done) { reclaim(done); });
}

void caching_allocator_impl::reclaim(const std::vector<finished_free>& done) {
  // A fence's blocks mostly share a pool: one lock for each run of them, not one per block.
  for (std::size_t first = 0; first < done.size();) {
    stream_pool& owner = *done[first].freed->owner->owner;
    stream_pool* user = done[first].user;
    std::size_t end = first + 1;
    while (end < done.size() && done[end].user == user && done[end].freed->owner->owner == &owner) ++end;
    if (user != &owner) {
      std::lock_guard lock(user->mutex);
      for (std::size_t i = first; i < end; ++i) stream_figures::note_inactive(user->stats, done[i].freed->size);
    }
    std::lock_guard lock(owner.mutex);
    for (std::size_t i = first; i < end; ++i) {
      if (user == &owner) stream_figures::note_inactive(owner.stats, done[i].freed->size);
      owner.give_back(done[i].freed);
    }
    first = end;
  }
}

void caching_allocator_impl::wait_for_pending() {
  reclaim_collected([&](std::vector<finished_free>& done) { pending_.drain(done); },
                    [&](const std::vector<finished_free>& done) {
                      if (!done.empty()) books_.count(device_event::host_sync);
                      reclaim(done);
                    });
}

block_info caching_allocator_impl::block_of(const void* ptr) const {
  if (planned(ptr)) return plan_->block_of(ptr);
  const auto [b, lock] = lock_live(ptr, "block_of", lookup::find);
  return {reinterpret_cast<void*>(b->address), b->size, b->requested, b->user->stream().id()};
}

StreamRef caching_allocator_impl::allocation_stream(const void* ptr) const {
  if (planned(ptr)) return plan_->allocation_stream(ptr);
  const auto [b, lock] = lock_live(ptr, "allocation_stream", lookup::find);
  return StreamRef(&b->user->stream());
}

allocator_stats caching_allocator_impl::stats(StreamRef stream) const {
  const stream_pool* pool = find_pool(stream.id());
  if (pool == nullptr) return {};
  std::lock_guard lock(pool->mutex);
  return pool->stats;
}

allocator_stats caching_allocator_impl::stats() const {
  allocator_stats total = books_.figures();
  total.device_calls = source_->counts();
  const pending_frees::totals held = pending_.held_totals();
  total.num_free_fences = held.fences_recorded;
  total.pending_free_bytes = static_cast<std::int64_t>(held.bytes);
  total.pending_free_blocks = static_cast<std::int64_t>(held.blocks);
  for (const stream_pool* pool : all_pools()) {
    std::lock_guard lock(pool->mutex);
    stream_figures::add_to(total, pool->stats);
  }
  if (plan_ != nullptr) plan_->add_stats(total);
  return total;
}

void caching_allocator_impl::reset_peak_stats() {
  books_.reset_peaks();
  for (stream_pool* pool : all_pools()) {
    std::lock_guard lock(pool->mutex);
    pool->peak_live_before_reset = own_peak_live(*pool);
    stream_figures::reset_peaks(pool->stats);
  }
}

void caching_allocator_impl::reset_reserved_peak() { books_.reset_reserved_peak(); }

std::string caching_allocator_impl::snapshot_json() const {
  return detail::snapshot_json(device_.name(), all_pools(), plan_ != nullptr ? plan_->view() : std::vector<iteration_plan::arena_view>{},
                               stats());
}

std::string caching_allocator_impl::history_csv() const { return history_.csv(); }

}  // namespace streamsafe::detail
