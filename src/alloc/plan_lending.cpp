// What the caching allocator lends its repeat plan (iteration_plan.hpp): the pools' free blocks
// whose bytes are all mapped, so that a plan they hold starts without a device call, and their
// return, ordered after the plan's streams on the device.
#include <algorithm>
#include <functional>
#include <utility>
#include <mutex>
#include <vector>

#include "alloc/caching_allocator_impl.hpp"
#include "alloc/size_classes.hpp"
#include "runtime/stream_impl.hpp"
#include "streamsafe/alloc/allocator_observer.hpp"

namespace streamsafe::detail {

namespace {

/// Calls `visit(at, bytes)` for each run of mapped chunks in free block `b` (the whole block when
/// every byte is mapped). Caller holds the pool's lock.
template <typename Visit>
void for_each_mapped_run(const block& b, Visit visit) {
  if (b.state != block_state::free) return;
  if (b.mapped) {
    visit(b.address, b.size);
    return;
  }
  const segment& s = *b.owner;
  const std::uintptr_t end = b.address + b.size;
  std::uintptr_t run = 0;  // where the current run began (0: none)
  for (std::uintptr_t at = b.address; at < end;) {
    const std::uintptr_t chunk_end = std::min(end, s.address + round_up(at + 1 - s.address, s.granularity));
    const bool mapped = s.chunk_mapped[(at - s.address) / s.granularity];
    if (mapped && run == 0) run = at;
    if (!mapped && run != 0) {
      visit(run, at - run);
      run = 0;
    }
    at = chunk_end;
  }
  if (run != 0) visit(run, end - run);
}

/// The smallest size among the `most` largest runs of mapped free bytes in `pools` (0: none).
[[nodiscard]] std::size_t least_size_lent(const std::vector<stream_pool*>& pools, std::size_t most) {
  std::vector<std::size_t> sizes;
  for (stream_pool* pool : pools) {
    std::lock_guard lock(pool->mutex);
    pool->merge_deferred();  // free blocks at their full extent
    for (const segment* s : pool->segments()) {
      for (const block* b = s->first; b != nullptr; b = b->next) {
        for_each_mapped_run(*b, [&sizes](std::uintptr_t, std::size_t bytes) { sizes.push_back(bytes); });
      }
    }
  }
  if (sizes.empty() || most == 0) return 0;
  const std::size_t keep = std::min(most, sizes.size());
  std::nth_element(sizes.begin(), sizes.begin() + static_cast<std::ptrdiff_t>(keep - 1), sizes.end(), std::greater<>());
  return sizes[keep - 1];
}

/// Lends the runs of at least `least` mapped bytes in free block `b` (right to left, so what is
/// left of `b` stays a block starting where it did), until `lent` holds `most`. The block to go
/// on from; nullptr when a run could not be split off (its rest too small), `b` may be merged
/// away then and the segment lends no more. Caller holds the pool's lock.
block* lend_runs(stream_pool& pool, block* b, std::size_t least, std::size_t most, std::vector<lent_range>& lent) {
  std::vector<std::pair<std::uintptr_t, std::size_t>> runs;
  for_each_mapped_run(*b, [&](std::uintptr_t at, std::size_t bytes) {
    if (bytes >= least) runs.emplace_back(at, bytes);
  });
  for (auto run = runs.rbegin(); run != runs.rend() && lent.size() < most; ++run) {
    block* taken = pool.take_at(b, run->first, run->second, pool);
    if (taken->size != run->second || !taken->mapped) {
      (void)pool.unlist_live(taken->address);
      pool.give_back(taken);
      return nullptr;
    }
    taken->lent = true;
    lent.push_back({taken->address, taken->size, pool.stream_share()});
    if (run->first == b->address) b = taken;
  }
  return b;
}

/// The runs lend_runs would lend from `b`, in its order, none taken; `b` to go on from.
block* list_runs(stream_pool& pool, block* b, std::size_t least, std::size_t most, std::vector<lent_range>& out) {
  std::vector<std::pair<std::uintptr_t, std::size_t>> runs;
  for_each_mapped_run(*b, [&](std::uintptr_t at, std::size_t bytes) {
    if (bytes >= least) runs.emplace_back(at, bytes);
  });
  for (auto run = runs.rbegin(); run != runs.rend() && out.size() < most; ++run) {
    out.push_back({run->first, run->second, pool.stream_share()});
  }
  return b;
}

/// Largest first; among equals, lowest address first, so that a view of the pools' free memory
/// and a lending of it list the same ranges in the same order.
void sort_for_lending(std::vector<lent_range>& ranges) {
  std::sort(ranges.begin(), ranges.end(), [](const lent_range& x, const lent_range& y) {
    return x.bytes != y.bytes ? x.bytes > y.bytes : x.address < y.address;
  });
}

}  // namespace

std::vector<lent_range> caching_allocator_impl::free_memory_view(std::size_t most) {
  return gather_free_runs(most, false);
}

std::vector<lent_range> caching_allocator_impl::lend_free_memory(std::size_t most) {
  return gather_free_runs(most, true);
}

std::vector<lent_range> caching_allocator_impl::gather_free_runs(std::size_t most, bool take) {
  process_pending_frees(poll_mode::eager);  // frees whose work is done can be lent too
  const std::vector<stream_pool*> pools = all_pools();
  const std::size_t least = least_size_lent(pools, most);
  std::vector<lent_range> runs;
  if (least == 0) return runs;
  for (stream_pool* pool : pools) {
    std::lock_guard lock(pool->mutex);
    for (segment* s : pool->segments()) {
      for (block* b = s->first; b != nullptr && runs.size() < most; b = b->next) {
        b = take ? lend_runs(*pool, b, least, most, runs) : list_runs(*pool, b, least, most, runs);
        if (b == nullptr) break;
      }
    }
  }
  sort_for_lending(runs);
  return runs;
}

void caching_allocator_impl::take_back(const lent_range& range, const std::vector<StreamImpl*>& users) {
  StreamImpl& lender = *range.lender;
  // The plan tells the observer of these reuses once its lock is released.
  try {
    for (StreamImpl* user : users) {
      if (user == &lender) continue;
      PooledEvent done = events_.acquire();
      done.record(StreamRef(user));
      StreamRef(&lender).wait(done);
    }
  } catch (...) {
    // No event to order the lender with: the host waits for the users instead (if that fails
    // too, the block stays lent rather than reused under their work).
    for (StreamImpl* user : users) {
      StreamRef(user).synchronize();
      books_.count(device_event::host_sync);
    }
  }
  // The pool cannot have been retired: a lent block is live in it.
  stream_pool& pool = *find_pool(lender.id());
  std::lock_guard lock(pool.mutex);
  block* b = pool.unlist_live(range.address);
  b->lent = false;
  pool.give_back(b);
}

bool caching_allocator_impl::within_slack(std::size_t more_live) const {
  // Not stats(): the plan's own figures are read under its lock, which the caller holds.
  const auto reserved = static_cast<std::size_t>(books_.figures().reserved_bytes.current);
  const std::size_t live = live_beside(more_live);
  return reserved <= live + slack_of(live);
}

std::size_t caching_allocator_impl::slack_beside(std::size_t more_live) const {
  return slack_of(live_beside(more_live));
}

std::size_t caching_allocator_impl::slack_of(std::size_t live) const {
  return live / 100 * options_.remap_slack_percent;
}

std::size_t caching_allocator_impl::live_beside(std::size_t more_live) const {
  std::size_t live = more_live;
  for (stream_pool* pool : all_pools()) {
    std::lock_guard lock(pool->mutex);
    live += static_cast<std::size_t>(pool->stats.allocated_bytes.current);
  }
  return live;
}

}  // namespace streamsafe::detail
