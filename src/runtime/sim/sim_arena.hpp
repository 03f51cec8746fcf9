// The sim backend's device memory: one host block of fixed capacity, carved first-fit.
// Running out is real here, so out-of-memory paths can be tested without a GPU.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace streamsafe::detail {

class SimArena {
 public:
  static constexpr std::size_t alignment = 256;  // what cudaMalloc guarantees

  SimArena(std::size_t capacity, std::string device_name);

  /// nullptr for 0 bytes; throws out_of_memory naming the size, what is in use and the largest
  /// free range.
  [[nodiscard]] void* allocate(std::size_t bytes);
  /// Throws usage_error for a pointer the arena did not hand out (or already took back).
  void deallocate(void* ptr);
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] std::size_t used() const;

 private:
  [[nodiscard]] std::size_t largest_free() const;  // caller holds mutex_
  void insert_free(std::size_t offset, std::size_t size);  // merges with neighbours

  struct free_deleter {
    void operator()(std::byte* p) const noexcept;
  };
  std::size_t capacity_;
  std::string device_name_;
  std::unique_ptr<std::byte, free_deleter> storage_;
  mutable std::mutex mutex_;
  std::map<std::size_t, std::size_t> free_ranges_;       // offset -> size
  std::unordered_map<std::size_t, std::size_t> live_;    // offset -> size
  std::size_t used_ = 0;
};

}  // namespace streamsafe::detail
