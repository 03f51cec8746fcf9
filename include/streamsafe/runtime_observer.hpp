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

/// Every callback runs on the host thread that made the call, after the call succeeded (so the
/// order of callbacks for one thread is the order of that thread's calls). Observers of a
/// device used from several threads must be thread-safe. A callback must not throw, and must not
/// add or remove observers of the same device.
class RuntimeObserver {
 public:
  virtual ~RuntimeObserver() = default;

  virtual void on_stream_created(StreamRef /*stream*/) {}
  virtual void on_stream_destroyed(stream_id /*stream*/) {}
  /// `event` now captures the work enqueued on `stream` so far.
  virtual void on_event_record(EventRef /*event*/, StreamRef /*stream*/) {}
  /// `waiter` now waits on `event`'s current capture (also called for a never-recorded event,
  /// which CUDA treats as a no-op: the observer decides what that means).
  virtual void on_stream_wait(StreamRef /*waiter*/, EventRef /*event*/) {}
  /// The host returned from a synchronize: it is now ordered after that work.
  virtual void on_stream_synchronize(StreamRef /*stream*/) {}
  virtual void on_event_synchronize(EventRef /*event*/) {}
  virtual void on_device_synchronize() {}
  /// Work was enqueued.
  virtual void on_launch(StreamRef /*stream*/, const kernel& /*work*/) {}
  virtual void on_copy(StreamRef /*stream*/, void* /*dst*/, const void* /*src*/, std::size_t /*bytes*/) {}
  virtual void on_fill(StreamRef /*stream*/, void* /*dst*/, std::size_t /*bytes*/) {}
};

/// Attaches `observer` to `device` until detach_observer or the device's end. Thread-safe.
void attach_observer(const Device& device, std::shared_ptr<RuntimeObserver> observer);
void detach_observer(const Device& device, const RuntimeObserver* observer);

}  // namespace streamsafe
