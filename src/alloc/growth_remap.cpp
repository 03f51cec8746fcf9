// Remap growth (expandable_growth::remap): the block goes where it needs the fewest new chunks,
// then, once the stream's reserved bytes would pass its peak live bytes plus the slack, wholly
// free mapped chunks of its segments are unmapped (after synchronizing the stream) before the
// new ones are mapped, so reserved memory follows live memory.
#include <algorithm>
#include <memory>

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

  void take_chunks_to_move(stream_pool& pool, const block& fresh, released_memory& moved) const override {
    std::size_t chunks = chunks_to_move(pool, fresh);
    for (segment* s : pool.segments()) {
      if (chunks == 0) break;
      if (s->expandable && s != fresh.owner) chunks -= pool_memory::take_free_chunks(*s, moved, chunks);
    }
    if (chunks != 0) pool_memory::take_free_chunks(*fresh.owner, moved, chunks);
  }

 private:
  [[nodiscard]] std::size_t chunks_to_move(const stream_pool& pool, const block& fresh) const {
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
    const std::size_t allowed = peak_live + peak_live / 100 * context_.options.remap_slack_percent;
    const std::size_t may_map = allowed > mapped ? (allowed - mapped) / s.granularity : 0;
    return needed > may_map ? needed - may_map : 0;
  }
};

}  // namespace

std::unique_ptr<growth_policy> make_remap_growth(const growth_context& context) {
  return std::make_unique<remap_growth>(context);
}

}  // namespace streamsafe::detail
