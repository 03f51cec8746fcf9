// A pool of reusable events: acquire, record, and let the handle return the event.
// Creating and destroying a CUDA event costs more than recording one; a pool pays creation once.
#pragma once

#include <cstddef>
#include <memory>

#include "streamsafe/event.hpp"

namespace streamsafe {

namespace detail {
class EventPoolState;
}

/// An event borrowed from a pool; returned to it on destruction (also after the pool object is
/// gone). Returning an event whose recorded work is still pending is fine: waits already
/// enqueued on it are unaffected by later records.
class PooledEvent : public EventRef {
 public:
  ~PooledEvent();
  PooledEvent(PooledEvent&& other) noexcept;
  PooledEvent& operator=(PooledEvent&& other) noexcept;
  PooledEvent(const PooledEvent&) = delete;
  PooledEvent& operator=(const PooledEvent&) = delete;

 private:
  friend class EventPool;
  PooledEvent(std::shared_ptr<detail::EventPoolState> pool, std::unique_ptr<detail::EventImpl> event);
  void give_back() noexcept;
  std::shared_ptr<detail::EventPoolState> pool_;
  std::unique_ptr<detail::EventImpl> owned_;
};

/// Thread-safe.
class EventPool {
 public:
  explicit EventPool(const Device& device, event_timing timing = event_timing::disabled);
  /// An idle event of the pool, or a new one when none is idle.
  [[nodiscard]] PooledEvent acquire();
  [[nodiscard]] std::size_t idle_count() const;
  /// Events created over the pool's life: acquire() calls that found none idle.
  [[nodiscard]] std::size_t created_count() const;

 private:
  std::shared_ptr<detail::EventPoolState> state_;
};

}  // namespace streamsafe
