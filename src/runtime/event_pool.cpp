#include "streamsafe/event_pool.hpp"

#include "runtime/device_impl.hpp"
#include "runtime/event_pool_state.hpp"

namespace streamsafe {

namespace detail {

std::unique_ptr<EventImpl> EventPoolState::take() {
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      auto event = std::move(idle_.back());
      idle_.pop_back();
      return event;
    }
    ++created_;
  }
  return device_->create_event(timing_, hold_);
}

void EventPoolState::give_back(std::unique_ptr<EventImpl> event) noexcept {
  const auto id = event->id();
  device_->observers().step([&] { keep_idle(std::move(event)); },
                            [&](RuntimeObserver& o) { o.on_event_destroyed(id); });
}

void EventPoolState::keep_idle(std::unique_ptr<EventImpl> event) noexcept {
  std::lock_guard lock(mutex_);
  try {
    idle_.push_back(std::move(event));
  } catch (...) {
    // Out of host memory while growing the idle list: the event is destroyed instead of kept.
  }
}

std::size_t EventPoolState::idle_count() const {
  std::lock_guard lock(mutex_);
  return idle_.size();
}

std::size_t EventPoolState::created_count() const {
  std::lock_guard lock(mutex_);
  return created_;
}

}  // namespace detail

PooledEvent::PooledEvent(std::shared_ptr<detail::EventPoolState> pool, std::unique_ptr<detail::EventImpl> event)
    : pool_(std::move(pool)), owned_(std::move(event)) {
  impl_ = owned_.get();
}

void PooledEvent::give_back() noexcept {
  if (owned_) pool_->give_back(std::move(owned_));
  impl_ = nullptr;
}

PooledEvent::~PooledEvent() { give_back(); }

PooledEvent::PooledEvent(PooledEvent&& other) noexcept
    : pool_(std::move(other.pool_)), owned_(std::move(other.owned_)) {
  impl_ = owned_.get();
  other.impl_ = nullptr;
}

PooledEvent& PooledEvent::operator=(PooledEvent&& other) noexcept {
  give_back();
  pool_ = std::move(other.pool_);
  owned_ = std::move(other.owned_);
  impl_ = owned_.get();
  other.impl_ = nullptr;
  return *this;
}

EventPool::EventPool(const Device& device, event_timing timing)
    : state_(std::make_shared<detail::EventPoolState>(device.impl().shared_from_this(), timing,
                                                     detail::device_hold::owning)) {}

PooledEvent EventPool::acquire() { return PooledEvent(state_, state_->take()); }
std::size_t EventPool::idle_count() const { return state_->idle_count(); }
std::size_t EventPool::created_count() const { return state_->created_count(); }

}  // namespace streamsafe
