// streamsafe's caching allocator behind torch's pluggable-allocator calls: one allocator per
// device ordinal, torch's streams adopted, frees during graph capture deferred.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "stream_registry.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"
#include "torch_backend.hpp"

namespace streamsafe::torch_alloc {

/// Ordering and lifetime as caching_allocator (its header), with torch's streams for ours.
/// Threads: every member is thread-safe.
class torch_allocator {
 public:
  static constexpr int max_devices = 64;

  explicit torch_allocator(torch_backend backend);
  ~torch_allocator();
  torch_allocator(const torch_allocator&) = delete;
  torch_allocator& operator=(const torch_allocator&) = delete;

  /// Options over STREAMSAFE_ALLOC_CONF's; usage_error after the first allocation or on a bad
  /// key. An empty string changes nothing and is accepted at any time.
  void configure(std::string_view conf);
  /// Throws usage_error on a capturing stream (the allocator has no graph-private pool, so a
  /// block taken during capture could be handed out again while a replay still uses it).
  [[nodiscard]] void* allocate(std::size_t bytes, int device, native_stream stream);
  /// Deferred, untouched, while the allocation stream or a recorded stream is capturing.
  void deallocate(void* ptr, int device, native_stream stream);
  void record_stream(void* ptr, native_stream stream);
  void empty_cache();
  /// The device's caching_allocator stats; zeros for a device not used yet.
  [[nodiscard]] allocator_stats stats(int device) const;
  void reset_peak_stats(int device);
  [[nodiscard]] std::size_t deferred_frees() const;

 private:
  struct device_slot {
    explicit device_slot(Device device, const torch_backend& backend, const allocator_options& options);
    stream_registry streams;
    caching_allocator allocator;
  };
  struct deferred_free {
    void* ptr;
    int device;
    std::vector<native_stream> streams;  // allocation stream, then recorded ones
  };

  [[nodiscard]] device_slot& slot(int device);
  [[nodiscard]] device_slot* existing_slot(int device) const;
  [[nodiscard]] device_slot& slot_holding(void* ptr);
  [[nodiscard]] bool any_capturing(const std::vector<native_stream>& streams) const;
  [[nodiscard]] std::vector<native_stream> take_recorded(void* ptr, native_stream allocation_stream);
  void drain_deferred_frees();

  torch_backend backend_;
  std::mutex slots_mutex_;  // creation of slots and the options they are made with
  allocator_options options_;
  std::array<std::atomic<device_slot*>, max_devices> slots_{};
  std::array<std::unique_ptr<device_slot>, max_devices> owned_slots_;

  std::mutex recorded_mutex_;  // streams record_stream named, per live pointer
  std::map<void*, std::vector<native_stream>> recorded_;
  std::atomic<bool> any_recorded_{false};

  mutable std::mutex deferred_mutex_;
  std::vector<deferred_free> deferred_;
  std::atomic<std::size_t> deferred_count_{0};
};

}  // namespace streamsafe::torch_alloc
