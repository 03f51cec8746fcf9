// Live pointer -> block, for deallocate and record_stream. Sharded by address so threads on
// different streams rarely share a lock, and open-addressed so inserting allocates no node
// (the table only allocates when it grows).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "alloc/block.hpp"

namespace streamsafe::detail {

class pointer_table {
 public:
  void insert(std::uintptr_t address, block* b);
  /// Removes and returns the block at `address`; nullptr when absent (nothing changes).
  [[nodiscard]] block* take(std::uintptr_t address) noexcept;
  [[nodiscard]] block* find(std::uintptr_t address) const noexcept;
  /// Every live block, for snapshots and the destructor (locks each shard in turn).
  [[nodiscard]] std::vector<block*> all() const;

 private:
  struct slot {
    std::uintptr_t address = 0;  // 0: empty
    block* value = nullptr;
  };
  struct alignas(64) shard {
    mutable std::mutex mutex;
    std::vector<slot> slots;  // power-of-two size
    std::size_t used = 0;
    void grow();
    [[nodiscard]] std::size_t home(std::uintptr_t address) const noexcept;
    [[nodiscard]] std::size_t locate(std::uintptr_t address) const noexcept;  // index or slots.size()
    void erase_at(std::size_t index) noexcept;
  };
  static constexpr std::size_t shard_count = 64;
  [[nodiscard]] static std::size_t shard_of(std::uintptr_t address) noexcept;

  std::array<shard, shard_count> shards_;
};

}  // namespace streamsafe::detail
