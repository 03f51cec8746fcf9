#include "runtime/observers.hpp"

#include <algorithm>

#include "common/expects.hpp"
#include "runtime/device_impl.hpp"
#include "streamsafe/device.hpp"

namespace streamsafe {

namespace detail {

void Observers::attach(std::shared_ptr<RuntimeObserver> observer) {
  SS_EXPECTS(observer != nullptr, "attach_observer: null observer");
  std::lock_guard lock(mutex_);
  auto next = std::make_shared<list_type>(*list_);
  next->push_back(std::move(observer));
  list_ = std::move(next);
  any_.store(true, std::memory_order_relaxed);
}

void Observers::detach(const RuntimeObserver* observer) {
  std::lock_guard lock(mutex_);
  auto next = std::make_shared<list_type>(*list_);
  std::erase_if(*next, [observer](const auto& o) { return o.get() == observer; });
  any_.store(!next->empty(), std::memory_order_relaxed);
  list_ = std::move(next);
}

}  // namespace detail

void attach_observer(const Device& device, std::shared_ptr<RuntimeObserver> observer) {
  device.impl().observers().attach(std::move(observer));
}

void detach_observer(const Device& device, const RuntimeObserver* observer) {
  device.impl().observers().detach(observer);
}

observed_order_lock::observed_order_lock(const Device& device) : observers_(device.impl().observers()) {
  observers_.lock_order();
}

observed_order_lock::~observed_order_lock() { observers_.unlock_order(); }

}  // namespace streamsafe
