// The observers attached to one device, read on every runtime call. Copy-on-write: readers take
// a snapshot, so attaching never blocks a notifier. The observed order (runtime_observer.hpp) is
// a recursive lock a call holds across its backend work and its callbacks, only while some
// observer is attached.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <type_traits>
#include <vector>

#include "streamsafe/runtime_observer.hpp"

namespace streamsafe::detail {

class Observers {
 public:
  void attach(std::shared_ptr<RuntimeObserver> observer);
  void detach(const RuntimeObserver* observer);

  /// Calls `notify(observer)` for each attached observer; one relaxed load when there is none.
  template <typename Notify>
  void each(Notify&& notify) const {
    if (!any_.load(std::memory_order_relaxed)) [[likely]] return;
    for (const auto& observer : *snapshot()) notify(*observer);
  }

  /// Runs `call`, then `notify(observer, result)` (`notify(observer)` for a void call) for each
  /// observer, as one step of the observed order. With no observer attached: `call` alone, after
  /// one relaxed load.
  template <typename Call, typename Notify>
  decltype(auto) step(Call&& call, Notify&& notify) {
    if (!any_.load(std::memory_order_relaxed)) [[likely]] return call();
    std::lock_guard order(order_);
    if constexpr (std::is_void_v<decltype(call())>) {
      call();
      each(notify);
    } else {
      auto result = call();
      each([&](RuntimeObserver& observer) { notify(observer, result); });
      return result;
    }
  }

  /// For observed_order_lock.
  void lock_order() { order_.lock(); }
  void unlock_order() { order_.unlock(); }

 private:
  using list_type = std::vector<std::shared_ptr<RuntimeObserver>>;
  [[nodiscard]] std::shared_ptr<const list_type> snapshot() const {
    std::lock_guard lock(mutex_);
    return list_;
  }

  mutable std::mutex mutex_;
  std::shared_ptr<const list_type> list_ = std::make_shared<list_type>();
  std::atomic<bool> any_{false};
  std::recursive_mutex order_;
};

}  // namespace streamsafe::detail
