// Expandable segments' chunks on top of the sources' physical-memory calls.
#include "alloc/memory_source.hpp"

#include <vector>

#include "common/expects.hpp"

namespace streamsafe::detail {

void memory_source::map_chunk(std::uintptr_t address, std::size_t granularity) {
  {
    std::lock_guard lock(chunks_mutex_);
    SS_EXPECTS(chunks_.count(address) == 0, "memory_source: map of a chunk at ", reinterpret_cast<void*>(address),
               " that is mapped already");
  }
  const physical_handle handle = create_physical(granularity);
  try {
    map_physical(address, handle, granularity);
  } catch (...) {
    release_physical(handle, granularity);
    throw;
  }
  try {
    release_physical(handle, granularity);  // the mapping keeps the memory; its unmap gives it back
  } catch (...) {
    undo_map(address, granularity, &handle);
    throw;
  }
  try {
    grant_access(address, granularity);
  } catch (...) {
    undo_map(address, granularity, nullptr);
    throw;
  }
  std::lock_guard lock(chunks_mutex_);
  chunks_.emplace(address, granularity);
}

void memory_source::undo_map(std::uintptr_t address, std::size_t granularity, const physical_handle* unreleased) {
  try {
    unmap_physical(address, granularity);
  } catch (...) {
    // Still mapped: known, so that unmap_chunks or release() retries it (its memory goes then).
    std::lock_guard lock(chunks_mutex_);
    chunks_.emplace(address, granularity);
    return;
  }
  if (unreleased == nullptr) return;
  try {
    release_physical(*unreleased, granularity);
  } catch (...) {
    // A handle the driver would not take back twice: the caller's error says what failed first.
  }
}

void memory_source::unmap_chunks(std::uintptr_t address, std::size_t count, std::size_t granularity) {
  {
    std::lock_guard lock(chunks_mutex_);
    for (std::size_t i = 0; i < count; ++i) expect_mapped(address + i * granularity, granularity);
  }
  unmap_physical(address, count * granularity);  // a failure leaves the chunks known, still mapped
  std::lock_guard lock(chunks_mutex_);
  for (std::size_t i = 0; i < count; ++i) chunks_.erase(address + i * granularity);
}

void memory_source::expect_mapped(std::uintptr_t address, std::size_t granularity) const {
  const auto it = chunks_.find(address);
  SS_EXPECTS(it != chunks_.end() && it->second == granularity, "memory_source: unmap of a chunk at ",
             reinterpret_cast<void*>(address), " that is not mapped");
}

void memory_source::release(std::uintptr_t address, std::size_t bytes) noexcept {
  std::vector<std::pair<std::uintptr_t, std::size_t>> inside;
  {
    std::lock_guard lock(chunks_mutex_);
    for (auto it = chunks_.begin(); it != chunks_.end();) {
      if (it->first >= address && it->first < address + bytes) {
        inside.emplace_back(*it);
        it = chunks_.erase(it);
      } else {
        ++it;
      }
    }
  }
  const auto quietly = [](auto call) {
    try {
      call();
    } catch (...) {
      // Teardown of a device that failed or went first: nothing left to give back to.
    }
  };
  for (const auto& entry : inside) {  // not a structured binding: lambdas capture it (clang 15)
    quietly([&] { unmap_physical(entry.first, entry.second); });
  }
  quietly([&] { free_range(address, bytes); });
}

}  // namespace streamsafe::detail
