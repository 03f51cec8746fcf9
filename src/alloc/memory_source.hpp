// Where the allocator's segments come from: whole device allocations, or virtual ranges with
// physical memory mapped in chunks. One implementation per backend.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "streamsafe/device.hpp"

namespace streamsafe::detail {

class memory_source {
 public:
  virtual ~memory_source() = default;

  /// A fixed segment; throws out_of_memory.
  [[nodiscard]] virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* ptr) = 0;

  /// Whether reserve/map/unmap work (a cuda driver without VMM support says no).
  [[nodiscard]] virtual bool supports_mapping() const = 0;
  /// A virtual range of `bytes` (a multiple of the granularity) with nothing mapped.
  [[nodiscard]] virtual std::uintptr_t reserve(std::size_t bytes) = 0;
  /// Unmaps whatever is still mapped in the range, then gives the range back.
  virtual void release(std::uintptr_t address, std::size_t bytes) = 0;
  /// Backs one chunk of `granularity` bytes at `address` with physical memory; throws out_of_memory.
  virtual void map_chunk(std::uintptr_t address, std::size_t granularity) = 0;
  virtual void unmap_chunk(std::uintptr_t address, std::size_t granularity) = 0;

  [[nodiscard]] virtual memory_info memory() = 0;
};

/// The source for `device`'s backend.
[[nodiscard]] std::unique_ptr<memory_source> make_memory_source(const Device& device);
/// The cuda backend's source (cuda_memory.cpp; a stub without the cuda backend).
[[nodiscard]] std::unique_ptr<memory_source> make_cuda_memory_source(const Device& device);

}  // namespace streamsafe::detail
