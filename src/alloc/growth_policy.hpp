// How a stream pool gets new memory when its cache cannot serve a request: one policy per
// allocator (allocator_options: segments and growth), each in a file of its own, chosen by
// make_growth_policy. A policy grows; it never borrows, reclaims or releases on its own (the
// allocator's slow path and out-of-memory ladder do, around it).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "alloc/allocation_history.hpp"
#include "alloc/allocator_books.hpp"
#include "alloc/block.hpp"
#include "alloc/counting_memory_source.hpp"
#include "alloc/pool_memory.hpp"
#include "alloc/stream_pool.hpp"
#include "streamsafe/alloc/allocator_options.hpp"
#include "streamsafe/event_pool.hpp"

namespace streamsafe::detail {

/// What a policy uses of its allocator. Every part outlives the policy; `options` is read at
/// each call (the allocator normalizes it after making the policy).
struct growth_context {
  counting_memory_source& source;
  const allocator_options& options;
  allocator_books& books;
  allocation_history& history;
  EventPool& events;
  pool_memory& memory;
  mapping_reports& mappings;
  /// Every stream's pool (thread-safe; a pool listed stays valid while the allocator lives).
  std::function<std::vector<stream_pool*>()> all_pools;
};

/// Thread safety: grow may run on several threads at once, for different pools or the same one
/// (it serializes on the pool's growth mutex where it must); prepare runs under the allocator's
/// pools lock.
class growth_policy {
 public:
  explicit growth_policy(const growth_context& context) noexcept : context_(context) {}
  virtual ~growth_policy() = default;
  growth_policy(const growth_policy&) = delete;
  growth_policy& operator=(const growth_policy&) = delete;

  /// Sets up a pool made (or reused) for a new stream. Caller holds no lock of the pool's.
  virtual void prepare(stream_pool& /*pool*/) const {}
  /// A block of `rounded` bytes of `kind`, taken live for `pool` from new memory (a new segment,
  /// new or moved chunks). Throws out_of_memory when the device has no more to give, having
  /// changed nothing; any other error after giving back what it took. Caller holds no lock.
  [[nodiscard]] virtual block* grow(stream_pool& pool, pool_kind kind, std::size_t rounded) = 0;

 protected:
  growth_context context_;
};

/// The policy for `options`: fixed segments, or expandable ones growing by options.growth
/// (`expandable` false when the device cannot map: fixed segments then).
[[nodiscard]] std::unique_ptr<growth_policy> make_growth_policy(const growth_context& context, bool expandable);

// One file each: growth_fixed.cpp, growth_map_new.cpp, growth_remap.cpp, growth_settle.cpp.
[[nodiscard]] std::unique_ptr<growth_policy> make_fixed_growth(const growth_context& context);
[[nodiscard]] std::unique_ptr<growth_policy> make_map_new_growth(const growth_context& context);
[[nodiscard]] std::unique_ptr<growth_policy> make_remap_growth(const growth_context& context);
[[nodiscard]] std::unique_ptr<growth_policy> make_settle_growth(const growth_context& context);

}  // namespace streamsafe::detail
