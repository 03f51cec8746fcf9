// A device: the backend (cuda or sim) that streams, events and memory belong to.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "streamsafe/backend_kind.hpp"
#include "streamsafe/kernel.hpp"
#include "streamsafe/sim_options.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe {

namespace detail {
class DeviceImpl;
}
struct memory_info {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
};

/// A shared handle to one device. Copies refer to the same device; streams, events and buffers
/// keep their device alive. Thread-safe: any thread may use a Device and its streams.
class Device {
 public:
  /// cuda device 0 when the cuda backend is built and a GPU is present, else a sim device.
  [[nodiscard]] static Device best(const sim_options& options = {});
  /// The CUDA device `ordinal`. The same ordinal always gives the same device. Throws
  /// usage_error when the build has no cuda backend, cuda_error when the device is absent.
  [[nodiscard]] static Device cuda(int ordinal = 0);
  /// A new, independent simulated device.
  [[nodiscard]] static Device sim(const sim_options& options = {});
  /// Number of usable CUDA devices; 0 without a GPU, a driver, or a cuda backend. Never throws.
  [[nodiscard]] static int cuda_device_count() noexcept;

  [[nodiscard]] backend_kind backend() const;
  /// "NVIDIA H200 (cuda:0)", "sim (deterministic, seed 7)".
  [[nodiscard]] std::string name() const;
  [[nodiscard]] int ordinal() const;

  /// Raw, uncached device memory (cudaMalloc / the sim arena), 256-byte aligned. 0 bytes gives
  /// nullptr. Throws out_of_memory, naming the size and what is free.
  [[nodiscard]] void* allocate(std::size_t bytes);
  /// Frees what allocate() returned. On cuda this synchronizes the whole device, as cudaFree
  /// does. nullptr is ignored; a pointer this device did not allocate throws usage_error.
  void deallocate(void* ptr);
  /// Page-locked host memory, usable by async copies on this device (host memory on sim).
  [[nodiscard]] void* allocate_pinned(std::size_t bytes);
  void deallocate_pinned(void* ptr);
  [[nodiscard]] memory_info memory() const;

  /// Blocks the calling thread until all work queued on all of this device's streams is done.
  void synchronize();
  /// cuda: the legacy default stream (synchronizes with other blocking streams; streamsafe's
  /// own streams are non-blocking). sim: an implicit stream that behaves like any other.
  [[nodiscard]] StreamRef default_stream() const;
  /// A stream made by other code (a cudaStream_t from PyTorch, cuBLAS, a library), usable like
  /// one of ours. cuda only: sim has no native streams (usage_error).
  /// Ownership: the returned Stream owns the wrapper, never `native`: destroying it destroys
  /// nothing, and `native` must outlive the wrapper and every layer holding it (a caching
  /// allocator keeps it while it caches memory for it, see stream.hpp). Ordering: exactly that of
  /// `native`; wait/record/synchronize act on it, so work the owner enqueues on it is ordered
  /// with ours. Each call gives a new identity (a new stream_id), so adopt a handle once and
  /// reuse the Stream: two wrappers of one handle look unrelated to the allocator.
  /// Special handles: nullptr and cudaStreamLegacy are the legacy default stream (prefer
  /// default_stream() for them). cudaStreamPerThread means the calling thread's per-thread
  /// stream, so the wrapper belongs to the adopting thread: called from another thread, records
  /// and waits go to the legacy default stream (which is ordered after every blocking stream,
  /// the per-thread ones included), synchronize() synchronizes the device and query() answers
  /// "not done". Thread-safe.
  [[nodiscard]] Stream adopt_stream(native_stream native, stream_options options = {}) const;

  [[nodiscard]] bool operator==(const Device& other) const noexcept { return impl_ == other.impl_; }

  /// For the library's own layers.
  [[nodiscard]] detail::DeviceImpl& impl() const { return *impl_; }
  explicit Device(std::shared_ptr<detail::DeviceImpl> impl);

 private:
  std::shared_ptr<detail::DeviceImpl> impl_;
};

}  // namespace streamsafe
