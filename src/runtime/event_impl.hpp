// What a backend's event must provide.
#pragma once

#include <memory>

#include "streamsafe/event.hpp"

namespace streamsafe::detail {

class DeviceImpl;
class StreamImpl;

class EventImpl {
 public:
  EventImpl(std::shared_ptr<DeviceImpl> device, event_timing timing);
  virtual ~EventImpl() = default;
  EventImpl(const EventImpl&) = delete;
  EventImpl& operator=(const EventImpl&) = delete;

  [[nodiscard]] event_id id() const noexcept { return id_; }
  [[nodiscard]] event_timing timing() const noexcept { return timing_; }
  [[nodiscard]] DeviceImpl& device() const noexcept { return *device_; }
  [[nodiscard]] const std::shared_ptr<DeviceImpl>& device_handle() const noexcept { return device_; }

  virtual void record(StreamImpl& stream) = 0;
  virtual void synchronize() = 0;
  [[nodiscard]] virtual bool query() = 0;
  /// Milliseconds from `start` to this event; both recorded, completed and timing-enabled
  /// (checked by the caller).
  [[nodiscard]] virtual float elapsed_ms_since(EventImpl& start) = 0;
  [[nodiscard]] virtual bool ever_recorded() const = 0;

 private:
  std::shared_ptr<DeviceImpl> device_;
  event_id id_;
  event_timing timing_;
};

}  // namespace streamsafe::detail
