// Remap growth (expandable_growth::remap): while the stream's reserved bytes stay within its peak
// live bytes plus the slack, the block takes the bins' best fit and its missing chunks are mapped;
// beyond, it goes where it needs the fewest new chunks, and that many wholly free mapped chunks of
// its segments are unmapped (after synchronizing the stream) before the new ones are mapped, so
// reserved memory follows live memory.
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
    const std::size_t peak_live = std::max(static_cast<std::size_t>(pool.stats.allocated_bytes.peak), live);
    const std::size_t allowed = peak_live + peak_live / 100 * context_.options.remap_slack_percent;
    return allowed > mapped ? (allowed - mapped) / granularity : 0;
  }
};

}  // namespace

std::unique_ptr<growth_policy> make_remap_growth(const growth_context& context) {
  return std::make_unique<remap_growth>(context);
}

}  // namespace streamsafe::detail
