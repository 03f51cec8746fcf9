// The collector: a source's records go to the always-on reducer and, while tracing, to a trace
// recorder; streamsafe's observer callbacks add stream names, dependency markers and (on sim)
// the host's calls. With sampling, the source's collection is switched at window boundaries: by
// step() (step-based), or on whichever of the collector's callbacks first sees the clock past a
// boundary (time-based, sampling.hpp): no thread of its own.
#include "streamsafe/monitor/collector.hpp"

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "monitor/collect/collection_source.hpp"
#include "monitor/collect/diagnostic_settings.hpp"
#include "monitor/collect/online_usage.hpp"
#include "monitor/collect/sampling.hpp"
#include "monitor/collect/trace_recorder.hpp"
#include "streamsafe/runtime_observer.hpp"

namespace streamsafe::monitor {

namespace detail {

std::string backoff_message(std::string_view device_name, std::string_view reason) {
  return "streamsafe monitor: collection on " + std::string(device_name) + " is off: " + std::string(reason) +
         ". The program runs unchanged; detach the other tool (Nsight Systems, the PyTorch profiler, another "
         "streamsafe collector) to collect.";
}

namespace {

std::atomic<sampling_clock> sampling_clock_override{nullptr};

/// "10 ms", "250 us", "1 s": the largest unit that divides `d` exactly.
std::string duration_text(std::chrono::nanoseconds d) {
  const auto ns = d.count();
  if (ns != 0 && ns % 1'000'000'000 == 0) return std::to_string(ns / 1'000'000'000) + " s";
  if (ns != 0 && ns % 1'000'000 == 0) return std::to_string(ns / 1'000'000) + " ms";
  if (ns != 0 && ns % 1'000 == 0) return std::to_string(ns / 1'000) + " us";
  return std::to_string(ns) + " ns";
}

bool time_sampling(const collector_options& options) {
  return time_sampler(options.sample_period, options.sample_window, 0).sampling();
}

}  // namespace

std::int64_t steady_clock_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
void set_sampling_clock_for_testing(sampling_clock clock) { sampling_clock_override.store(clock); }
sampling_clock current_sampling_clock() {
  const auto clock = sampling_clock_override.load();
  return clock != nullptr ? clock : &steady_clock_ns;
}

/// What the status message adds to the source's description: what always-on collects, sampling
/// and diagnostic settings.
std::string collection_notes(const collector_options& options, const diagnostic_settings& settings) {
  std::string notes;
  if (options.always_on == always_on_ops::kernels) notes += ", always-on: kernels only";
  const bool by_steps = step_sampler(options.sample_every_steps, options.sample_window_steps).sampling();
  if (time_sampling(options)) {
    notes += ", sampled: " + duration_text(options.sample_window) + " every " + duration_text(options.sample_period);
    if (by_steps) notes += " (sample_every_steps ignored)";
  } else if (by_steps) {
    notes += ", sampled: " + std::to_string(options.sample_window_steps) + " step(s) in " +
             std::to_string(options.sample_every_steps);
  }
  if (!settings.is_default()) notes += " [diagnostic: " + settings.describe() + "]";
  return notes;
}

class collector_state final : public record_sink, public RuntimeObserver {
 public:
  collector_state(const Device& device, const collector_options& options, std::string notes)
      : device_name_(device.name()),
        device_ordinal_(device.ordinal()),
        notes_(std::move(notes)),
        usage_(options.reduce_batch_ops),
        kernels_only_(options.always_on == always_on_ops::kernels),
        sampler_(options.sample_every_steps, options.sample_window_steps),
        clock_(current_sampling_clock()),
        timer_(options.sample_period, options.sample_window, clock_()) {}

  void attach_source(opened_source opened) {
    std::lock_guard lock(mutex_);
    source_ = std::move(opened.source);
    message_ = source_ ? "collecting: " + source_->description() + notes_ : std::move(opened.refusal);
  }
  /// Stops delivering; the source (and CUPTI, or the sim hook) is released here.
  void close() {
    flush();
    std::unique_ptr<collection_source> source;
    {
      std::lock_guard lock(mutex_);
      source = std::move(source_);
      closed_ = true;
    }
  }
  [[nodiscard]] bool active() const {
    std::lock_guard lock(mutex_);
    return source_ != nullptr;
  }
  [[nodiscard]] std::string message() const {
    std::lock_guard lock(mutex_);
    return message_;
  }
  void flush() {
    collection_source* source = nullptr;
    {
      std::lock_guard lock(mutex_);
      source = source_.get();
    }
    // Unlocked: CUPTI delivers on this thread, into on_ops. Only close() resets source_, and it
    // flushes first on the collector's own thread.
    if (source != nullptr) source->flush();
  }

