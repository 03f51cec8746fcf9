// Where the operations of a training loop written by hand go: straight to the runtime and the
// caching allocator (the comparison benchmark), or through a hazard tracker that is told the
// ranges each op reads and writes (the demo). The same loop code is then both measured and
// checked, each op reported at its caller's line. Not thread-safe: one loop, on one host thread.
#pragma once

#include <cstddef>
#include <initializer_list>

#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/hazard/tracked_allocator.hpp"
#include "streamsafe/hazard/tracker.hpp"
#include "streamsafe/kernel.hpp"
#include "streamsafe/source_location.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::demo {

struct memory_range {
  const void* data = nullptr;
  std::size_t bytes = 0;
};

class loop_ops {
 public:
  /// Untracked: every call goes to `memory` and the stream as it is.
  explicit loop_ops(caching_allocator& memory) : plain_(&memory) {}
  /// Tracked: memory through `memory` (which tells `hazards` the lifetimes), ops described to
  /// `hazards` before they are enqueued.
  loop_ops(hazard::tracker& hazards, hazard::tracked_allocator& memory) : hazards_(&hazards), tracked_(&memory) {}

  [[nodiscard]] void* allocate(std::size_t bytes, StreamRef stream, streamsafe::source_location where = streamsafe::source_location::current());
  void deallocate(void* ptr, streamsafe::source_location where = streamsafe::source_location::current());
  void record_stream(void* ptr, StreamRef stream, streamsafe::source_location where = streamsafe::source_location::current());
  /// Enqueues `work` on `stream`; `reads` and `writes` are what it touches (told to the tracker).
  void launch(StreamRef stream, const kernel& work, std::initializer_list<memory_range> reads,
              std::initializer_list<memory_range> writes, streamsafe::source_location where = streamsafe::source_location::current());
  void copy(StreamRef stream, void* dst, const void* src, std::size_t bytes, streamsafe::source_location where = streamsafe::source_location::current());
  /// The host is about to write host memory at [ptr, ptr + bytes).
  void host_writes(const void* ptr, std::size_t bytes, streamsafe::source_location where = streamsafe::source_location::current());

 private:
  caching_allocator* plain_ = nullptr;
  hazard::tracker* hazards_ = nullptr;
  hazard::tracked_allocator* tracked_ = nullptr;
};

}  // namespace streamsafe::demo
