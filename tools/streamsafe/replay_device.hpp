// The device a trace replay runs on, for `streamsafe replay` and the replay benchmark alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "streamsafe/alloc/trace_replay.hpp"
#include "streamsafe/device.hpp"

namespace streamsafe::demo {

/// `backend` "cuda": device 0. "sim": host memory of twice the trace's peak live bytes plus
/// 1 GiB; `busy` runs its streams on threads (sim_mode::threaded), so that busy work really runs
/// beside the host and a synchronization waits for it. Throws usage_error for another backend.
[[nodiscard]] Device replay_device(const std::string& backend, const std::vector<trace_event>& events, bool busy);

/// The most bytes the trace has live at once (allocations, less frees at free_requested).
[[nodiscard]] std::uint64_t trace_peak_live(const std::vector<trace_event>& events);

/// A tight device, where a stream's cache cannot always grow and caches must be shared: holds
/// device memory so that only `factor` times the trace's peak live bytes stay free (nothing when
/// that much or less is free already). Make it before the allocator under test and destroy it
/// after; on cuda its free synchronizes the device. factor 0: holds nothing.
class device_headroom {
 public:
  device_headroom(const Device& device, const std::vector<trace_event>& events, double factor);
  device_headroom(const device_headroom&) = delete;
  device_headroom& operator=(const device_headroom&) = delete;
  ~device_headroom();

  /// Bytes free on the device for the replay, once the headroom is held.
  [[nodiscard]] std::uint64_t free_bytes() const { return free_bytes_; }

 private:
  Device device_;
  void* held_ = nullptr;
  std::uint64_t free_bytes_ = 0;
};

}  // namespace streamsafe::demo
