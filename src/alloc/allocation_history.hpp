// The caching allocator's history: a ring buffer of its last events (allocations, frees,
// segments), readable as a trace in the `replay` format (GUIDE.md section 5).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "streamsafe/alloc/trace_replay.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::detail {

/// Every member is thread-safe; the lock is a leaf (taken under any of the allocator's locks).
class allocation_history {
 public:
  /// Keeps the last `capacity` events; 0 keeps none (remember does nothing).
  explicit allocation_history(std::size_t capacity) : ring_(capacity) {}

  [[nodiscard]] bool enabled() const noexcept { return !ring_.empty(); }
  void remember(trace_action action, std::uintptr_t address, std::size_t bytes, stream_id stream) {
    if (enabled()) append(action, address, bytes, stream);
  }
  /// The events kept, oldest first, as a trace with a header line.
  [[nodiscard]] std::string csv() const;

 private:
  void append(trace_action action, std::uintptr_t address, std::size_t bytes, stream_id stream);

  mutable std::mutex mutex_;
  std::vector<trace_event> ring_;
  std::size_t next_ = 0;  // events remembered so far
};

}  // namespace streamsafe::detail
