// Stitched growth (expandable_growth::stitch): each new segment gets a window of chunk pieces
// (see chunk_packer.hpp); wholly free segments are dissolved back into their chunks before a new
// one is placed, and their windows unmapped once the stream is past them.
#include <memory>
#include <mutex>
#include <numeric>

#include "alloc/growth_policy.hpp"
#include "alloc/stitcher.hpp"
#include "runtime/stream_impl.hpp"

namespace streamsafe::detail {

namespace {

// Dormant mappings kept per stream for later segments to take over; beyond, the oldest half is
// unmapped (address space is plentiful, but each mapping holds driver state).
constexpr std::size_t dormant_limit = 4096;

class stitch_growth final : public growth_policy {
 public:
  using growth_policy::growth_policy;

  /// Serialized per pool on its growth mutex, which guards the stitcher: its map calls run
  /// outside pool.mutex.
  block* grow(stream_pool& pool, pool_kind kind, std::size_t rounded) override;

 private:
  [[nodiscard]] stitcher& stitcher_of(stream_pool& pool);  // caller holds pool.growth
  /// A new segment of `kind` over `window`'s pieces, wholly free.
  [[nodiscard]] static segment* segment_of(stitched_window window, pool_kind kind, std::size_t granularity);
};

}  // namespace

stitcher& stitch_growth::stitcher_of(stream_pool& pool) {
  if (!pool.stitched) {
    const allocator_options& options = context_.options;
    pool.stitched = std::make_unique<stitcher>(context_.source, options.granularity, options.expandable_reserve_bytes);
  }
  return *pool.stitched;
}

block* stitch_growth::grow(stream_pool& pool, pool_kind kind, std::size_t rounded) {
  std::lock_guard slow(pool.growth);  // guards the stitcher: its map calls run outside pool.mutex
  stitcher& memory = stitcher_of(pool);
  const std::size_t granularity = context_.options.granularity;
  memory.unmap_finished(false);
  // Every wholly free segment gives its bytes back first: the new one may fit best there. (Only
  // when a plan would need new chunks packs worse: 1.03 against 1.01 on the inference traces.)
  std::vector<stitched_window> dissolved;
  {
    std::lock_guard lock(pool.mutex);
    context_.memory.take_free_stitched(pool, dissolved);
  }
  for (stitched_window& window : dissolved) memory.dissolve(std::move(window));
  const chunk_packer::plan planned = kind == pool_kind::small
                                         ? memory.packer().plan_small_segment(rounded, context_.options.small_window_bytes)
                                         : memory.packer().plan_segment(rounded);
  stitched_window window = memory.stitch(planned);  // throws out_of_memory, nothing changed
  for (std::size_t i = 0; i < planned.fresh_chunks; ++i) context_.books.note_reserved(static_cast<std::int64_t>(granularity), 0);
  if (memory.dormant_over(dormant_limit)) {
    PooledEvent past_last_use = context_.events.acquire();
    past_last_use.record(StreamRef(&pool.stream()));
    memory.retire(dormant_limit / 2, std::move(past_last_use));
  }
  context_.books.note_reserved(0, 1);
  segment* fresh = segment_of(std::move(window), kind, granularity);
  std::lock_guard lock(pool.mutex);
  context_.memory.adopt(pool, fresh);
  return pool.take(fresh->first, rounded, pool);
}

segment* stitch_growth::segment_of(stitched_window window, pool_kind kind, std::size_t granularity) {
  auto* fresh = new segment;
  fresh->address = window.window.base + window.first_slot * granularity + window.pieces.front().begin;
  fresh->size = std::accumulate(window.pieces.begin(), window.pieces.end(), std::size_t{0},
                                [](std::size_t sum, const chunk_piece& p) { return sum + p.end - p.begin; });
  fresh->mapped_bytes = fresh->size;
  fresh->kind = kind;
  fresh->stitched = true;
  fresh->window = std::move(window);
  return fresh;
}

std::unique_ptr<growth_policy> make_stitch_growth(const growth_context& context) {
  return std::make_unique<stitch_growth>(context);
}

}  // namespace streamsafe::detail
