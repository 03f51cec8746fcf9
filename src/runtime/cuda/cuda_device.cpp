// The cuda backend: thin RAII over the CUDA runtime. Every call is made with this device current.
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExtCudaRt.h>

#include <atomic>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/expects.hpp"
#include "runtime/backends.hpp"
#include "runtime/cuda/cuda_check.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/event_impl.hpp"
#include "runtime/stream_impl.hpp"

namespace streamsafe::detail {

namespace {

std::string describe_pointer(const void* ptr) {
  std::ostringstream out;
  out << ptr;
  return out.str();
}

/// Makes `ordinal` current for the calling thread; cheap when it already is.
void make_current(int ordinal) {
  thread_local int current = -1;
  if (current == ordinal) return;
  SS_CUDA_TRY(cudaSetDevice(ordinal), "device cuda:" + std::to_string(ordinal));
  current = ordinal;
}

class CudaStream final : public StreamImpl {
 public:
  /// Owns a new non-blocking stream.
  CudaStream(std::shared_ptr<DeviceImpl> device, int ordinal, const stream_options& options)
      : StreamImpl(std::move(device), options), ordinal_(ordinal), owned_(true) {
    make_current(ordinal_);
    // A stream made with an explicit priority costs about 30 ns more per record on the H200
    // (bench/results/runtime_h200.md), so the plain call is used for the default priority.
    if (options.priority == 0) {
      SS_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), context());
    } else {
      SS_CUDA_TRY(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, options.priority), context());
    }
    nvtxNameCudaStreamA(stream_, name().c_str());
  }
  /// Wraps a stream it does not own: the legacy default stream, or one adopted from other code.
  CudaStream(std::shared_ptr<DeviceImpl> device, int ordinal, cudaStream_t foreign, const stream_options& options)
      : StreamImpl(std::move(device), options), ordinal_(ordinal), stream_(foreign), owned_(false),
        per_thread_owner_(foreign == cudaStreamPerThread ? std::this_thread::get_id() : std::thread::id{}) {}
  ~CudaStream() override {
    if (owned_) {
      make_current(ordinal_);
      (void)cudaStreamDestroy(stream_);  // queued work still completes
    }
  }

  void wait(EventImpl& event) override;
  void synchronize() override {
    if (!usable_here()) {
      make_current(ordinal_);
      SS_CUDA_TRY(cudaDeviceSynchronize(), context() + " (per-thread stream of another thread)");
      return;
    }
    SS_CUDA_TRY(cudaStreamSynchronize(stream_), context());
  }
  bool query() override {
    if (!usable_here()) return false;  // not knowable from this thread; "not done" is the safe answer
    const cudaError_t status = cudaStreamQuery(stream_);
    if (status == cudaErrorNotReady) return false;
    SS_CUDA_TRY(status, context());
    return true;
  }
  void launch(const kernel& work) override {
    SS_EXPECTS(static_cast<bool>(work.cuda), "launch of kernel '", work.name, "' on cuda stream '", name(),
               "': the kernel has no cuda implementation");
    make_current(ordinal_);
    work.cuda(handle());
    SS_CUDA_TRY(cudaGetLastError(), "kernel '" + work.name + "' on " + context());
  }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    SS_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, handle()),
                context() + " (dst " + describe_pointer(dst) + ", src " + describe_pointer(src) + ", " +
                    std::to_string(bytes) + " bytes)");
  }
  void fill(void* dst, std::uint8_t value, std::size_t bytes) override {
    SS_CUDA_TRY(cudaMemsetAsync(dst, value, bytes, handle()),
                context() + " (dst " + describe_pointer(dst) + ", " + std::to_string(bytes) + " bytes)");
  }
  native_stream native() const override { return stream_; }
  /// The handle to enqueue on from the calling thread: a per-thread stream adopted by another
  /// thread is reached through the legacy default stream, which is ordered after it.
  cudaStream_t handle() const { return usable_here() ? stream_ : cudaStreamLegacy; }

  std::string context() const { return "stream '" + name() + "' on cuda:" + std::to_string(ordinal_); }

 private:
  [[nodiscard]] bool usable_here() const {
    return per_thread_owner_ == std::thread::id{} || per_thread_owner_ == std::this_thread::get_id();
  }

  int ordinal_;
  cudaStream_t stream_ = nullptr;
  bool owned_;
  std::thread::id per_thread_owner_;  // set only for cudaStreamPerThread
};

class CudaEvent final : public EventImpl {
 public:
  CudaEvent(std::shared_ptr<DeviceImpl> device, int ordinal, event_timing timing)
      : EventImpl(std::move(device), timing), ordinal_(ordinal) {
    make_current(ordinal_);
    const unsigned flags = timing == event_timing::enabled ? cudaEventDefault : cudaEventDisableTiming;
    SS_CUDA_TRY(cudaEventCreateWithFlags(&event_, flags), context());
  }
  ~CudaEvent() override {
    make_current(ordinal_);
    (void)cudaEventDestroy(event_);
  }

