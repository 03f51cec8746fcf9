// Process-wide unique ids for runtime handles (native handles are reused; these never are).
#pragma once

#include <atomic>
#include <cstdint>

namespace streamsafe::detail {

/// The next id of type `Id` (an enum class over std::uint64_t), starting at 1. Thread-safe.
template <typename Id>
[[nodiscard]] Id next_unique_id() noexcept {
  static std::atomic<std::uint64_t> counter{0};
  return Id{counter.fetch_add(1, std::memory_order_relaxed) + 1};
}

}  // namespace streamsafe::detail
