// Allocator statistics, shaped like torch.cuda.memory_stats().
#pragma once

#include <cstdint>

namespace streamsafe {

/// One tracked quantity: what it is now, its highest value, and the running totals of what was
/// added and removed (so allocated - freed == current).
struct stat_counter {
  std::int64_t current = 0;
  std::int64_t peak = 0;
  std::uint64_t allocated = 0;
  std::uint64_t freed = 0;

  void add(std::uint64_t amount) noexcept {
    current += static_cast<std::int64_t>(amount);
    allocated += amount;
    if (current > peak) peak = current;
  }
  void remove(std::uint64_t amount) noexcept {
    current -= static_cast<std::int64_t>(amount);
    freed += amount;
  }
  void merge(const stat_counter& other) noexcept {
    current += other.current;
    peak += other.peak;
    allocated += other.allocated;
    freed += other.freed;
  }
};

/// Calls the allocator made to the device's memory API: on cuda cudaMalloc, cudaFree,
/// cuMemAddressReserve, cuMemAddressFree, cuMemCreate, cuMemRelease, cuMemMap, cuMemSetAccess,
/// cuMemUnmap; on sim their stand-ins. A workload in its steady state makes none.
struct device_call_counts {
  std::uint64_t malloc = 0;
  std::uint64_t free = 0;
  std::uint64_t reserve = 0;
  std::uint64_t free_range = 0;
  std::uint64_t create = 0;
  std::uint64_t release = 0;
  std::uint64_t map = 0;
  std::uint64_t set_access = 0;
  std::uint64_t unmap = 0;

  [[nodiscard]] std::uint64_t total() const noexcept {
    return malloc + free + reserve + free_range + create + release + map + set_access + unmap;
  }
  /// The calls made between two readings of one allocator's counts: `earlier` is the older.
  [[nodiscard]] device_call_counts since(const device_call_counts& earlier) const noexcept {
    return {.malloc = malloc - earlier.malloc,
            .free = free - earlier.free,
            .reserve = reserve - earlier.reserve,
            .free_range = free_range - earlier.free_range,
            .create = create - earlier.create,
            .release = release - earlier.release,
            .map = map - earlier.map,
            .set_access = set_access - earlier.set_access,
            .unmap = unmap - earlier.unmap};
  }
};

/// Per stream every figure is exact. Device-wide (caching_allocator::stats()) currents and
/// totals are exact sums; peaks of the per-stream quantities (allocated, active, requested and
/// their counts) are the sum of per-stream peaks, an upper bound that is exact when one stream
/// allocates. reserved and segment figures are device-wide and exact.
struct allocator_stats {
  stat_counter allocated_bytes;   ///< rounded sizes of blocks handed out and not freed
  stat_counter active_bytes;      ///< allocated plus blocks freed but held for recorded streams
  stat_counter requested_bytes;   ///< sizes as asked by the callers
  stat_counter reserved_bytes;    ///< device memory held: segments, or mapped chunks
  stat_counter allocation;        ///< count of allocated blocks
  stat_counter active;            ///< count of active blocks
  stat_counter segment;           ///< count of segments
  std::uint64_t num_alloc_retries = 0;     ///< allocations that went down the OOM ladder
  std::uint64_t num_ooms = 0;              ///< out_of_memory thrown
  std::uint64_t num_sync_all_streams = 0;  ///< times every cached stream was synchronized
  /// Times the allocator blocked the host on device work: a stream synchronized before chunks
  /// are moved or memory released (each stream counts), a wait for pending frees. Not counted:
  /// the device synchronization at destruction.
  std::uint64_t num_host_syncs = 0;
  std::uint64_t num_device_alloc = 0;      ///< cudaMalloc / cuMemCreate+map calls
  std::uint64_t num_device_free = 0;       ///< cudaFree / unmap calls
  std::uint64_t num_cross_stream_reuses = 0;  ///< segments moved to another stream
  std::uint64_t num_free_fences = 0;       ///< events recorded to hold pending frees (shared, see docs)
  std::int64_t pending_free_bytes = 0;     ///< freed, held until recorded streams finish
  std::int64_t pending_free_blocks = 0;
  /// The repeat plan (docs/allocator.md, "Steady state"): times a plan was put to use (a new
  /// arena, or the same plan again), times the workload left it, allocations served from it, and
  /// the bytes its arena holds (counted in reserved_bytes too).
  std::uint64_t num_plan_activations = 0;
  std::uint64_t num_plan_derailments = 0;
  std::uint64_t num_planned_allocations = 0;
  std::uint64_t plan_arena_bytes = 0;
  device_call_counts device_calls;  ///< device-wide
};

}  // namespace streamsafe
