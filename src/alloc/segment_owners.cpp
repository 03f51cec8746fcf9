#include "alloc/segment_owners.hpp"

namespace streamsafe::detail {

void segment_owners::add(const segment& s, stream_pool* owner) {
  std::lock_guard lock(mutex_);
  by_start_[s.address] = {s.address + s.size, owner};
}

void segment_owners::remove(const segment& s) {
  std::lock_guard lock(mutex_);
  by_start_.erase(s.address);
}

stream_pool* segment_owners::owner_of(std::uintptr_t address) const {
  std::lock_guard lock(mutex_);
  auto after = by_start_.upper_bound(address);
  if (after == by_start_.begin()) return nullptr;
  const auto& [end, owner] = std::prev(after)->second;
  return address < end ? owner : nullptr;
}

}  // namespace streamsafe::detail
