// The backend interface: what a device must provide. One implementation per backend
// (cuda/, sim/); the public types in include/streamsafe/ forward to it.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/observers.hpp"
#include "runtime/op_timing.hpp"
#include "streamsafe/backend_kind.hpp"
#include "streamsafe/device.hpp"
#include "streamsafe/event.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::detail {

class StreamImpl;
class EventImpl;
class EventPoolState;

/// Whether an object a device creates keeps the device alive. Objects the device itself holds
/// (its default stream, its internal event pool) borrow it, or the device would never die.
enum class device_hold { owning, borrowed };

class DeviceImpl : public std::enable_shared_from_this<DeviceImpl> {
 public:
  virtual ~DeviceImpl() = default;

  [[nodiscard]] virtual backend_kind kind() const = 0;
  [[nodiscard]] virtual std::string name() const = 0;
  [[nodiscard]] virtual int ordinal() const = 0;

  [[nodiscard]] virtual std::unique_ptr<StreamImpl> create_stream(const stream_options& options,
                                                                  device_hold hold = device_hold::owning) = 0;
  [[nodiscard]] virtual std::unique_ptr<EventImpl> create_event(event_timing timing,
                                                                device_hold hold = device_hold::owning) = 0;
  [[nodiscard]] virtual StreamImpl& default_stream() = 0;
  /// A wrapper of a foreign native stream that does not own it (Device::adopt_stream). The
  /// default throws usage_error: only backends with native streams override it.
  [[nodiscard]] virtual std::unique_ptr<StreamImpl> adopt_stream(native_stream native, const stream_options& options);

  [[nodiscard]] virtual void* allocate_device(std::size_t bytes) = 0;
  virtual void free_device(void* ptr) = 0;
  [[nodiscard]] virtual void* allocate_pinned(std::size_t bytes) = 0;
  virtual void free_pinned(void* ptr) = 0;
  [[nodiscard]] virtual memory_info memory() = 0;
  virtual void synchronize() = 0;
  /// Whether work queued on the device's streams runs on the host threads that call into it
  /// (the deterministic sim scheduler), rather than on the device or its own workers.
  [[nodiscard]] virtual bool runs_work_on_callers() const { return false; }

  /// The pool behind StreamRef::wait(StreamRef); created on first use.
  [[nodiscard]] EventPoolState& internal_event_pool();
  [[nodiscard]] Observers& observers() noexcept { return observers_; }

  /// At most one op-timing sink per device (see op_timing.hpp); false when one is already set.
  [[nodiscard]] bool try_set_op_timing_sink(std::shared_ptr<OpTimingSink> sink);
  /// Removes `sink` if it is the one set.
  void clear_op_timing_sink(const OpTimingSink* sink);
  /// The sink, or nullptr; one relaxed load when none was ever set.
  [[nodiscard]] std::shared_ptr<OpTimingSink> op_timing_sink() const;

 protected:
  /// Backends call this first in their destructor: pooled events must go before what they use.
  void drop_internal_pool() {
    std::lock_guard lock(internal_pool_mutex_);
    internal_pool_.reset();
  }
  /// This device as a shared_ptr that owns it or only points at it.
  [[nodiscard]] std::shared_ptr<DeviceImpl> handle(device_hold hold) {
    return hold == device_hold::owning ? shared_from_this() : std::shared_ptr<DeviceImpl>(std::shared_ptr<DeviceImpl>{}, this);
  }

 private:
  Observers observers_;
  mutable std::mutex op_timing_mutex_;
  std::shared_ptr<OpTimingSink> op_timing_sink_;
  std::atomic<bool> has_op_timing_sink_{false};
  std::shared_ptr<EventPoolState> internal_pool_;
  std::mutex internal_pool_mutex_;
};

}  // namespace streamsafe::detail
