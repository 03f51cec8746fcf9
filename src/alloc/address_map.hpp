// Live block address -> block record, for one stream pool (guarded by the pool's lock, so it
// takes none itself). Open-addressed with backward-shift deletion: inserting allocates no
// node (the table allocates only when it grows), and probe chains stay short without tombstones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "alloc/block.hpp"

namespace streamsafe::detail {

class address_map {
 public:
  void insert(std::uintptr_t address, block* b);
  /// Removes and returns the block at `address`; nullptr when absent (nothing changes).
  [[nodiscard]] block* take(std::uintptr_t address) noexcept;
  [[nodiscard]] block* find(std::uintptr_t address) const noexcept;
  [[nodiscard]] std::size_t size() const noexcept { return used_; }

 private:
  struct slot {
    std::uintptr_t address = 0;  // 0: empty
    block* value = nullptr;
  };
  void grow();
  [[nodiscard]] std::size_t home(std::uintptr_t address) const noexcept;
  [[nodiscard]] std::size_t locate(std::uintptr_t address) const noexcept;  // index or slots_.size()
  void erase_at(std::size_t index) noexcept;

  std::vector<slot> slots_;  // power-of-two size
  std::size_t used_ = 0;
};

}  // namespace streamsafe::detail
