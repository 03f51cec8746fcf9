// The cuda source: CUPTI's activity API. Concurrent kernels (never the KERNEL kind, which
// serializes them), memcpy, memset, synchronization, CUDA events, runtime calls and NVTX
// markers, into buffers allocated ahead. CUPTI's clock is replaced by the host's steady clock
// (cuptiActivityRegisterTimestampCallback) so GPU ops and host calls share one timeline.
// Diagnostic settings (diagnostic_settings.hpp) may narrow the device kinds or keep CUPTI's clock;
// collector_options::always_on = kernels leaves MEMCPY and MEMSET to traced windows.
// CUPTI allows one client per process: when another is attached (Nsight Systems, the PyTorch
// profiler, a second collector) this source is refused with a message, never an exception.
#include <cupti.h>
#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <deque>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "monitor/collect/collection_source.hpp"

namespace streamsafe::monitor::detail {

namespace {

using clock = std::chrono::steady_clock;

std::string describe(const char* call, CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) text = "unknown CUPTI error";
  return std::string(call) + " failed: " + text + " (" + std::to_string(static_cast<int>(result)) + ")";
}

bool another_client(CUptiResult result) { return result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED; }

constexpr std::size_t buffer_alignment = 8;

/// Activity buffers, allocated ahead and reused. CUPTI asks for and returns them on its own
/// threads, and may return one after its source is gone, so the pool outlives every source.
class buffer_pool {
 public:
  void reserve(std::size_t count, std::size_t bytes) {
    std::lock_guard lock(mutex_);
    bytes_ = bytes;
    while (free_.size() < count) free_.push_back(allocate());
  }
  std::uint8_t* take(std::size_t& bytes) {
    std::lock_guard lock(mutex_);
    bytes = bytes_;
    if (free_.empty()) return allocate();  // the parser fell behind: grow rather than drop records
    auto* buffer = free_.back();
    free_.pop_back();
    return buffer;
  }
  void give_back(std::uint8_t* buffer) {
    std::lock_guard lock(mutex_);
    free_.push_back(buffer);
  }

 private:
  std::uint8_t* allocate() const {
    return static_cast<std::uint8_t*>(std::aligned_alloc(buffer_alignment, (bytes_ + buffer_alignment - 1) /
                                                                               buffer_alignment * buffer_alignment));
  }
  std::mutex mutex_;
  std::size_t bytes_ = std::size_t{4} << 20;
  std::vector<std::uint8_t*> free_;  // never freed: they live as long as CUPTI may use them
};

buffer_pool& pool() {
  static buffer_pool* instance = new buffer_pool;  // leaked on purpose: CUPTI may call at exit
  return *instance;
}

class cupti_source;
std::atomic<cupti_source*> active_source{nullptr};

/// Releases what was enabled, in reverse, when the source goes or its start fails half-way.
class enabled_kinds {
 public:
  enabled_kinds() = default;
  enabled_kinds(const enabled_kinds&) = delete;
  enabled_kinds& operator=(const enabled_kinds&) = delete;
  ~enabled_kinds() {
    for (auto kind = kinds_.rbegin(); kind != kinds_.rend(); ++kind) (void)cuptiActivityDisable(*kind);
  }
  CUptiResult enable(CUpti_ActivityKind kind) {
    if (std::find(kinds_.begin(), kinds_.end(), kind) != kinds_.end()) return CUPTI_SUCCESS;
    const auto result = cuptiActivityEnable(kind);
    if (result == CUPTI_SUCCESS) kinds_.push_back(kind);
    return result;
  }
  void disable(CUpti_ActivityKind kind) {
    if (std::erase(kinds_, kind) > 0) (void)cuptiActivityDisable(kind);
  }

 private:
  std::vector<CUpti_ActivityKind> kinds_;
};

/// The subscription that claims CUPTI for this process: cuptiSubscribe is where another client
/// shows up as CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED.
class subscription {
 public:
  subscription() = default;
  subscription(const subscription&) = delete;
  subscription& operator=(const subscription&) = delete;
  ~subscription() {
    if (handle_ != nullptr) (void)cuptiUnsubscribe(handle_);
  }
  CUptiResult subscribe() {
    return cuptiSubscribe(&handle_, [](void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}, nullptr);
  }

