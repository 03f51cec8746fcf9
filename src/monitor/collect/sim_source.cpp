// The sim source: the sim device's op-timing hook (src/runtime/op_timing.hpp) reports each
// kernel, copy and fill as it runs; they are already on the host clock.
#include <atomic>
#include <mutex>

#include "monitor/collect/collection_source.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/op_timing.hpp"

namespace streamsafe::monitor::detail {

namespace {

op_kind to_op_kind(streamsafe::detail::timed_op_kind kind) {
  switch (kind) {
    case streamsafe::detail::timed_op_kind::kernel: return op_kind::kernel;
    case streamsafe::detail::timed_op_kind::copy: return op_kind::memcpy;
    case streamsafe::detail::timed_op_kind::fill: return op_kind::memset;
  }
  return op_kind::kernel;
}

/// Registered on the device; ops enqueued while it was set keep it alive after the collector
/// is gone, so it holds the sink weakly.
class timing_forwarder final : public streamsafe::detail::OpTimingSink {
 public:
  timing_forwarder(std::int32_t device, std::weak_ptr<record_sink> sink) : device_(device), sink_(std::move(sink)) {}

  void on_op_ran(const streamsafe::detail::timed_op& ran) noexcept override {
    const auto sink = sink_.lock();
    if (!sink) return;
    op_record op;
    op.stream = {device_, static_cast<std::int64_t>(ran.stream)};
    op.kind = to_op_kind(ran.kind);
    op.name = ran.name;
    op.ts_us = host_us(ran.begin);
    op.dur_us = host_us(ran.end) - op.ts_us;
    op.enqueued_us = host_us(ran.enqueued);
    op.bytes = ran.bytes;
    sink->on_ops({&op, 1});
  }
  [[nodiscard]] bool wants_ops() const noexcept override { return collecting_.load(std::memory_order_relaxed); }
  void set_collecting(bool on) { collecting_.store(on, std::memory_order_relaxed); }

 private:
  std::atomic<bool> collecting_{true};
  std::int32_t device_;
  std::weak_ptr<record_sink> sink_;
};

class sim_source final : public collection_source {
 public:
  sim_source(Device device, std::shared_ptr<timing_forwarder> forwarder)
      : device_(std::move(device)), forwarder_(std::move(forwarder)) {}
  ~sim_source() override { device_.impl().clear_op_timing_sink(forwarder_.get()); }
  sim_source(const sim_source&) = delete;
  sim_source& operator=(const sim_source&) = delete;

  stream_key key_of(StreamRef stream) override {
    return {device_.ordinal(), static_cast<std::int64_t>(stream.id())};
  }
  void flush() override {}  // ops report as they run
  host_call_origin host_calls() const override { return host_call_origin::observer; }
  void set_detail(trace_detail /*detail*/) override {}  // timing sim ops costs nothing extra
  /// Like CUPTI: ops enqueued while off are not timed (the device asks at enqueue).
  void set_collecting(bool on) override { forwarder_->set_collecting(on); }
  std::string description() const override { return "sim op timing on " + device_.name(); }

 private:
  Device device_;
  std::shared_ptr<timing_forwarder> forwarder_;
};

}  // namespace

opened_source open_sim_source(const Device& device, std::weak_ptr<record_sink> sink) {
  auto forwarder = std::make_shared<timing_forwarder>(device.ordinal(), std::move(sink));
  if (!device.impl().try_set_op_timing_sink(forwarder)) {
    return {nullptr, backoff_message(device.name(), "another collector is already attached to this device")};
  }
  return {std::make_unique<sim_source>(device, std::move(forwarder)), {}};
}

}  // namespace streamsafe::monitor::detail
