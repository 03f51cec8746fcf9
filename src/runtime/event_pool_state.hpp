// The shared state of an EventPool: idle events of one device and timing mode.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/device_impl.hpp"
#include "runtime/event_impl.hpp"

namespace streamsafe::detail {

class EventPoolState {
 public:
  /// `hold` applies to the pool and its events: the device's own pool borrows it.
  EventPoolState(std::shared_ptr<DeviceImpl> device, event_timing timing, device_hold hold)
      : device_(std::move(device)), timing_(timing), hold_(hold) {}

  /// An idle event, or a new one.
  [[nodiscard]] std::unique_ptr<EventImpl> take();
  /// Observers see the event destroyed: its next holder starts afresh.
  void give_back(std::unique_ptr<EventImpl> event) noexcept;
  [[nodiscard]] std::size_t idle_count() const;
  [[nodiscard]] std::size_t created_count() const;

 private:
  void keep_idle(std::unique_ptr<EventImpl> event) noexcept;
  std::shared_ptr<DeviceImpl> device_;
  event_timing timing_;
  device_hold hold_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<EventImpl>> idle_;
  std::size_t created_ = 0;
};

}  // namespace streamsafe::detail
