// The live-allocation table; see allocations.hpp.
#include "hazard/allocations.hpp"

#include <iterator>

#include "common/expects.hpp"
#include "hazard/hex.hpp"

namespace streamsafe::hazard::detail {

allocation* allocation_table::find_containing(std::uint64_t ptr) {
  auto it = blocks_.upper_bound(ptr);
  if (it == blocks_.begin()) return nullptr;
  --it;
  return ptr < it->second.bytes().end() ? &it->second : nullptr;
}

allocation& allocation_table::add(std::uint64_t first, std::uint64_t size, agent_slot stream) {
  if (size == 0) throw usage_error(streamsafe::detail::concat("alloc of 0 bytes at ", hex(first)));
  if (first + size < first) throw usage_error(streamsafe::detail::concat("alloc at ", hex(first), " wraps past 2^64"));
  auto next = blocks_.lower_bound(first);
  const bool overlaps_next = next != blocks_.end() && next->first < first + size;
  const allocation* before = find_containing(first);
  if (overlaps_next || before != nullptr) {
    const std::uint64_t other = overlaps_next ? next->first : before->first;
    throw usage_error(streamsafe::detail::concat("alloc at ", hex(first), " overlaps the live allocation at ", hex(other)));
  }
  return blocks_.emplace_hint(next, first, allocation{first, size, stream, {}})->second;
}

const allocation& allocation_table::starting_at(std::uint64_t first) const {
  auto it = blocks_.find(first);
  if (it == blocks_.end()) throw usage_error(streamsafe::detail::concat("free of ", hex(first), ", which does not start a live allocation"));
  return it->second;
}

allocation& allocation_table::containing(std::uint64_t ptr) {
  allocation* block = find_containing(ptr);
  if (block == nullptr) throw usage_error(streamsafe::detail::concat("record_stream of ", hex(ptr), ", which is not in a live allocation"));
  return *block;
}

}  // namespace streamsafe::hazard::detail
