// The observers attached to one device, read on every runtime call. Copy-on-write: readers take
// a snapshot, so a callback never runs under the lock and attaching never blocks a notifier.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
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
    std::shared_ptr<const list_type> snapshot;
    {
      std::lock_guard lock(mutex_);
      snapshot = list_;
    }
    for (const auto& observer : *snapshot) notify(*observer);
  }

 private:
  using list_type = std::vector<std::shared_ptr<RuntimeObserver>>;
  mutable std::mutex mutex_;
  std::shared_ptr<const list_type> list_ = std::make_shared<list_type>();
  std::atomic<bool> any_{false};
};

}  // namespace streamsafe::detail