  void record(StreamImpl& stream) override {
    auto& target = static_cast<CudaStream&>(stream);
    SS_CUDA_TRY(cudaEventRecord(event_, target.handle()), context() + " on " + target.context());
    recorded_.store(true, std::memory_order_relaxed);
  }
  void synchronize() override { SS_CUDA_TRY(cudaEventSynchronize(event_), context()); }
  bool query() override {
    const cudaError_t status = cudaEventQuery(event_);
    if (status == cudaErrorNotReady) return false;
    SS_CUDA_TRY(status, context());
    return true;
  }
  float elapsed_ms_since(EventImpl& start) override {
    float ms = 0;
    SS_CUDA_TRY(cudaEventElapsedTime(&ms, static_cast<CudaEvent&>(start).event_, event_), context());
    return ms;
  }
  bool ever_recorded() const override { return recorded_.load(std::memory_order_relaxed); }
  cudaEvent_t native() const { return event_; }

 private:
  std::string context() const {
    return "event " + std::to_string(static_cast<std::uint64_t>(id())) + " on cuda:" + std::to_string(ordinal_);
  }
  int ordinal_;
  cudaEvent_t event_ = nullptr;
  std::atomic<bool> recorded_{false};
};

void CudaStream::wait(EventImpl& event) {
  // A never-recorded event makes cudaStreamWaitEvent a no-op, which is the documented contract.
  SS_CUDA_TRY(cudaStreamWaitEvent(handle(), static_cast<CudaEvent&>(event).native(), 0), context());
}

class CudaDevice final : public DeviceImpl {
 public:
  explicit CudaDevice(int ordinal) : ordinal_(ordinal) {
    make_current(ordinal_);
    cudaDeviceProp properties{};
    SS_CUDA_TRY(cudaGetDeviceProperties(&properties, ordinal_), "device cuda:" + std::to_string(ordinal_));
    name_ = std::string(properties.name) + " (cuda:" + std::to_string(ordinal_) + ")";
  }
  ~CudaDevice() override { drop_internal_pool(); }

  backend_kind kind() const override { return backend_kind::cuda; }
  std::string name() const override { return name_; }
  int ordinal() const override { return ordinal_; }

  std::unique_ptr<StreamImpl> create_stream(const stream_options& options, device_hold hold) override {
    return std::make_unique<CudaStream>(handle(hold), ordinal_, options);
  }
  std::unique_ptr<EventImpl> create_event(event_timing timing, device_hold hold) override {
    return std::make_unique<CudaEvent>(handle(hold), ordinal_, timing);
  }
  StreamImpl& default_stream() override {
    std::call_once(default_once_, [this] {
      default_stream_ = std::make_unique<CudaStream>(handle(device_hold::borrowed), ordinal_, cudaStreamLegacy,
                                                     stream_options{"legacy-default"});
    });
    return *default_stream_;
  }
  std::unique_ptr<StreamImpl> adopt_stream(native_stream native, const stream_options& options) override {
    stream_options named = options;
    if (named.name.empty()) named.name = "adopted " + describe_pointer(native);
    return std::make_unique<CudaStream>(handle(device_hold::owning), ordinal_, native, named);
  }

  void* allocate_device(std::size_t bytes) override {
    if (bytes == 0) return nullptr;
    make_current(ordinal_);
    void* ptr = nullptr;
    SS_CUDA_TRY(cudaMalloc(&ptr, bytes), "cudaMalloc of " + std::to_string(bytes) + " bytes on " + name_);
    return ptr;
  }
  void free_device(void* ptr) override {
    if (ptr == nullptr) return;
    make_current(ordinal_);
    SS_CUDA_TRY(cudaFree(ptr), "pointer " + describe_pointer(ptr) + " on " + name_);
  }
  void* allocate_pinned(std::size_t bytes) override {
    if (bytes == 0) return nullptr;
    make_current(ordinal_);
    void* ptr = nullptr;
    SS_CUDA_TRY(cudaMallocHost(&ptr, bytes), "cudaMallocHost of " + std::to_string(bytes) + " bytes");
    return ptr;
  }
  void free_pinned(void* ptr) override {
    if (ptr == nullptr) return;
    SS_CUDA_TRY(cudaFreeHost(ptr), "pinned pointer " + describe_pointer(ptr));
  }
  memory_info memory() override {
    make_current(ordinal_);
    memory_info info;
    SS_CUDA_TRY(cudaMemGetInfo(&info.free_bytes, &info.total_bytes), name_);
    return info;
  }
  void synchronize() override {
    make_current(ordinal_);
    SS_CUDA_TRY(cudaDeviceSynchronize(), name_);
  }

 private:
  int ordinal_;
  std::string name_;
  std::once_flag default_once_;
  std::unique_ptr<CudaStream> default_stream_;
};

}  // namespace

int cuda_device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

std::shared_ptr<DeviceImpl> make_cuda_device(int ordinal) {
  const int count = cuda_device_count();
  SS_EXPECTS(ordinal >= 0 && ordinal < count, "Device::cuda(", ordinal, "): ", count,
             " CUDA device(s) usable here (no GPU or no driver gives 0; Device::best() falls back to sim)");
  // One DeviceImpl per ordinal, so Device::cuda(n) == Device::cuda(n).
  static std::mutex registry_mutex;
  static std::map<int, std::weak_ptr<DeviceImpl>> registry;
  std::lock_guard lock(registry_mutex);
  if (auto existing = registry[ordinal].lock()) return existing;
  auto device = std::make_shared<CudaDevice>(ordinal);
  registry[ordinal] = device;
  return device;
}

}  // namespace streamsafe::detail
