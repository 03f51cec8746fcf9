// Callbacks for what happens on a device's streams, for the layers above the runtime: the hazard
// engine follows happens-before through them, the monitor turns records and waits into
// dependency edges. Cost when no observer is attached: one relaxed atomic load per call.
#pragma once

#include <cstddef>
#include <memory>

#include "streamsafe/event.hpp"
#include "streamsafe/kernel.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe {

class Device;

namespace detail {
class Observers;
}

/// Every callback runs on the host thread that made the call, after the call succeeded.
///
/// Observed order: while at least one observer is attached to a device, each call on it that
/// notifies observers (records, waits, syncs, successful queries, launches, copies, fills,
/// stream and event destruction) holds the device's order lock across its runtime work and all
/// its callbacks. So the callbacks of all threads arrive in exactly the order the runtime
/// performed the calls, and a model updated from them agrees with the runtime on what a wait
/// captured or a sync covered. The price, only while observed: such calls on one device are
/// serialized, and a synchronize holds up other threads' calls on that device until it
/// returns (it only waits for work already enqueued, so this cannot deadlock unless that work
/// itself waits for another thread's call on the device: a collective waiting for its rank's
/// peers does so only when each rank's device is used from that rank's threads alone). The lock is
/// recursive: a callback may make runtime calls on the same device.
///
/// Observers of a device used from several threads must be thread-safe. A callback must not
/// throw, and must not add or remove observers of the same device.
class RuntimeObserver {
 public:
  virtual ~RuntimeObserver() = default;

  virtual void on_stream_created(StreamRef /*stream*/) {}
  /// The Stream handle is gone (work it enqueued may still run).
  virtual void on_stream_destroyed(stream_id /*stream*/) {}
  /// The Event is destroyed, or a pooled event went back to its pool. The next acquire may hand
  /// out the same id still holding its last capture; an observer may treat it as never
  /// recorded, since a holder that waits on it before recording it waits on another's work.
  virtual void on_event_destroyed(event_id /*event*/) {}
  /// `event` now captures the work enqueued on `stream` so far.
  virtual void on_event_record(EventRef /*event*/, StreamRef /*stream*/) {}
  /// `waiter` now waits on `event`'s current capture (also called for a never-recorded event,
  /// which CUDA treats as a no-op: the observer decides what that means).
  virtual void on_stream_wait(StreamRef /*waiter*/, EventRef /*event*/) {}
  /// The host returned from a synchronize: it is now ordered after that work.
  virtual void on_stream_synchronize(StreamRef /*stream*/) {}
  virtual void on_event_synchronize(EventRef /*event*/) {}
  virtual void on_device_synchronize() {}
  /// A query returned true: the host has observed that the work is done, as a synchronize
  /// would have. For an event, the work its current capture covers (also called for a
  /// never-recorded event, whose query is true at once: the observer decides what that means);
  /// for a stream, all work enqueued on it before the query.
  virtual void on_event_query_complete(EventRef /*event*/) {}
  virtual void on_stream_query_complete(StreamRef /*stream*/) {}
  /// Work was enqueued.
  virtual void on_launch(StreamRef /*stream*/, const kernel& /*work*/) {}
  virtual void on_copy(StreamRef /*stream*/, void* /*dst*/, const void* /*src*/, std::size_t /*bytes*/) {}
  virtual void on_fill(StreamRef /*stream*/, void* /*dst*/, std::size_t /*bytes*/) {}
};

/// Attaches `observer` to `device` until detach_observer or the device's end. Thread-safe. A
/// call already running when the observer is attached or detached may or may not notify it.
void attach_observer(const Device& device, std::shared_ptr<RuntimeObserver> observer);
void detach_observer(const Device& device, const RuntimeObserver* observer);

/// Holds `device`'s order lock (see RuntimeObserver; the device must outlive the lock), for an observer's owner that must update
/// its model and make runtime calls as one step of the observed order (the hazard tracker
/// checks an op, inserts the waits it needs and enqueues it under one). Other threads' observed
/// calls on the device wait until it is released; the holder's own calls proceed. Take it
/// before any lock the owner's callbacks take, never after.
class observed_order_lock {
 public:
  explicit observed_order_lock(const Device& device);
  ~observed_order_lock();
  observed_order_lock(const observed_order_lock&) = delete;
  observed_order_lock& operator=(const observed_order_lock&) = delete;

 private:
  detail::Observers& observers_;
};

}  // namespace streamsafe
