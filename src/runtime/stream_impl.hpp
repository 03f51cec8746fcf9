// What a backend's stream must provide. Identity (id, name, device) lives here once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "streamsafe/kernel.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::detail {

class DeviceImpl;
class EventImpl;

// Shared: a Stream handle owns its impl, and layers that must use a stream after its handle is
// gone (the caching allocator records events on and synchronizes the streams it served) keep a
// share through shared_from_this. Impls not owned that way (a device's default stream) give an
// empty weak_from_this and live as long as their device.
class StreamImpl : public std::enable_shared_from_this<StreamImpl> {
 public:
  StreamImpl(std::shared_ptr<DeviceImpl> device, const stream_options& options);
  virtual ~StreamImpl() = default;
  StreamImpl(const StreamImpl&) = delete;
  StreamImpl& operator=(const StreamImpl&) = delete;

  [[nodiscard]] stream_id id() const noexcept { return id_; }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] DeviceImpl& device() const noexcept { return *device_; }
  [[nodiscard]] const std::shared_ptr<DeviceImpl>& device_handle() const noexcept { return device_; }

  virtual void wait(EventImpl& event) = 0;
  virtual void synchronize() = 0;
  [[nodiscard]] virtual bool query() = 0;
  virtual void launch(const kernel& work) = 0;
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void fill(void* dst, std::uint8_t value, std::size_t bytes) = 0;
  [[nodiscard]] virtual native_stream native() const = 0;

 private:
  std::shared_ptr<DeviceImpl> device_;
  stream_id id_;
  std::string name_;
};

}  // namespace streamsafe::detail
