// Fixed segments (segment_kind::fixed): every growth is a whole new segment from the device
// (cudaMalloc); its free space never spans two segments.
#include <memory>
#include <mutex>

#include "alloc/growth_policy.hpp"
#include "alloc/size_classes.hpp"
#include "runtime/stream_impl.hpp"
#include "streamsafe/error.hpp"

namespace streamsafe::detail {

namespace {

class fixed_growth final : public growth_policy {
 public:
  using growth_policy::growth_policy;

  block* grow(stream_pool& pool, pool_kind kind, std::size_t rounded) override {
    std::size_t bytes = segment_bytes(kind, rounded);
    auto fresh = std::make_unique<segment>();
    try {
      fresh->address = reinterpret_cast<std::uintptr_t>(context_.source.allocate(bytes));
    } catch (const out_of_memory&) {
      // The preferred segment does not fit: the smallest that serves the request may.
      const std::size_t smallest = round_up(rounded, std::size_t{2} << 20);
      if (kind == pool_kind::small || smallest >= bytes) throw;
      bytes = smallest;
      fresh->address = reinterpret_cast<std::uintptr_t>(context_.source.allocate(bytes));
    }
    fresh->size = fresh->mapped_bytes = bytes;
    fresh->kind = kind;
    context_.books.note_reserved(static_cast<std::int64_t>(bytes), 1);
    context_.history.remember(trace_action::segment_alloc, fresh->address, bytes, pool.stream().id());
    context_.mappings.tell(fresh->address, bytes, mapping_change::mapped);
    std::lock_guard lock(pool.mutex);
    segment* adopted = fresh.release();
    context_.memory.adopt(pool, adopted);
    return pool.take(adopted->first, rounded, pool);
  }

 private:
  [[nodiscard]] std::size_t segment_bytes(pool_kind kind, std::size_t rounded) const noexcept {
    const allocator_options& options = context_.options;
    if (kind == pool_kind::small) return options.small_segment_bytes;
    if (rounded < options.large_segment_bytes / 2) return options.large_segment_bytes;
    return round_up(rounded, std::size_t{2} << 20);
  }
};

}  // namespace

std::unique_ptr<growth_policy> make_fixed_growth(const growth_context& context) {
  return std::make_unique<fixed_growth>(context);
}

}  // namespace streamsafe::detail
