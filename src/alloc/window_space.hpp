// Virtual address space for stitched windows: ranges reserved from the memory source, handed out
// in whole chunks (best fit by size), coalesced when given back. A range is reserved whenever none
// has room, each as large as all before (next_range_bytes); ranges go back with the stitcher.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "alloc/memory_source.hpp"

namespace streamsafe::detail {

/// Not thread-safe: the owning stream pool's lock guards it.
class window_space {
 public:
  window_space(memory_source& source, std::size_t granularity, std::size_t reserve_bytes)
      : source_(source), granularity_(granularity), reserve_bytes_(reserve_bytes) {}
  ~window_space();
  window_space(const window_space&) = delete;
  window_space& operator=(const window_space&) = delete;

  /// `chunks` consecutive chunk-aligned addresses with nothing mapped; throws out_of_memory
  /// when no more address space can be reserved.
  [[nodiscard]] std::uintptr_t acquire(std::size_t chunks);
  /// Addresses from acquire, unmapped again.
  void give_back(std::uintptr_t address, std::size_t chunks);

 private:
  [[nodiscard]] bool starts_range(std::uintptr_t address) const noexcept;  // a reserved range's first address
  void insert_free(std::uintptr_t address, std::size_t bytes);
  void erase_free(std::map<std::uintptr_t, std::size_t>::iterator it);

  memory_source& source_;
  std::size_t granularity_;
  std::size_t reserve_bytes_;
  std::vector<std::pair<std::uintptr_t, std::size_t>> reserved_;  // address, bytes
  std::size_t reserved_bytes_ = 0;                                // their sum
  std::map<std::uintptr_t, std::size_t> free_by_address_;         // never touching
  std::multimap<std::size_t, std::uintptr_t> free_by_size_;
};

}  // namespace streamsafe::detail
