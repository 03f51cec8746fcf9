// The sim backend: host memory as device memory, streams as queues run by a SimScheduler.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <unordered_set>

#include "alloc/sim_faults.hpp"
#include "common/expects.hpp"
#include "runtime/backends.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/event_impl.hpp"
#include "runtime/sim/sim_arena.hpp"
#include "runtime/sim/sim_scheduler.hpp"
#include "runtime/stream_impl.hpp"

namespace streamsafe::detail {

namespace {

class SimDevice;

class SimStream final : public StreamImpl {
 public:
  SimStream(std::shared_ptr<DeviceImpl> device, SimScheduler& scheduler, const stream_options& options)
      : StreamImpl(std::move(device), options), scheduler_(scheduler) {
    queue_ = scheduler_.add_queue(name(), options.pacing);
  }
  ~SimStream() override { scheduler_.retire_queue(queue_); }

  void wait(EventImpl& event) override;
  void synchronize() override { scheduler_.wait(scheduler_.tail(queue_)); }
  bool query() override {
    inject_sim_fault(sim_faults().stream_queries, "stream query", this);
    return scheduler_.query(scheduler_.tail(queue_));
  }

  void launch(const kernel& work) override {
    SS_EXPECTS(static_cast<bool>(work.sim), "launch of kernel '", work.name, "' on sim stream '", name(),
               "': the kernel has no sim implementation");
    scheduler_.enqueue(queue_, SimOp{work.name, timed(timed_op_kind::kernel, work.name, 0, work.sim), std::nullopt, nullptr});
  }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    scheduler_.enqueue(queue_, SimOp{"copy", timed(timed_op_kind::copy, "copy", bytes, [=] { std::memmove(dst, src, bytes); }),
                                     std::nullopt, nullptr});
  }
  void fill(void* dst, std::uint8_t value, std::size_t bytes) override {
    scheduler_.enqueue(queue_, SimOp{"fill", timed(timed_op_kind::fill, "fill", bytes, [=] { std::memset(dst, value, bytes); }),
                                     std::nullopt, nullptr});
  }
  native_stream native() const override { return nullptr; }

  /// Where an event recorded now stands; a timing event gets a marker op that stamps the time.
  SimPosition mark(const std::shared_ptr<SimTimestamp>& stamp) {
    if (!stamp) return scheduler_.tail(queue_);
    return scheduler_.enqueue(queue_, SimOp{"event_record", {}, std::nullopt, stamp});
  }

 private:
  /// `work` as is, or, when the device has an op-timing sink (op_timing.hpp), wrapped to report
  /// when it ran. The wrapper is made at enqueue, so ops enqueued before the sink (or while it
  /// wants none) are not timed.
  std::function<void()> timed(timed_op_kind kind, std::string name, std::size_t bytes, std::function<void()> work) {
    auto sink = device().op_timing_sink();
    if (!sink || !sink->wants_ops()) return work;
    return [sink = std::move(sink), kind, name = std::move(name), bytes, work = std::move(work), stream = id(),
            enqueued = std::chrono::steady_clock::now()] {
      const auto begin = std::chrono::steady_clock::now();
      work();
      sink->on_op_ran({stream, kind, name, bytes, enqueued, begin, std::chrono::steady_clock::now()});
    };
  }

  SimScheduler& scheduler_;
  std::shared_ptr<SimQueue> queue_;
};

class SimEvent final : public EventImpl {
 public:
  SimEvent(std::shared_ptr<DeviceImpl> device, SimScheduler& scheduler, event_timing timing)
      : EventImpl(std::move(device), timing), scheduler_(scheduler) {}

  void record(StreamImpl& stream) override {
    std::shared_ptr<SimTimestamp> stamp;
    if (timing() == event_timing::enabled) stamp = std::make_shared<SimTimestamp>();
    auto position = static_cast<SimStream&>(stream).mark(stamp);
    std::lock_guard lock(mutex_);
    captured_ = std::move(position);
    stamp_ = std::move(stamp);
  }
  void synchronize() override {
    if (auto position = captured()) scheduler_.wait(*position);
  }
  bool query() override {
    auto position = captured();
    return !position || scheduler_.query(*position);
  }
  float elapsed_ms_since(EventImpl& start) override {
    auto& from = static_cast<SimEvent&>(start);
    std::scoped_lock lock(mutex_, from.mutex_);
    return std::chrono::duration<float, std::milli>(stamp_->at - from.stamp_->at).count();
  }
  bool ever_recorded() const override {
    std::lock_guard lock(mutex_);
    return captured_.has_value();
  }
  std::optional<SimPosition> captured() const {
    std::lock_guard lock(mutex_);
    return captured_;
  }