 private:
  CUpti_SubscriberHandle handle_ = nullptr;
};

memory_kind to_memory_kind(std::uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return memory_kind::pageable;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return memory_kind::pinned;
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE: return memory_kind::device;
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return memory_kind::array;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED: return memory_kind::managed;
    default: return memory_kind::unknown;  // CUPTI's enum, not ours: new kinds read as unknown
  }
}

/// Kineto's names ("Memcpy HtoD (Pinned -> Device)"), which the diagnosis rules read.
std::string memcpy_name(std::uint8_t copy_kind, memory_kind src, memory_kind dst) {
  const char* direction = "";
  switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: direction = "HtoD"; break;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: direction = "DtoH"; break;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: direction = "DtoD"; break;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: direction = "HtoH"; break;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: direction = "PtoP"; break;
    default: direction = "other"; break;  // CUPTI's enum: arrays and future kinds
  }
  const auto side = [](memory_kind kind) -> std::string {
    auto text = std::string(to_string(kind));
    if (!text.empty()) text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
    return text;
  };
  return std::string("Memcpy ") + direction + " (" + side(src) + " -> " + side(dst) + ")";
}

/// Recorded always: what runs on the device (no per-API-call hook); the diagnostic setting
/// STREAMSAFE_CUPTI_KINDS may leave some out.
std::vector<CUpti_ActivityKind> device_kinds(const device_kind_set& selected) {
  std::vector<CUpti_ActivityKind> kinds;
  if (selected.kernel) kinds.push_back(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (selected.memcpy) kinds.push_back(CUPTI_ACTIVITY_KIND_MEMCPY);
  if (selected.memset) kinds.push_back(CUPTI_ACTIVITY_KIND_MEMSET);
  return kinds;
}
/// Recorded inside traced windows only: host calls, syncs, events and NVTX ranges.
constexpr CUpti_ActivityKind traced_window_kinds[] = {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_CUDA_EVENT,
                                                      CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_MARKER};

class cupti_source final : public collection_source {
 public:
  cupti_source(Device device, std::weak_ptr<record_sink> sink) : device_(std::move(device)), sink_(std::move(sink)) {}
  ~cupti_source() override {
    cupti_source* self = this;
    if (active_source.load() != this) return;  // never claimed CUPTI: nothing of ours to flush
    (void)cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    active_source.compare_exchange_strong(self, nullptr);
  }
  cupti_source(const cupti_source&) = delete;
  cupti_source& operator=(const cupti_source&) = delete;

  /// Claims CUPTI and enables the kinds; the refusal text when it cannot.
  std::string start(const collector_options& options, const diagnostic_settings& settings) {
    if (auto result = subscription_.subscribe(); result != CUPTI_SUCCESS) return refusal("cuptiSubscribe", result);
    cupti_source* expected = nullptr;
    if (!active_source.compare_exchange_strong(expected, this)) return "another streamsafe collector holds CUPTI";
    pool().reserve(options.cupti_buffers, options.cupti_buffer_bytes);
    set_clock(settings.clock);
    if (auto result = cuptiActivityRegisterCallbacks(&buffer_requested, &buffer_completed); result != CUPTI_SUCCESS) {
      return refusal("cuptiActivityRegisterCallbacks", result);
    }
    traced_device_kinds_ = device_kinds(settings.kinds);
    auto always_on = settings.kinds;
    if (options.always_on == always_on_ops::kernels) always_on.memcpy = always_on.memset = false;
    device_kinds_ = device_kinds(always_on);
    for (auto kind : device_kinds_) {
      if (auto result = enabled_.enable(kind); result != CUPTI_SUCCESS) return refusal("cuptiActivityEnable", result);
    }
    return {};
  }

  void set_detail(trace_detail detail) override {
    switch (detail) {
      case trace_detail::full:
        for (auto kind : traced_window_kinds) (void)enabled_.enable(kind);
        for (auto kind : traced_device_kinds_) (void)enabled_.enable(kind);
        return;
      case trace_detail::device_ops:  // the collector flushed the window's records already
        for (auto kind : traced_window_kinds) enabled_.disable(kind);
        for (auto kind : traced_device_kinds_) {
          if (std::find(device_kinds_.begin(), device_kinds_.end(), kind) == device_kinds_.end()) enabled_.disable(kind);
        }
        return;
    }
  }

  void set_collecting(bool on) override {
    for (auto kind : device_kinds_) {
      if (on) (void)enabled_.enable(kind);
      else enabled_.disable(kind);
    }
  }

  stream_key key_of(StreamRef stream) override {
    std::uint32_t id = 0;
    const auto result = cuptiGetStreamIdEx(nullptr, reinterpret_cast<CUstream>(stream.native()), 0, &id);
    // An unknown stream keeps streamsafe's own id, above CUPTI's range, so it cannot collide.
    if (result != CUPTI_SUCCESS) return {device_.ordinal(), (std::int64_t{1} << 40) + static_cast<std::int64_t>(stream.id())};
    return {device_.ordinal(), static_cast<std::int64_t>(id)};
  }
  void flush() override { (void)cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); }
  host_call_origin host_calls() const override { return host_call_origin::source; }
  std::string description() const override { return "CUPTI activity records on " + device_.name(); }

 private:
  /// host: CUPTI stamps records with host_clock_ns, when the driver lets it; otherwise (or with
  /// cupti) CUPTI's clock is aligned with the host's once, now.
  void set_clock(cupti_clock clock) {
    if (clock == cupti_clock::host && cuptiActivityRegisterTimestampCallback(&host_clock_ns) == CUPTI_SUCCESS) return;
    std::uint64_t gpu_now = 0;
    (void)cuptiGetTimestamp(&gpu_now);
    offset_ns_ = static_cast<std::int64_t>(host_clock_ns()) - static_cast<std::int64_t>(gpu_now);
  }
  static std::uint64_t CUPTIAPI host_clock_ns() {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch()).count());
  }
  static void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
    *buffer = pool().take(*size);
    if (*buffer == nullptr) *size = 0;  // CUPTI drops records rather than crash
    *max_records = 0;
  }
  static void CUPTIAPI buffer_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t, std::size_t valid) {
    if (auto* source = active_source.load()) source->parse(buffer, valid);
    pool().give_back(buffer);
  }

  std::string refusal(const char* call, CUptiResult result) const {
    if (another_client(result)) {
      return backoff_message(device_.name(), "another CUPTI client (Nsight Systems, the PyTorch profiler, ...) is attached");
    }
    return backoff_message(device_.name(), describe(call, result));
  }

  [[nodiscard]] double to_us(std::uint64_t ns) const {
    return (static_cast<double>(static_cast<std::int64_t>(ns) + offset_ns_)) / 1000.0;
  }
  void parse(std::uint8_t* buffer, std::size_t valid);
  void parse_record(const CUpti_Activity& record, std::vector<op_record>& ops, std::deque<std::string>& names,
                    record_sink& sink);
  void parse_marker(const CUpti_ActivityMarker2& marker, record_sink& sink);

  Device device_;
  std::weak_ptr<record_sink> sink_;
  subscription subscription_;
  enabled_kinds enabled_;
  std::vector<CUpti_ActivityKind> device_kinds_;  // enabled outside traced windows
  std::vector<CUpti_ActivityKind> traced_device_kinds_;  // enabled inside them
  std::int64_t offset_ns_ = 0;
  std::map<std::uint32_t, std::pair<std::string, double>> open_ranges_;  // NVTX range id -> name, start
  std::mutex parse_mutex_;  // CUPTI may complete buffers on several threads
  /// Kernel names as a person reads them, demangled once per kernel (guarded by parse_mutex_).
  /// Keyed by CUPTI's name pointer, with the mangled text kept to check the pointer still
  /// names the same kernel.
  std::unordered_map<const char*, std::pair<std::string, std::string>> kernel_names_;
  const std::string& readable_kernel_name(const char* mangled);
};

