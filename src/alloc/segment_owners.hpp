// Which stream pool owns the segment holding an address: the way to a live block's record when
// the freeing thread's own pool does not hold it (a block freed by another thread than the one
// that allocated it last, or a borrowed block). Segments change only on the slow path.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

#include "alloc/block.hpp"

namespace streamsafe::detail {

class segment_owners {
 public:
  void add(const segment& s, stream_pool* owner);
  void remove(const segment& s);
  /// The owner of the segment containing `address`; nullptr when no segment does. Pools live
  /// as long as the allocator, so the pointer stays valid even if the segment goes.
  [[nodiscard]] stream_pool* owner_of(std::uintptr_t address) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::uintptr_t, std::pair<std::uintptr_t, stream_pool*>> by_start_;  // start -> (end, owner)
};

}  // namespace streamsafe::detail
