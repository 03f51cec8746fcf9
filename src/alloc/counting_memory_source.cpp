// Counts each device call, then makes it. A call that throws is counted too: it reached the device.
#include "alloc/counting_memory_source.hpp"

namespace streamsafe::detail {

device_call_counts counting_memory_source::counts() const noexcept {
  const auto at = [this](call c) { return calls_[c].load(std::memory_order_relaxed); };
  return device_call_counts{.malloc = at(malloc_call), .free = at(free_call), .reserve = at(reserve_call),
                            .free_range = at(free_range_call), .create = at(create_call),
                            .release = at(release_call), .map = at(map_call), .set_access = at(access_call),
                            .unmap = at(unmap_call)};
}

void* counting_memory_source::allocate(std::size_t bytes) {
  count(malloc_call);
  return inner_->allocate(bytes);
}

void counting_memory_source::deallocate(void* ptr) {
  count(free_call);
  inner_->deallocate(ptr);
}

std::uintptr_t counting_memory_source::reserve(std::size_t bytes) {
  count(reserve_call);
  return inner_->reserve(bytes);
}

void counting_memory_source::free_range(std::uintptr_t address, std::size_t bytes) {
  count(free_range_call);
  inner_->free_range(address, bytes);
}

physical_handle counting_memory_source::create_physical(std::size_t granularity) {
  count(create_call);
  return inner_->create_physical(granularity);
}

void counting_memory_source::release_physical(physical_handle handle, std::size_t granularity) {
  count(release_call);
  inner_->release_physical(handle, granularity);
}

void counting_memory_source::map_physical(std::uintptr_t address, physical_handle handle, std::size_t granularity) {
  count(map_call);
  inner_->map_physical(address, handle, granularity);
}

void counting_memory_source::grant_access(std::uintptr_t address, std::size_t bytes) {
  count(access_call);
  inner_->grant_access(address, bytes);
}

void counting_memory_source::unmap_physical(std::uintptr_t address, std::size_t bytes) {
  count(unmap_call);
  inner_->unmap_physical(address, bytes);
}

}  // namespace streamsafe::detail