 private:
  SimScheduler& scheduler_;
  mutable std::mutex mutex_;
  std::optional<SimPosition> captured_;
  std::shared_ptr<SimTimestamp> stamp_;
};

void SimStream::wait(EventImpl& event) {
  auto position = static_cast<SimEvent&>(event).captured();
  if (!position) return;  // CUDA: waiting on a never-recorded event does nothing
  scheduler_.enqueue(queue_, SimOp{"wait", {}, std::move(position), nullptr});
}

class SimDevice final : public DeviceImpl {
 public:
  explicit SimDevice(const sim_options& options)
      : options_(options),
        name_(describe(options)),
        arena_(options.memory_capacity, name_),
        scheduler_(make_scheduler(options)) {}

  ~SimDevice() override {
    drop_internal_pool();
    default_stream_.reset();
    scheduler_.reset();  // joins threaded workers after their queues drain
  }

  backend_kind kind() const override { return backend_kind::sim; }
  std::string name() const override { return name_; }
  int ordinal() const override { return 0; }

  std::unique_ptr<StreamImpl> create_stream(const stream_options& options, device_hold hold) override {
    return std::make_unique<SimStream>(handle(hold), *scheduler_, options);
  }
  std::unique_ptr<EventImpl> create_event(event_timing timing, device_hold hold) override {
    return std::make_unique<SimEvent>(handle(hold), *scheduler_, timing);
  }
  StreamImpl& default_stream() override {
    std::call_once(default_stream_once_, [this] {
      default_stream_ = std::make_unique<SimStream>(handle(device_hold::borrowed), *scheduler_,
                                                   stream_options{"default"});
    });
    return *default_stream_;
  }

  void* allocate_device(std::size_t bytes) override { return arena_.allocate(bytes); }
  void free_device(void* ptr) override { arena_.deallocate(ptr); }
  void* allocate_pinned(std::size_t bytes) override;
  void free_pinned(void* ptr) override;
  memory_info memory() override { return {arena_.capacity() - arena_.used(), arena_.capacity()}; }
  void synchronize() override { scheduler_->wait_all(); }
  bool runs_work_on_callers() const override { return options_.mode == sim_mode::deterministic; }

 private:
  static std::string describe(const sim_options& options) {
    return std::string("sim (") + (options.mode == sim_mode::deterministic ? "deterministic" : "threaded") +
           ", seed " + std::to_string(options.seed) + ")";
  }

  sim_options options_;
  std::string name_;
  SimArena arena_;
  std::unique_ptr<SimScheduler> scheduler_;
  std::once_flag default_stream_once_;
  std::unique_ptr<SimStream> default_stream_;
  std::mutex pinned_mutex_;
  std::unordered_set<void*> pinned_;
};

void* SimDevice::allocate_pinned(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  const std::size_t rounded = (bytes + SimArena::alignment - 1) / SimArena::alignment * SimArena::alignment;
  void* ptr = rounded < bytes ? nullptr : std::aligned_alloc(SimArena::alignment, rounded);
  if (ptr == nullptr) {
    throw out_of_memory(name_ + ": cannot allocate " + std::to_string(bytes) + " bytes of pinned host memory");
  }
  std::lock_guard lock(pinned_mutex_);
  pinned_.insert(ptr);
  return ptr;
}

void SimDevice::free_pinned(void* ptr) {
  if (ptr == nullptr) return;
  {
    std::lock_guard lock(pinned_mutex_);
    SS_EXPECTS(pinned_.erase(ptr) == 1, name_, ": deallocate_pinned(", ptr,
               "): not pinned memory of this device (double free, or a foreign pointer)");
  }
  std::free(ptr);
}

}  // namespace

std::shared_ptr<DeviceImpl> make_sim_device(const sim_options& options) {
  return std::make_shared<SimDevice>(options);
}

}  // namespace streamsafe::detail
