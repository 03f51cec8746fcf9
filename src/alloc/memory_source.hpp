// Where the allocator's segments come from: whole device allocations, or virtual ranges backed by
// physical chunks. One implementation per backend. The allocator maps a physical chunk at one
// virtual address at a time (the hazard engine knows bytes by virtual address).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "streamsafe/device.hpp"

namespace streamsafe::detail {

/// Physical memory of one chunk, mapped nowhere or somewhere; opaque to the allocator.
using physical_handle = std::uint64_t;

class memory_source {
 public:
  virtual ~memory_source() = default;

  /// A fixed segment; throws out_of_memory.
  [[nodiscard]] virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* ptr) = 0;

  /// Whether the virtual memory calls below work (a cuda driver without VMM support says no).
  [[nodiscard]] virtual bool supports_mapping() const = 0;
  /// A virtual range of `bytes` (a multiple of the granularity) with nothing mapped.
  [[nodiscard]] virtual std::uintptr_t reserve(std::size_t bytes) = 0;
  /// Gives back a range reserved above; nothing may be mapped in it any more.
  virtual void free_range(std::uintptr_t address, std::size_t bytes) = 0;
  /// Physical memory of `granularity` bytes, mapped nowhere yet; throws out_of_memory.
  [[nodiscard]] virtual physical_handle create_physical(std::size_t granularity) = 0;
  /// Gives the handle back. Where the memory is still mapped, it goes once its last mapping does.
  virtual void release_physical(physical_handle handle, std::size_t granularity) = 0;
  /// Maps `handle` at `address` (granularity-aligned, inside a reserved range); not accessible
  /// until grant_access covers it.
  virtual void map_physical(std::uintptr_t address, physical_handle handle, std::size_t granularity) = 0;
  /// Makes [address, address + bytes), chunks mapped above, readable and writable from the device;
  /// work may use it once this returns. On the H200, granting a fresh mapping and later unmapping
  /// it cost about 33 us per 2 MiB chunk, one chunk or 64 per call (bench/alloc/vmm_bench.cpp);
  /// mapping and unmapping without access, under 1 us.
  virtual void grant_access(std::uintptr_t address, std::size_t bytes) = 0;
  /// Removes the mappings in [address, address + bytes): one or several adjacent ones, each
  /// whole (no mapping is split). Memory whose handle was released goes with its last mapping;
  /// other memory stays (see release_physical). Work still enqueued that reads the range must
  /// have finished.
  virtual void unmap_physical(std::uintptr_t address, std::size_t bytes) = 0;

  /// A new chunk mapped at `address`, owned by that mapping: its handle is released at once, so
  /// the unmap alone gives the memory back (four calls to map it, one to give it back, where
  /// keeping the handle costs three and two, and a run of adjacent chunks goes in one call).
  void map_chunk(std::uintptr_t address, std::size_t granularity);
  /// Unmaps `count` adjacent chunks map_chunk put from `address` on, in one call; their memory
  /// goes back with it. A failed unmap leaves them mapped and known here (a later unmap or
  /// release retries them).
  void unmap_chunks(std::uintptr_t address, std::size_t count, std::size_t granularity);
  /// Unmaps what map_chunk put in [address, address + bytes), then frees the range. Never
  /// throws: it runs on teardown, where the device may be gone already (then the driver frees
  /// everything with the context).
  void release(std::uintptr_t address, std::size_t bytes) noexcept;

  [[nodiscard]] virtual memory_info memory() = 0;

 private:
  void expect_mapped(std::uintptr_t address, std::size_t granularity) const;  // caller holds chunks_mutex_
  // Undoes a map whose release or access failed; `unreleased`: its handle, when not released yet.
  void undo_map(std::uintptr_t address, std::size_t granularity, const physical_handle* unreleased);
  std::mutex chunks_mutex_;
  std::unordered_map<std::uintptr_t, std::size_t> chunks_;  // map_chunk's chunks: address -> bytes
};

/// The source for `device`'s backend.
[[nodiscard]] std::unique_ptr<memory_source> make_memory_source(const Device& device);
/// The cuda backend's source (cuda_memory.cpp; a stub without the cuda backend).
[[nodiscard]] std::unique_ptr<memory_source> make_cuda_memory_source(const Device& device);

}  // namespace streamsafe::detail
