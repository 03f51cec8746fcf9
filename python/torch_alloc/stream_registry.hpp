// torch's cudaStream_t values as streamsafe streams: each adopted once, then found by handle.
#pragma once

#include <compare>
#include <map>
#include <shared_mutex>
#include <thread>

#include "torch_backend.hpp"

namespace streamsafe::torch_alloc {

/// The CUDA runtime's special handles, spelt without its headers (cuda_backend.cpp checks them).
inline constexpr std::uintptr_t legacy_stream_handle = 0x1;
inline constexpr std::uintptr_t per_thread_stream_handle = 0x2;

/// Ordering: a resolved stream is the native one (Device::adopt_stream). Lifetime: adopted
/// wrappers live as long as the registry, so a native stream must too while it is in use.
/// Threads: resolve is thread-safe; lookups of known handles share a reader lock.
class stream_registry {
 public:
  stream_registry(Device device, std::function<Stream(const Device&, native_stream)> adopt);

  /// nullptr and cudaStreamLegacy: the device's default stream. cudaStreamPerThread: a wrapper
  /// per calling thread, since the handle names a different stream on each.
  [[nodiscard]] StreamRef resolve(native_stream native);
  [[nodiscard]] const Device& device() const noexcept { return device_; }

 private:
  struct key {
    native_stream native;
    std::thread::id thread;  // set for cudaStreamPerThread only
    auto operator<=>(const key&) const = default;
  };

  Device device_;
  std::function<Stream(const Device&, native_stream)> adopt_;
  std::shared_mutex mutex_;
  std::map<key, Stream> adopted_;
};

}  // namespace streamsafe::torch_alloc