const std::string& cupti_source::readable_kernel_name(const char* mangled) {
  auto& [seen, readable] = kernel_names_[mangled];
  if (seen == mangled && !readable.empty()) return readable;
  seen = mangled;
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  readable = status == 0 && demangled != nullptr ? demangled : mangled;
  std::free(demangled);
  return readable;
}

void cupti_source::parse(std::uint8_t* buffer, std::size_t valid) {
  const auto sink = sink_.lock();
  if (!sink) return;
  std::lock_guard lock(parse_mutex_);
  std::vector<op_record> ops;
  std::deque<std::string> names;  // op_record names point here until on_ops returns (stable)
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) parse_record(*record, ops, names, *sink);
  sink->on_ops(ops);
}

void cupti_source::parse_record(const CUpti_Activity& record, std::vector<op_record>& ops,
                                std::deque<std::string>& names, record_sink& sink) {
  const auto gpu_op_of = [&](std::uint32_t device, std::uint32_t stream, op_kind kind, std::string name,
                             std::uint64_t start, std::uint64_t end, std::uint32_t correlation) {
    names.push_back(std::move(name));
    op_record op;
    op.stream = {static_cast<std::int32_t>(device), static_cast<std::int64_t>(stream)};
    op.kind = kind;
    op.name = names.back();
    op.ts_us = to_us(start);
    op.dur_us = to_us(end) - op.ts_us;
    op.correlation = correlation;
    ops.push_back(op);
    return &ops.back();
  };
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto& k = reinterpret_cast<const CUpti_ActivityKernel10&>(record);
      gpu_op_of(k.deviceId, k.streamId, op_kind::kernel, k.name != nullptr ? readable_kernel_name(k.name) : "kernel",
                k.start, k.end, k.correlationId);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& m = reinterpret_cast<const CUpti_ActivityMemcpy6&>(record);
      const auto src = to_memory_kind(m.srcKind);
      const auto dst = to_memory_kind(m.dstKind);
      auto* op = gpu_op_of(m.deviceId, m.streamId, op_kind::memcpy, memcpy_name(m.copyKind, src, dst), m.start, m.end,
                           m.correlationId);
      op->bytes = m.bytes;
      op->src = src;
      op->dst = dst;
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& m = reinterpret_cast<const CUpti_ActivityMemset4&>(record);
      gpu_op_of(m.deviceId, m.streamId, op_kind::memset, "Memset (Device)", m.start, m.end, m.correlationId)->bytes =
          m.bytes;
      return;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME: {
      const auto& api = reinterpret_cast<const CUpti_ActivityAPI&>(record);
      const char* name = nullptr;
      if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, api.cbid, &name) != CUPTI_SUCCESS || name == nullptr) return;
      // CUPTI names the entry point ("cudaLaunchKernel_v7000"); the classifier wants the API name.
      std::string_view api_name(name);
      api_name = api_name.substr(0, api_name.find("_v"));
      sink.on_call(api.threadId, classify_call(api_name), api_name, to_us(api.start), to_us(api.end) - to_us(api.start),
                   api.correlationId);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MARKER:
      parse_marker(reinterpret_cast<const CUpti_ActivityMarker2&>(record), sink);
      return;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
    case CUPTI_ACTIVITY_KIND_CUDA_EVENT:
      // Stream waits and event records come from streamsafe's own observer, with the event that
      // joins them; CUPTI's copies of them would be counted twice (see docs/monitor.md).
      return;
    default: return;  // CUPTI's enum: kinds this source did not enable
  }
}

