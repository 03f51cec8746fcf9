// A snapshot of the caching allocator: its streams' segments and blocks, and its statistics, as
// one JSON object (docs/allocator.md gives the schema).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "alloc/iteration_plan.hpp"
#include "alloc/stream_pool.hpp"
#include "streamsafe/alloc/allocator_stats.hpp"

namespace streamsafe::detail {

/// Locks each pool in turn (never two at once): each pool's segments are consistent, the pools
/// are not one instant. `totals` is the allocator's stats(), taken by the caller; `arena` the
/// repeat plan's ranges (none: no arena), each a segment of pool "plan".
[[nodiscard]] std::string snapshot_json(std::string_view device_name, const std::vector<stream_pool*>& pools,
                                        const std::vector<iteration_plan::arena_view>& arena, const allocator_stats& totals);

}  // namespace streamsafe::detail