  void start_tracing() {
    std::lock_guard lock(mutex_);
    if (!source_ || recording_) return;
    advance_timer_locked();  // the time so far was not traced
    source_->set_detail(trace_detail::full);
    recording_.emplace("live: " + device_name_);
    update_collection_locked();
  }
  [[nodiscard]] trace stop_tracing() {
    flush();
    std::lock_guard lock(mutex_);
    if (!recording_) return {};
    advance_timer_locked();  // the time since start_tracing() was traced
    auto finished = std::move(*recording_).finish(names_, device_name_, device_ordinal_);
    recording_.reset();
    source_->set_detail(trace_detail::device_ops);
    update_collection_locked();
    return finished;
  }
  void step() {
    std::lock_guard lock(mutex_);
    if (!source_) return;
    sampler_.end_step(collected_this_step_);
    advance_timer_locked();
    update_collection_locked();
    collected_this_step_ = collecting_;
  }
  [[nodiscard]] usage_report usage() {
    flush();
    std::lock_guard lock(mutex_);
    usage_.reduce();
    auto report = usage_.report(names_);
    if (timer_.sampling()) {
      if (source_) {
        advance_timer_locked();
        update_collection_locked();
      }
      report.sampled_fraction = timer_.collected_fraction();
    } else if (sampler_.sampling()) {
      report.sampled_fraction = sampler_.collected_fraction();
    }
    return report;
  }
  [[nodiscard]] std::size_t ops_seen() const {
    std::lock_guard lock(mutex_);
    return usage_.ops_seen();
  }

  // record_sink
  void on_ops(std::span<const op_record> ops) noexcept override {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    for (const auto& op : ops) {
      if (!kernels_only_ || op.kind == op_kind::kernel) usage_.add(op);
      if (recording_) recording_->add_op(op);
    }
  }
  void on_call(std::int64_t thread, call_kind kind, std::string_view name, double ts_us, double dur_us,
               std::int64_t correlation) noexcept override {
    std::lock_guard lock(mutex_);
    if (recording_) recording_->add_call(thread, kind, name, ts_us, dur_us, correlation);
  }
  void on_annotation(const annotation& range, std::string_view name) noexcept override {
    std::lock_guard lock(mutex_);
    if (recording_) recording_->add_annotation(range, name);
  }

  // RuntimeObserver
  void on_stream_created(StreamRef stream) override {
    std::lock_guard lock(mutex_);
    (void)key_locked(stream);
  }
  // The clock is read only while tracing: always-on needs no host timestamps, and a clock read
  // per call is a measurable share of what collection costs a launch-heavy step.
  void on_event_record(EventRef event, StreamRef stream) override {
    std::lock_guard lock(mutex_);
    tick_locked();
    if (!recording_) return;
    const double now = host_now_us();
    recording_->note_record(event.id(), key_locked(stream), now);
    host_call_locked(call_kind::event_record, "cudaEventRecord", now);
  }
  void on_stream_wait(StreamRef waiter, EventRef event) override {
    std::lock_guard lock(mutex_);
    tick_locked();
    if (!recording_) return;
    const double now = host_now_us();
    recording_->note_wait(key_locked(waiter), event.id(), now);
    host_call_locked(call_kind::stream_wait_event, "cudaStreamWaitEvent", now);
  }
  void on_stream_synchronize(StreamRef /*stream*/) override { host_call(call_kind::stream_sync, "cudaStreamSynchronize"); }
  void on_event_synchronize(EventRef /*event*/) override { host_call(call_kind::event_sync, "cudaEventSynchronize"); }
  void on_device_synchronize() override { host_call(call_kind::device_sync, "cudaDeviceSynchronize"); }
  void on_launch(StreamRef stream, const kernel& /*work*/) override { enqueued(stream, call_kind::launch, "cudaLaunchKernel"); }
  void on_copy(StreamRef stream, void* /*dst*/, const void* /*src*/, std::size_t /*bytes*/) override {
    enqueued(stream, call_kind::memcpy, "cudaMemcpyAsync");
  }
  void on_fill(StreamRef stream, void* /*dst*/, std::size_t /*bytes*/) override {
    enqueued(stream, call_kind::memset, "cudaMemsetAsync");
  }