void cupti_source::parse_marker(const CUpti_ActivityMarker2& marker, record_sink& sink) {
  if ((marker.flags & CUPTI_ACTIVITY_FLAG_MARKER_START) != 0) {
    open_ranges_[marker.id] = {marker.name != nullptr ? marker.name : "", to_us(marker.timestamp)};
    return;
  }
  annotation range;
  range.side = annotation_side::host;
  range.thread = marker.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? marker.objectId.pt.threadId : 0;
  if ((marker.flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) != 0) {
    range.ts_us = to_us(marker.timestamp);
    sink.on_annotation(range, marker.name != nullptr ? marker.name : "");
    return;
  }
  const auto open = open_ranges_.find(marker.id);
  if (open == open_ranges_.end()) return;
  range.ts_us = open->second.second;
  range.dur_us = to_us(marker.timestamp) - range.ts_us;
  sink.on_annotation(range, open->second.first);
  open_ranges_.erase(open);
}

}  // namespace

opened_source open_cupti_source(const Device& device, std::weak_ptr<record_sink> sink, const collector_options& options,
                                const diagnostic_settings& settings) {
  auto source = std::make_unique<cupti_source>(device, std::move(sink));
  if (auto refusal = source->start(options, settings); !refusal.empty()) {
    // The half-started source releases what it enabled; it must not keep the CUPTI claim.
    return {nullptr, refusal.find("streamsafe monitor:") == 0 ? refusal : backoff_message(device.name(), refusal)};
  }
  return {std::move(source), {}};
}

}  // namespace streamsafe::monitor::detail
