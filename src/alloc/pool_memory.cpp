#include "alloc/pool_memory.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>

#include "runtime/stream_impl.hpp"
#include "streamsafe/error.hpp"

namespace streamsafe::detail {

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

void pool_memory::adopt(stream_pool& pool, segment* s) {
  pool.adopt(s);
  owners_.add(*s, &pool);
}

void pool_memory::disown(stream_pool& pool, segment* s) {
  owners_.remove(*s);
  pool.disown(s);
}

void pool_memory::take_free_memory(stream_pool& pool, released_memory& out) {
  pool.merge_deferred();  // whole free chunks and segments show only once neighbours are merged
  std::vector<segment*> wholly_free_fixed;
  for (segment* s : pool.segments()) {
    if (s->expandable) {
      take_free_chunks(*s, out, s->chunk_mapped.size());
    } else if (wholly_free(*s)) {
      wholly_free_fixed.push_back(s);
    }
  }
  for (segment* s : wholly_free_fixed) {
    disown(pool, s);
    out.segments.push_back(s);
  }
}

bool pool_memory::take_all_memory(stream_pool& pool, released_memory& out) {
  pool.merge_deferred();
  const std::vector<segment*>& segments = pool.segments();
  if (!std::all_of(segments.begin(), segments.end(), [](const segment* s) { return wholly_free(*s); })) return false;
  while (!pool.segments().empty()) {
    segment* s = pool.segments().back();
    disown(pool, s);
    out.segments.push_back(s);
  }
  return true;
}

std::size_t pool_memory::take_free_chunks(segment& s, released_memory& out, std::size_t limit) {
  std::size_t taken = 0;
  if (limit == 0) return 0;
  for_each_free_mapped_chunk(s, [&](block& holder, std::size_t chunk) {
    // Listed first: out of host memory there leaves the chunk mapped in the books, not lost.
    out.chunks.push_back({&s, chunk});
    // Unmapped in the books from here on, so no request takes it; its bytes are booked once the
    // device call succeeds (see give_back).
    s.chunk_mapped[chunk] = false;
    holder.mapped = false;
    return ++taken < limit;
  });
  return taken;
}

std::size_t pool_memory::adjacent_run(const released_memory& taken, std::size_t first) {
  // Listed in address order within a segment (take_free_chunks), so a run is a stretch of the list.
  const released_memory::chunk& c = taken.chunks[first];
  std::size_t run = 1;
  while (first + run < taken.chunks.size() && taken.chunks[first + run].owner == c.owner &&
         taken.chunks[first + run].index == c.index + run) {
    ++run;
  }
  return run;
}

void pool_memory::give_back(stream_pool& pool, released_memory& taken, bool synchronize) {
  if (taken.empty()) return;
  progress done;
  try {
    if (synchronize) {
      pool.stream().synchronize();
      books_.count(device_event::host_sync);
    }
    while (done.chunks < taken.chunks.size()) {
      const released_memory::chunk& c = taken.chunks[done.chunks];
      const std::size_t run = adjacent_run(taken, done.chunks);
      const std::uintptr_t address = c.owner->address + c.index * c.owner->granularity;
      source_.unmap_chunks(address, run, c.owner->granularity);
      for (std::size_t i = 0; i < run; ++i) {
        mappings_.tell(address + i * c.owner->granularity, c.owner->granularity, mapping_change::unmapped);
      }
      done.chunks += run;
    }
    for (; done.segments < taken.segments.size(); ++done.segments) {
      const segment& s = *taken.segments[done.segments];
      if (s.expandable) {
        source_.release(s.address, s.size);
      } else {
        source_.deallocate(reinterpret_cast<void*>(s.address));
      }
      mappings_.tell_released(s);
    }
  } catch (...) {
    book_given_back(pool, taken, done);
    restore_books(pool, taken, done);
    throw;
  }
  book_given_back(pool, taken, done);
}

void pool_memory::give_back_when_done(stream_pool& pool, released_memory& taken, EventPool& events) {
  if (taken.empty()) return;
  std::optional<PooledEvent> done;
  try {
    done.emplace(events.acquire());
    // Every block taken was freed after its last use was enqueued: the event covers them all.
    done->record(StreamRef(&pool.stream()));
    if (!done->query()) {
      std::lock_guard lock(waiting_mutex_);
      waiting_.reserve(waiting_.size() + 1);  // so that no allocation fails once `taken` is moved
      waiting_.push_back({&pool, std::move(taken), std::move(*done)});
      waiting_count_.store(waiting_.size(), std::memory_order_release);
      return;
    }
  } catch (...) {
    give_back(pool, taken, true);  // no event to ask: the host waits, as a release always did
    return;
  }
  give_back(pool, taken, false);
}

bool pool_memory::finish_releases() noexcept {
  if (waiting_count_.load(std::memory_order_acquire) == 0) return false;
  struct ready_release {
    std::unique_lock<std::mutex> slow;  // the pool's growth: held until its memory went back
    waiting_release release;
  };
  std::vector<ready_release> ready;
  bool still_waiting = false;
  try {
    std::lock_guard lock(waiting_mutex_);
    ready.reserve(waiting_.size());  // so that no allocation fails once an entry is moved
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      // try_lock: a thread holding a pool's growth may be waiting for this mutex.
      std::unique_lock slow(it->pool->growth, std::try_to_lock);
      if (!slow.owns_lock() || !it->done.query()) {
        ++it;
        continue;
      }
      ready.push_back({std::move(slow), std::move(*it)});
      it = waiting_.erase(it);
    }
    still_waiting = !waiting_.empty();
    waiting_count_.store(waiting_.size(), std::memory_order_release);
  } catch (...) {
    still_waiting = true;  // a query that failed: its memory waits for the next call
  }
  for (ready_release& r : ready) {
    try {
      give_back(*r.release.pool, r.release.taken, false);
    } catch (const usage_error& e) {
      // The books name memory the source no longer maps (a release that outlived its pool):
      // not the device's failure but ours, fatal rather than booked into a pool that may be gone.
      std::fprintf(stderr, "streamsafe: a waiting release failed: %s\n", e.what());
      std::abort();
    } catch (...) {
      // give_back put what the device still holds back into the pool's books.
    }
  }
  return still_waiting;
}