 private:
  /// The source's key for `stream`, remembered with its name the first time it is seen.
  stream_key key_locked(StreamRef stream) {
    const auto known = keys_.find(stream.id());
    if (known != keys_.end()) return known->second;
    const auto key = source_ ? source_->key_of(stream) : stream_key{device_ordinal_, static_cast<std::int64_t>(stream.id())};
    keys_.emplace(stream.id(), key);
    names_[key] = stream.name();
    return key;
  }
  /// Time-based sampling, on every callback: when the clock has passed the next window boundary,
  /// switches collection. The hot path: with time sampling one clock read and one compare
  /// (the lock is already held); without it, one branch.
  void tick_locked() {
    if (!timer_.sampling() || !source_) return;
    const auto now = clock_();
    if (!timer_.due(now)) return;
    timer_.advance(now, recording_.has_value());
    update_collection_locked();
  }
  /// Brings time-based sampling's accounting up to now (before tracing starts or stops).
  void advance_timer_locked() {
    if (timer_.sampling()) timer_.advance(clock_(), recording_.has_value());
  }
  /// Whether the sampling in use (time-based first, else step-based) is inside a window.
  [[nodiscard]] bool in_sampled_window_locked() const {
    return timer_.sampling() ? timer_.in_window() : sampler_.in_window();
  }
  /// Collects while tracing or inside a sampled window; a window that opens starts a new span
  /// of the always-on figures (ops enqueued from now on start after this instant).
  void update_collection_locked() {
    const bool wanted = recording_.has_value() || in_sampled_window_locked();
    if (wanted == collecting_ || !source_) return;
    if (wanted) usage_.open_window(host_now_us());
    source_->set_collecting(wanted);
    collecting_ = wanted;
    collected_this_step_ = collected_this_step_ || wanted;
  }
  void enqueued(StreamRef stream, call_kind kind, std::string_view api) {
    std::lock_guard lock(mutex_);
    tick_locked();
    (void)key_locked(stream);
    host_call_locked(kind, api);
  }
  void host_call(call_kind kind, std::string_view api) {
    std::lock_guard lock(mutex_);
    tick_locked();
    host_call_locked(kind, api);
  }
  /// On sim the observer is the only witness of the host's calls; on cuda CUPTI reports them.
  void host_call_locked(call_kind kind, std::string_view api, double now) {
    if (!recording_ || !source_ || source_->host_calls() != host_call_origin::observer) return;
    const auto thread = static_cast<std::int64_t>(std::hash<std::thread::id>{}(std::this_thread::get_id()));
    recording_->add_call(thread, kind, api, now, 0, -1);
  }
  void host_call_locked(call_kind kind, std::string_view api) {
    if (recording_) host_call_locked(kind, api, host_now_us());
  }

  const std::string device_name_;
  const std::int32_t device_ordinal_;
  const std::string notes_;
  mutable std::mutex mutex_;
  std::unique_ptr<collection_source> source_;
  std::string message_;
  bool closed_ = false;
  online_usage usage_;
  const bool kernels_only_;  // always_on_ops::kernels: other ops go to traces only
  step_sampler sampler_;
  const sampling_clock clock_;
  time_sampler timer_;
  bool collecting_ = true;  // what the source was last told (it starts collecting)
  bool collected_this_step_ = true;  // collecting at some time during the step in progress
  std::optional<trace_recorder> recording_;
  std::unordered_map<stream_id, stream_key> keys_;
  std::map<stream_key, std::string> names_;
};

namespace {

opened_source open_source(const Device& device, std::weak_ptr<record_sink> sink, const collector_options& options,
                          const diagnostic_settings& settings) {
  switch (device.backend()) {
    case backend_kind::sim: return open_sim_source(device, std::move(sink));
    case backend_kind::cuda: return open_cupti_source(device, std::move(sink), options, settings);
  }
  return {nullptr, backoff_message(device.name(), "unknown backend")};
}

}  // namespace

}  // namespace detail

collector::collector(const Device& device, const collector_options& options) : device_(device) {
  const auto settings = detail::diagnostic_settings_from_environment();
  state_ = std::make_shared<detail::collector_state>(device, options, detail::collection_notes(options, settings));
  state_->attach_source(detail::open_source(device, state_, options, settings));
  if (!state_->active()) return;
  // The default stream exists before any observer could see it being created.
  state_->on_stream_created(device.default_stream());
  if (settings.observer) attach_observer(device_, state_);
  if (options.tracing == initial_tracing::on) state_->start_tracing();
}

collector::~collector() {
  detach_observer(device_, state_.get());
  state_->close();
}

collector_status collector::status() const {
  return state_->active() ? collector_status::active : collector_status::inactive;
}
std::string collector::status_message() const { return state_->message(); }
void collector::step() { state_->step(); }
void collector::start_tracing() { state_->start_tracing(); }
trace collector::stop_tracing() { return state_->stop_tracing(); }
usage_report collector::usage() { return state_->usage(); }
std::size_t collector::ops_seen() const { return state_->ops_seen(); }
void collector::synchronize_device() { device_.synchronize(); }

}  // namespace streamsafe::monitor
