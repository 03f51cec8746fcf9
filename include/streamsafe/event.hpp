// Events: markers in a stream's work that other streams and the host can wait for.
#pragma once

#include <cstdint>
#include <memory>

namespace streamsafe {

namespace detail {
class EventImpl;
}
class Device;
class StreamRef;

/// Unique for the life of the process.
enum class event_id : std::uint64_t {};

/// Timing costs: a timing event's record is several times slower on cuda. Off unless asked.
enum class event_timing { disabled, enabled };

/// A non-owning view of an event. Every member throws usage_error on a moved-from event and
/// cuda_error (naming the call and the event) when CUDA fails.
class EventRef {
 public:
  EventRef(std::nullptr_t) = delete;

  [[nodiscard]] event_id id() const;
  [[nodiscard]] Device device() const;
  [[nodiscard]] event_timing timing() const;

  /// Captures the work enqueued on `stream` so far: the event completes when that work is done.
  /// A later record replaces the capture for later waits and queries, never for waits already
  /// enqueued. Throws usage_error if the stream belongs to another device.
  void record(StreamRef stream);
  /// Blocks the host until the captured work is done; returns at once if never recorded.
  void synchronize();
  /// True when the captured work is done, or when the event was never recorded. Never blocks.
  [[nodiscard]] bool query();

  [[nodiscard]] bool operator==(const EventRef& other) const noexcept { return impl_ == other.impl_; }
  [[nodiscard]] detail::EventImpl& impl() const;
  explicit EventRef(detail::EventImpl* impl) noexcept : impl_(impl) {}

 protected:
  EventRef() = default;
  detail::EventImpl* impl_ = nullptr;
};

/// Milliseconds between two completed timing events. Throws usage_error if either lacks timing,
/// was never recorded or has not completed, or if they belong to different devices.
[[nodiscard]] float elapsed_ms(const EventRef& start, const EventRef& end);

/// An owning event. Destroying it while its capture is pending is fine (waits already enqueued
/// on it are unaffected).
class Event : public EventRef {
 public:
  explicit Event(const Device& device, event_timing timing = event_timing::disabled);
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

 private:
  void release() noexcept;  // destroys the owned event, telling the device's observers
  std::unique_ptr<detail::EventImpl> owned_;
};

}  // namespace streamsafe
