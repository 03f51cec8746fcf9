// The allocator's reports of the physical memory behind its addresses (allocator_observer's
// on_mapping): to options().observer and to a watcher attached later (the hazard tracker's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "alloc/block.hpp"
#include "streamsafe/alloc/allocator_observer.hpp"

namespace streamsafe::detail {

/// Thread-safe. A report cannot be taken back and the allocator's books are already done when
/// it is made: a throwing observer is reported on stderr and the caller goes on.
class mapping_reports {
 public:
  explicit mapping_reports(allocator_observer* observer) noexcept : observer_(observer) {}
  /// One watcher at a time (one tracked_allocator per allocator); usage_error for a second.
  void watch(std::shared_ptr<allocator_observer> watcher);
  void tell(std::uintptr_t at, std::size_t bytes, mapping_change change) noexcept;
  /// `unmapped` for each piece of physical memory segment `s` held (given back whole).
  void tell_released(const segment& s) noexcept;

 private:
  allocator_observer* observer_;
  std::mutex mutex_;
  std::shared_ptr<allocator_observer> watcher_;
};

}  // namespace streamsafe::detail
