// A memory_source that counts the device calls it forwards, so that stats() can say how many
// calls a workload made to the device's memory API (a steady state makes none).
#pragma once

#include <array>
#include <atomic>
#include <memory>

#include "alloc/memory_source.hpp"
#include "streamsafe/alloc/allocator_stats.hpp"

namespace streamsafe::detail {

class counting_memory_source final : public memory_source {
 public:
  explicit counting_memory_source(std::unique_ptr<memory_source> inner) : inner_(std::move(inner)) {}

  /// The calls forwarded so far; thread-safe (each count is exact, the set is not one snapshot).
  [[nodiscard]] device_call_counts counts() const noexcept;
  /// The sum of counts(), read in one load: the repeat plan reads it at every request it logs.
  [[nodiscard]] std::uint64_t total() const noexcept { return total_.load(std::memory_order_relaxed); }
  /// The calls the calling thread forwarded, through any counting source: a caller that makes
  /// calls on behalf of something else tells them apart from other threads' calls.
  [[nodiscard]] static std::uint64_t calls_on_this_thread() noexcept { return thread_calls(); }

  [[nodiscard]] void* allocate(std::size_t bytes) override;
  void deallocate(void* ptr) override;
  [[nodiscard]] bool supports_mapping() const override { return inner_->supports_mapping(); }
  [[nodiscard]] std::uintptr_t reserve(std::size_t bytes) override;
  void free_range(std::uintptr_t address, std::size_t bytes) override;
  [[nodiscard]] physical_handle create_physical(std::size_t granularity) override;
  void release_physical(physical_handle handle, std::size_t granularity) override;
  void map_physical(std::uintptr_t address, physical_handle handle, std::size_t granularity) override;
  void grant_access(std::uintptr_t address, std::size_t bytes) override;
  void unmap_physical(std::uintptr_t address, std::size_t bytes) override;
  [[nodiscard]] memory_info memory() override { return inner_->memory(); }

 private:
  enum call { malloc_call, free_call, reserve_call, free_range_call, create_call, release_call, map_call,
              access_call, unmap_call, call_kinds };
  void count(call c) noexcept {
    calls_[c].fetch_add(1, std::memory_order_relaxed);
    total_.fetch_add(1, std::memory_order_relaxed);
    ++thread_calls();
  }
  static std::uint64_t& thread_calls() noexcept {
    thread_local std::uint64_t calls = 0;
    return calls;
  }

  std::unique_ptr<memory_source> inner_;
  std::array<std::atomic<std::uint64_t>, call_kinds> calls_{};
  std::atomic<std::uint64_t> total_{0};
};

}  // namespace streamsafe::detail
