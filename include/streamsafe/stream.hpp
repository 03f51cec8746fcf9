// Streams: in-order queues of device work. StreamRef is a non-owning view; Stream owns.
//
// Ordering: work enqueued on one stream runs in enqueue order. Work on two streams is
// unordered unless one waits on an event recorded on the other (wait(EventRef)), or on the
// other stream itself (wait(StreamRef)). The host is ordered after a stream's work only by a
// synchronize() on it (or on an event recorded on it, or on the device).
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "streamsafe/backend_kind.hpp"
#include "streamsafe/kernel.hpp"
#include "streamsafe/sim_options.hpp"

namespace streamsafe {

namespace detail {
class StreamImpl;
}
class Device;
class EventRef;

/// Unique for the life of the process (native handles are reused; ids are not).
enum class stream_id : std::uint64_t {};

struct stream_options {
  /// Shown in reports, traces and (cuda) Nsight through NVTX. Empty: "stream<id>".
  std::string name;
  /// CUDA stream priority (lower is higher priority); ignored on sim.
  int priority = 0;
  /// sim only: how eagerly the scheduler runs this stream.
  sim_pacing pacing = sim_pacing::normal;
};

/// A non-owning view of a stream; cheap to copy. Using a view after its Stream is destroyed is
/// undefined, as with a cudaStream_t. Every member throws usage_error on a moved-from Stream and
/// cuda_error (naming the call and the stream) when CUDA fails.
class StreamRef {
 public:
  StreamRef(std::nullptr_t) = delete;  // no null streams
  StreamRef(int) = delete;             // no literal 0 for "the default stream": say default_stream()

  [[nodiscard]] stream_id id() const;
  [[nodiscard]] const std::string& name() const;
  [[nodiscard]] Device device() const;

  /// Work enqueued on this stream after this call waits until `event`'s recorded work is done.
  /// The wait captures the event's most recent record at this call: recording it again later
  /// does not change this wait. An event never recorded makes this a no-op (as in CUDA).
  /// Does not block the host. Throws usage_error if the event belongs to another device.
  void wait(const EventRef& event);
  /// Work enqueued on this stream after this call waits until all work enqueued on `other` so
  /// far is done (an event from the device's pool is recorded on `other` and waited on).
  void wait(StreamRef other);
  /// Blocks the host until all work enqueued on this stream so far is done.
  void synchronize();
  /// True when all work enqueued so far is done. Never blocks.
  [[nodiscard]] bool query();

  /// Enqueues `work` (see kernel.hpp).
  void launch(const kernel& work);
  /// Enqueues a copy of `bytes` bytes; the pointers may be device or pinned host memory
  /// (pageable host memory works on cuda but may make the copy synchronous).
  void copy(void* dst, const void* src, std::size_t bytes);
  /// Enqueues setting `bytes` bytes at `dst` to `value`.
  void fill(void* dst, std::uint8_t value, std::size_t bytes);

  /// The cudaStream_t on cuda; nullptr on sim.
  [[nodiscard]] native_stream native() const;

  [[nodiscard]] bool operator==(const StreamRef& other) const noexcept { return impl_ == other.impl_; }

  /// For the library's own layers. Throws usage_error on a moved-from Stream.
  [[nodiscard]] detail::StreamImpl& impl() const;
  explicit StreamRef(detail::StreamImpl* impl) noexcept : impl_(impl) {}

 protected:
  StreamRef() = default;
  detail::StreamImpl* impl_ = nullptr;
};

/// An owning stream (non-blocking with respect to the legacy default stream on cuda).
/// Destroying it does not cancel queued work: the work still runs, as with cudaStreamDestroy
/// (on sim the destructor waits for it). A caching allocator that served or recorded the stream
/// keeps the underlying stream while it holds blocks, cached memory or pending frees of it
/// (caching_allocator.hpp, "Streams"), so its pending frees stay safe.
class Stream : public StreamRef {
 public:
  explicit Stream(const Device& device, stream_options options = {});
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  /// For the library's own layers (Device::adopt_stream): takes an impl the device made.
  explicit Stream(std::shared_ptr<detail::StreamImpl> impl);

 private:
  void release() noexcept;  // destroys the owned stream, telling the device's observers
  std::shared_ptr<detail::StreamImpl> owned_;  // shared with layers that outlive the handle
};

}  // namespace streamsafe
