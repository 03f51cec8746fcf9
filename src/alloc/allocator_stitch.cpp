// The caching allocator's stitched growth (expandable_growth::stitch): each new segment gets a
// window of chunk pieces (see chunk_packer.hpp); wholly free segments are dissolved back into
// their chunks before a new one is placed, and their windows unmapped once the stream is past them.
#include <numeric>

#include "alloc/caching_allocator_impl.hpp"
#include "runtime/stream_impl.hpp"

namespace streamsafe::detail {

stitcher& caching_allocator_impl::stitcher_of(stream_pool& pool) {
  if (!pool.stitched) {
    pool.stitched = std::make_unique<stitcher>(*source_, options_.granularity, options_.expandable_reserve_bytes);
  }
  return *pool.stitched;
}

namespace {
// Dormant mappings kept per stream for later segments to take over; beyond, the oldest half is
// unmapped (address space is plentiful, but each mapping holds driver state).
constexpr std::size_t dormant_limit = 4096;
}  // namespace

block* caching_allocator_impl::grow_stitched(stream_pool& pool, pool_kind kind, std::size_t rounded) {
  std::lock_guard slow(pool.growth);  // guards the stitcher: its map calls run outside pool.mutex
  stitcher& memory = stitcher_of(pool);
  memory.unmap_finished(false);
  // Every wholly free segment gives its bytes back first: the new one may fit best there. (Only
  // when a plan would need new chunks packs worse: 1.03 against 1.01 on the inference traces.)
  std::vector<stitched_window> dissolved;
  {
    std::lock_guard lock(pool.mutex);
    take_free_stitched(pool, dissolved);
  }
  for (stitched_window& window : dissolved) memory.dissolve(std::move(window));
  const chunk_packer::plan planned = kind == pool_kind::small
                                         ? memory.packer().plan_small_segment(rounded, options_.small_window_bytes)
                                         : memory.packer().plan_segment(rounded);
  stitched_window window = memory.stitch(planned);  // throws out_of_memory, nothing changed
  for (std::size_t i = 0; i < planned.fresh_chunks; ++i) note_reserved(static_cast<std::int64_t>(options_.granularity), 0);
  if (memory.dormant_over(dormant_limit)) {
    PooledEvent past_last_use = events_.acquire();
    past_last_use.record(StreamRef(&pool.stream()));
    memory.retire(dormant_limit / 2, std::move(past_last_use));
  }
  note_reserved(0, 1);
  auto* fresh = new segment;
  fresh->address = window.window.base + window.first_slot * options_.granularity + window.pieces.front().begin;
  fresh->size = std::accumulate(window.pieces.begin(), window.pieces.end(), std::size_t{0},
                                [](std::size_t sum, const chunk_piece& p) { return sum + p.end - p.begin; });
  fresh->mapped_bytes = fresh->size;
  fresh->kind = kind;
  fresh->stitched = true;
  fresh->window = std::move(window);
  std::lock_guard lock(pool.mutex);
  adopt_segment(pool, fresh);
  return pool.take(fresh->first, rounded, pool);
}

void caching_allocator_impl::take_free_stitched(stream_pool& pool, std::vector<stitched_window>& out) {
  pool.merge_deferred();  // a wholly free segment shows as one free block only once merged
  std::vector<segment*> dissolved;
  for (segment* s : pool.segments()) {
    if (s->stitched && wholly_free(*s)) dissolved.push_back(s);
  }
  for (segment* s : dissolved) {
    disown_segment(pool, s);
    out.push_back(std::move(s->window));
    note_reserved(0, -1);
    delete s;
  }
}

void caching_allocator_impl::release_stitched(stream_pool& pool, std::vector<stitched_window>& windows) {
  for (stitched_window& window : windows) pool.stitched->dissolve(std::move(window));
  windows.clear();
  pool.stitched->unmap_finished(true);
  const std::size_t released = pool.stitched->release_free_chunks();
  for (std::size_t i = 0; i < released; ++i) note_reserved(-static_cast<std::int64_t>(options_.granularity), 0);
}

}  // namespace streamsafe::detail
