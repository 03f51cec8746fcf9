#include <cstdio>
#include <exception>

#include "alloc/mapping_reports.hpp"
#include "common/expects.hpp"
#include "streamsafe/alloc/allocator_observer.hpp"

namespace streamsafe::detail {

namespace {

const char* change_name(mapping_change change) noexcept {
  return change == mapping_change::mapped ? "mapped" : "unmapped";
}

/// A report cannot be taken back, and the allocator's books are already done: a throwing
/// observer is reported and the caller (a growth, a release, the destructor) goes on.
void report(allocator_observer& observer, std::uintptr_t at, std::size_t bytes, mapping_change change) noexcept {
  try {
    observer.on_mapping(reinterpret_cast<void*>(at), bytes, change);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "streamsafe: caching_allocator: allocator_observer::on_mapping(%p, %zu, %s) threw: %s\n",
                 reinterpret_cast<void*>(at), bytes, change_name(change), error.what());
  } catch (...) {
    std::fprintf(stderr, "streamsafe: caching_allocator: allocator_observer::on_mapping(%p, %zu, %s) threw\n",
                 reinterpret_cast<void*>(at), bytes, change_name(change));
  }
}

}  // namespace

void mapping_reports::watch(std::shared_ptr<allocator_observer> watcher) {
  std::lock_guard lock(mutex_);
  SS_EXPECTS(watcher == nullptr || watcher_ == nullptr,
             "caching_allocator::watch_mappings: a watcher is attached already (one tracked_allocator per allocator)");
  watcher_ = std::move(watcher);
}

void mapping_reports::tell(std::uintptr_t at, std::size_t bytes, mapping_change change) noexcept {
  if (observer_ != nullptr) report(*observer_, at, bytes, change);
  std::shared_ptr<allocator_observer> watcher;  // kept while it runs: a detach may come meanwhile
  {
    std::lock_guard lock(mutex_);
    watcher = watcher_;
  }
  if (watcher != nullptr) report(*watcher, at, bytes, change);
}

void mapping_reports::tell_released(const segment& s) noexcept {
  if (!s.expandable) {
    tell(s.address, s.size, mapping_change::unmapped);
    return;
  }
  for (std::size_t chunk = 0; chunk < s.chunk_mapped.size(); ++chunk) {
    if (s.chunk_mapped[chunk]) tell(s.address + chunk * s.granularity, s.granularity, mapping_change::unmapped);
  }
}

}  // namespace streamsafe::detail
