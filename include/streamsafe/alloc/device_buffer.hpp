// A typed, owning device buffer whose memory comes from a stream_ordered_resource.
#pragma once

#include <cstddef>
#include <span>
#include <utility>

#include "streamsafe/alloc/memory_resource.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe {

/// `count` elements of T on the device, allocated on `stream`. Uninitialized (T must be
/// trivially copyable). Destruction frees through the resource, stream-ordered as the resource
/// says; a stream other than the allocation stream that used the buffer must be passed to
/// record_stream first. The resource must outlive the buffer. Not thread-safe (as a vector).
template <typename T, stream_ordered_resource Resource>
class device_buffer {
 public:
  device_buffer(Resource& resource, std::size_t count, StreamRef stream)
      : resource_(&resource), data_(static_cast<T*>(resource.allocate(count * sizeof(T), stream))), count_(count) {}
  ~device_buffer() { reset(); }
  device_buffer(device_buffer&& other) noexcept
      : resource_(other.resource_), data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  device_buffer& operator=(device_buffer&& other) noexcept {
    if (this != &other) {
      reset();
      resource_ = other.resource_;
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;

  /// `stream` also uses the buffer: its memory is not reused before that work completes.
  void record_stream(StreamRef stream) { resource_->record_stream(data_, stream); }
  [[nodiscard]] T* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return count_ * sizeof(T); }
  [[nodiscard]] std::span<T> span() const noexcept { return {data_, count_}; }

  /// Frees now (stream-ordered); the buffer becomes empty.
  void reset() {
    if (data_ != nullptr) resource_->deallocate(std::exchange(data_, nullptr));
    count_ = 0;
  }

 private:
  Resource* resource_;
  T* data_;
  std::size_t count_;
};

}  // namespace streamsafe