void pool_memory::cancel_release(stream_pool& pool) {
  if (waiting_count_.load(std::memory_order_acquire) == 0) return;
  std::vector<waiting_release> mine;
  {
    std::lock_guard lock(waiting_mutex_);
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (it->pool != &pool) {
        ++it;
        continue;
      }
      mine.push_back(std::move(*it));
      it = waiting_.erase(it);
    }
    waiting_count_.store(waiting_.size(), std::memory_order_release);
  }
  for (waiting_release& r : mine) put_back(pool, r.taken);
}

void pool_memory::book_given_back(stream_pool& pool, const released_memory& taken, const progress& done) {
  {
    std::lock_guard lock(pool.mutex);
    for (std::size_t i = 0; i < done.chunks; ++i) taken.chunks[i].owner->mapped_bytes -= taken.chunks[i].owner->granularity;
  }
  for (std::size_t i = 0; i < done.chunks; ++i) books_.note_reserved(-static_cast<std::int64_t>(taken.chunks[i].owner->granularity), 0);
  for (std::size_t i = 0; i < done.segments; ++i) {
    segment* s = taken.segments[i];
    books_.note_reserved(-static_cast<std::int64_t>(s->mapped_bytes), -1);
    if (!s->expandable) history_.remember(trace_action::segment_free, s->address, s->size, pool.stream().id());
    delete s;
  }
}

void pool_memory::restore_books(stream_pool& pool, released_memory& taken, const progress& done) {
  // What the device still holds goes back into the books as it was: a chunk whose unmap failed
  // is still mapped, a segment whose free failed still the pool's.
  std::lock_guard lock(pool.mutex);
  for (std::size_t i = done.chunks; i < taken.chunks.size(); ++i) {
    taken.chunks[i].owner->chunk_mapped[taken.chunks[i].index] = true;
  }
  for (std::size_t i = done.segments; i < taken.segments.size(); ++i) adopt(pool, taken.segments[i]);
}

}  // namespace streamsafe::detail
