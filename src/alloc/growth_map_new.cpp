// The chunk-mapping growth that map_new, remap and settle share (mapped_growth.hpp), and map_new.
#include "alloc/mapped_growth.hpp"

#include <algorithm>
#include <memory>
#include <mutex>

#include "alloc/size_classes.hpp"

namespace streamsafe::detail {

block* mapped_growth::grow(stream_pool& pool, pool_kind kind, std::size_t rounded) {
  std::lock_guard slow(pool.growth);  // the chunks mapped and moved below are this call's alone
  // Free chunks waiting to go back to the device are still mapped: the pool keeps them, instead
  // of mapping new ones beside them.
  context_.memory.cancel_release(pool);
  segment* fresh = nullptr;
  std::unique_lock lock(pool.mutex);
  block* candidate = pool.find(kind, rounded);
  if (candidate == nullptr) {  // no range yet, or they are full: reserve another
    lock.unlock();
    fresh = reserve_range(pool, kind, rounded);
    lock.lock();
    context_.memory.adopt(pool, fresh);
    candidate = pool.find(kind, rounded);
  }
  block* b = pool.take(place(pool, kind, rounded, candidate), rounded, pool);
  const std::vector<std::size_t> missing = missing_chunks(*b);
  released_memory moved;
  take_chunks_to_move(pool, *b, moved);
  lock.unlock();
  try {
    // Work already enqueued on the stream may still use a freed block's moved chunks.
    if (!moved.empty()) context_.memory.give_back(pool, moved, true);
    make_room_elsewhere(pool, *b, missing.size());
    map_chunks(pool, b, missing);
  } catch (...) {
    undo_growth(pool, b, missing, fresh);
    throw;
  }
  return b;
}

segment* mapped_growth::reserve_range(stream_pool& pool, pool_kind kind, std::size_t rounded) {
  const allocator_options& options = context_.options;
  const std::size_t bytes = range_bytes(pool, kind, rounded);
  auto fresh = std::make_unique<segment>();
  fresh->address = context_.source.reserve(bytes);
  fresh->size = bytes;
  fresh->kind = kind;
  fresh->expandable = true;
  fresh->granularity = options.granularity;
  fresh->place_at_chunk_end = kind == pool_kind::small && options.small_placement == small_block_placement::chunk_end;
  fresh->chunk_mapped.assign(bytes / options.granularity, false);
  context_.books.note_reserved(0, 1);
  return fresh.release();
}

std::size_t mapped_growth::range_bytes(const stream_pool& pool, pool_kind kind, std::size_t rounded) const {
  std::size_t held = 0;
  {
    std::lock_guard lock(pool.mutex);
    for (const segment* s : pool.segments()) held += s->kind == kind ? s->size : 0;
  }
  const allocator_options& options = context_.options;
  const std::size_t bytes = next_range_bytes(round_up(rounded, options.granularity), held, options.expandable_reserve_bytes);
  return round_up(bytes, options.granularity);
}

std::vector<std::size_t> mapped_growth::missing_chunks(const block& b) {
  const segment& s = *b.owner;
  const chunk_range range = chunks_of(s, b.address, b.size);
  std::vector<std::size_t> missing;
  for (std::size_t chunk = range.first; chunk <= range.last; ++chunk) {
    if (!s.chunk_mapped[chunk]) missing.push_back(chunk);
  }
  return missing;
}

void mapped_growth::map_chunks(stream_pool& pool, block* b, const std::vector<std::size_t>& chunks) {
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
    for (std::size_t i = 0; i < mapped; ++i) {
      context_.books.note_reserved(static_cast<std::int64_t>(s.granularity), 0);
      context_.mappings.tell(s.address + chunks[i] * s.granularity, s.granularity, mapping_change::mapped);
    }
  };
  try {
    for (; mapped < chunks.size(); ++mapped) {
      context_.source.map_chunk(s.address + chunks[mapped] * s.granularity, s.granularity);
    }
  } catch (...) {
    book();  // what was mapped is known, to be given back
    throw;
  }
  book();
}

void mapped_growth::undo_growth(stream_pool& pool, block* b, const std::vector<std::size_t>& mapped,
                                segment* fresh) {
  released_memory taken;
  {
    std::lock_guard lock(pool.mutex);
    segment& s = *b->owner;
    (void)pool.unlist_live(b->address);  // take() listed it: a later block at its address must not find it
    pool.give_back(b);
    if (fresh != nullptr && wholly_free(*fresh)) {
      context_.memory.disown(pool, fresh);  // released whole, its chunks with it
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
    context_.memory.give_back(pool, taken, false);  // never used: no stream to wait for
  } catch (...) {
    // The growth's own error is the one to report; what could not be given back stays booked.
  }
}

namespace {

/// map_new: new chunks are mapped, free ones stay mapped until they are released.
class map_new_growth final : public mapped_growth {
 public:
  using mapped_growth::mapped_growth;
};

}  // namespace

std::unique_ptr<growth_policy> make_map_new_growth(const growth_context& context) {
  return std::make_unique<map_new_growth>(context);
}

}  // namespace streamsafe::detail
