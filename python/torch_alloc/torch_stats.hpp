// allocator_stats under PyTorch's torch.cuda.memory_stats() key names.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "streamsafe/alloc/allocator_stats.hpp"

namespace streamsafe::torch_alloc {

/// Every key torch_stat_values fills, in its order: "<stat>.all.<current|peak|allocated|freed>"
/// for allocated_bytes, active_bytes, requested_bytes, reserved_bytes, allocation, active and
/// segment, then num_alloc_retries, num_ooms, num_sync_all_streams, num_device_alloc and
/// num_device_free. Only what allocator_stats counts exactly as torch defines it: no per-pool
/// (small_pool, large_pool) split, no inactive_split figures, no oversize counts.
[[nodiscard]] std::span<const char* const> torch_stat_keys();
/// The values for torch_stat_keys(), in order.
[[nodiscard]] std::vector<std::int64_t> torch_stat_values(const allocator_stats& stats);

}  // namespace streamsafe::torch_alloc
