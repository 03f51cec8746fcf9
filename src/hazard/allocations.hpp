// The live allocations: who allocated each block, and which streams were recorded on it
// (record_stream). Keyed by first byte; erased at free, so it holds live state only.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "hazard/epoch.hpp"
#include "streamsafe/hazard/ids.hpp"

namespace streamsafe::hazard::detail {

struct allocation {
  std::uint64_t first = 0;
  std::uint64_t size = 0;
  agent_slot stream{};
  std::vector<agent_slot> recorded;  // streams given to record_stream, each once

  [[nodiscard]] byte_range bytes() const noexcept { return {first, size}; }
};

class allocation_table {
 public:
  /// Throws usage_error if the block is empty or overlaps a live allocation.
  allocation& add(std::uint64_t first, std::uint64_t size, agent_slot stream);
  /// The live allocation starting at `first`; throws usage_error if there is none.
  [[nodiscard]] const allocation& starting_at(std::uint64_t first) const;
  /// The live allocation containing `ptr`; throws usage_error if there is none.
  [[nodiscard]] allocation& containing(std::uint64_t ptr);
  void remove(std::uint64_t first) { blocks_.erase(first); }
  [[nodiscard]] std::size_t size() const noexcept { return blocks_.size(); }

 private:
  [[nodiscard]] allocation* find_containing(std::uint64_t ptr);
  std::map<std::uint64_t, allocation> blocks_;
};

}  // namespace streamsafe::hazard::detail
