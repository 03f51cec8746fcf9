// The live collector on sim: what a two-stream run turns into (ops per stream, dependency edges
// from record/wait, usage), always-on figures against the full trace of the same run, tracing
// windows, sampled always-on (by steps and by time), kernels-only always-on, the diagnostic settings and the back-off when a device already has
// a collector. The cuda test runs on a GPU machine only.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "demo_kernels.hpp"
#include "monitor/collect/collection_source.hpp"
#include "monitor/collect/online_usage.hpp"
#include "monitor/collect/sampling.hpp"
#include "streamsafe/device.hpp"
#include "streamsafe/event.hpp"
#include "streamsafe/monitor/analysis.hpp"
#include "streamsafe/monitor/collector.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::monitor {
namespace {

constexpr std::size_t values = 16 * 1024;
constexpr std::size_t steps = 6;
constexpr int compute_passes = 48;

/// Many passes over the data: on sim, longer than copying it, so the timeline shows the
/// copies overlapping the kernels.
/// On cuda it is the demo's doubling kernel (present only in builds with the cuda backend).
kernel heavy_kernel(std::uint32_t* data) {
  kernel work = demo::double_kernel(data, data, values);
  work.name = "heavy";
  work.sim = [data] {
    for (int pass = 0; pass < compute_passes; ++pass) {
      for (std::size_t i = 0; i < values; ++i) data[i] = data[i] * 3 + static_cast<std::uint32_t>(pass);
    }
  };
  return work;
}

/// Two streams: "copy" uploads each step's input, "compute" waits on an event recorded after
/// the upload and runs one kernel on it.
class two_stream_run {
 public:
  explicit two_stream_run(const Device& device)
      : device_(device), copy_(device, {.name = "copy"}), compute_(device, {.name = "compute"}) {
    host_ = static_cast<std::uint32_t*>(device_.allocate_pinned(values * sizeof(std::uint32_t)));
    std::fill_n(host_, values, 1u);
    for (std::size_t i = 0; i < steps; ++i) {
      buffers_.push_back(static_cast<std::uint32_t*>(device_.allocate(values * sizeof(std::uint32_t))));
      uploaded_.emplace_back(device);
    }
  }
  ~two_stream_run() {
    device_.synchronize();
    for (auto* buffer : buffers_) device_.deallocate(buffer);
    device_.deallocate_pinned(host_);
  }
  two_stream_run(const two_stream_run&) = delete;
  two_stream_run& operator=(const two_stream_run&) = delete;

  void run() {
    for (std::size_t i = 0; i < steps; ++i) run_step(i);
    device_.synchronize();
  }
  /// Enqueues step `i` (of `steps`): its upload, the record/wait handoff and its kernel.
  void run_step(std::size_t i) {
    copy_.copy(buffers_[i], host_, values * sizeof(std::uint32_t));
    uploaded_[i].record(copy_);
    compute_.wait(uploaded_[i]);
    compute_.launch(heavy_kernel(buffers_[i]));
  }
  [[nodiscard]] stream_key key(const StreamRef& stream) const {
    return {device_.ordinal(), static_cast<std::int64_t>(stream.id())};
  }
  [[nodiscard]] const Stream& copy_stream() const { return copy_; }
  [[nodiscard]] const Stream& compute_stream() const { return compute_; }
  void synchronize() { device_.synchronize(); }

 private:
  Device device_;
  Stream copy_;
  Stream compute_;
  std::uint32_t* host_ = nullptr;
  std::vector<std::uint32_t*> buffers_;
  std::vector<Event> uploaded_;
};

Device threaded_sim() { return Device::sim({.mode = sim_mode::threaded}); }

std::vector<const gpu_op*> ops_on(const trace& t, stream_key stream, op_kind kind) {
  std::vector<const gpu_op*> found;
  for (const auto& op : t.ops) {
    if (op.stream == stream && op.kind == kind) found.push_back(&op);
  }
  return found;
}

const stream_usage& usage_of(const usage_report& report, stream_key stream) {
  const auto found = std::find_if(report.streams.begin(), report.streams.end(),
                                  [&](const stream_usage& u) { return u.stream == stream; });
  EXPECT_NE(found, report.streams.end());
  return *found;
}

/// One two-stream run on a threaded sim device, fully traced.
class CollectedTwoStreamRun : public ::testing::Test {
 protected:
  Device device = threaded_sim();
  two_stream_run workload{device};
  trace t = collect_run();
  stream_key copy = workload.key(workload.copy_stream());
  stream_key compute = workload.key(workload.compute_stream());

 private:
  trace collect_run() {
    collector collect(device, {.tracing = initial_tracing::on});
    EXPECT_EQ(collect.status(), collector_status::active) << collect.status_message();
    workload.run();
    return collect.stop_tracing();
  }
};

TEST_F(CollectedTwoStreamRun, GivesTheOpsOfEachStream) {
  const auto copies = ops_on(t, copy, op_kind::memcpy);
  const auto kernels = ops_on(t, compute, op_kind::kernel);
  ASSERT_EQ(copies.size(), steps);
  ASSERT_EQ(kernels.size(), steps);
  EXPECT_EQ(copies.front()->bytes, values * sizeof(std::uint32_t));
  EXPECT_EQ(t.names.view(kernels.front()->name), "heavy");
  EXPECT_TRUE(ops_on(t, copy, op_kind::kernel).empty());
  EXPECT_EQ(t.stream_names.at(copy), "copy");
  EXPECT_EQ(t.stream_names.at(compute), "compute");
  EXPECT_TRUE(std::is_sorted(t.ops.begin(), t.ops.end(), [](const auto& a, const auto& b) { return a.ts_us < b.ts_us; }));
  // On sim the observer is the witness of host calls: one launch per kernel.
  EXPECT_EQ(std::count_if(t.calls.begin(), t.calls.end(), [](const auto& c) { return c.kind == call_kind::launch; }),
            static_cast<std::ptrdiff_t>(steps));
}

TEST_F(CollectedTwoStreamRun, RecordsAndWaitsBecomeDependencyEdges) {
  ASSERT_EQ(t.dependencies.size(), steps);
  const auto copies = ops_on(t, copy, op_kind::memcpy);
  const auto kernels = ops_on(t, compute, op_kind::kernel);
  for (std::size_t i = 0; i < steps; ++i) {
    const auto& record = t.ops[t.dependencies[i].record_op];
    const auto& wait = t.ops[t.dependencies[i].wait_op];
    EXPECT_EQ(record.kind, op_kind::event_record);
    EXPECT_EQ(record.stream, copy);
    EXPECT_EQ(wait.kind, op_kind::sync);
    EXPECT_EQ(wait.stream, compute);
    EXPECT_GE(wait.end_us(), record.ts_us);
    // The record stands after its upload, and the waiting kernel really ran after both.
    EXPECT_GE(record.ts_us, copies[i]->end_us());
    EXPECT_GE(kernels[i]->ts_us, copies[i]->end_us());
  }
}

TEST_F(CollectedTwoStreamRun, AnalysisSeesTheBusierStream) {
  const auto result = analyze(t);

  const auto& copy_usage = usage_of(result.usage, copy);
  const auto& compute_usage = usage_of(result.usage, compute);
  EXPECT_EQ(copy_usage.memcpys, steps);
  EXPECT_EQ(compute_usage.kernels, steps);
  ASSERT_EQ(result.usage.devices.size(), 1u);
  const auto& d = result.usage.devices.front();
  // Orderings that hold whatever the machine's speed: the first upload precedes every kernel
  // (each kernel waits on its upload), so it adds to the device's busy time and overlaps nothing.
  const double first_upload = ops_on(t, copy, op_kind::memcpy).front()->dur_us;
  EXPECT_GE(d.busy_us + 1e-6, compute_usage.busy_us + first_upload);
  EXPECT_LE(d.busy_us, compute_usage.busy_us + copy_usage.busy_us + 1e-6);
  ASSERT_EQ(d.stream_pairs.size(), 1u);
  EXPECT_LE(d.stream_pairs.front().overlap_us, copy_usage.busy_us - first_upload + 1e-6);
  EXPECT_NEAR(d.copy_compute_overlap_us, d.stream_pairs.front().overlap_us, 1e-6);
  EXPECT_EQ(result.critical_paths.size(), 1u);
}

void expect_same_usage(const usage_report& online, const usage_report& offline) {
  ASSERT_EQ(online.devices.size(), offline.devices.size());
  ASSERT_EQ(online.streams.size(), offline.streams.size());
  constexpr double tolerance = 1e-6;
  for (std::size_t i = 0; i < online.streams.size(); ++i) {
    const auto& a = online.streams[i];
    const auto& b = offline.streams[i];
    EXPECT_EQ(a.stream, b.stream);
    EXPECT_EQ(a.name, b.name);
    EXPECT_NEAR(a.busy_us, b.busy_us, tolerance);
    EXPECT_NEAR(a.idle_us, b.idle_us, tolerance);
    EXPECT_EQ(a.kernels, b.kernels);
    EXPECT_EQ(a.memcpys, b.memcpys);
    EXPECT_EQ(a.memsets, b.memsets);
    EXPECT_NEAR(a.first_us, b.first_us, tolerance);
    EXPECT_NEAR(a.last_us, b.last_us, tolerance);
  }
  for (std::size_t i = 0; i < online.devices.size(); ++i) {
    const auto& a = online.devices[i];
    const auto& b = offline.devices[i];
    EXPECT_NEAR(a.window_begin_us, b.window_begin_us, tolerance);
    EXPECT_NEAR(a.window_end_us, b.window_end_us, tolerance);
    EXPECT_NEAR(a.busy_us, b.busy_us, tolerance);
    EXPECT_NEAR(a.compute_us, b.compute_us, tolerance);
    EXPECT_NEAR(a.copy_us, b.copy_us, tolerance);
    EXPECT_NEAR(a.copy_compute_overlap_us, b.copy_compute_overlap_us, tolerance);
    EXPECT_EQ(a.streams, b.streams);
    EXPECT_EQ(a.max_concurrent_streams, b.max_concurrent_streams);
    ASSERT_EQ(a.stream_pairs.size(), b.stream_pairs.size());
    for (std::size_t p = 0; p < a.stream_pairs.size(); ++p) {
      EXPECT_NEAR(a.stream_pairs[p].overlap_us, b.stream_pairs[p].overlap_us, tolerance);
    }
  }
}

TEST(Collector, AlwaysOnFiguresEqualTheFullTraceOfTheSameRun) {
  for (auto mode : {sim_mode::threaded, sim_mode::deterministic}) {
    SCOPED_TRACE(mode == sim_mode::threaded ? "threaded" : "deterministic");
    auto device = Device::sim({.mode = mode});
    two_stream_run workload(device);
    collector collect(device, {.tracing = initial_tracing::on});
    workload.run();
    const auto t = collect.stop_tracing();
    const auto online = collect.usage();
    EXPECT_EQ(collect.ops_seen(), 2 * steps);
    expect_same_usage(online, measure_usage(t));
  }
}

TEST(Collector, TracingWindowKeepsOnlyItsOpsWhileAlwaysOnCountsAll) {
  auto device = threaded_sim();
  two_stream_run workload(device);
  collector collect(device);
  workload.run();
  const auto window = collect.capture_window([&] { workload.run(); });
  workload.run();
  EXPECT_TRUE(collect.stop_tracing().ops.empty());  // not tracing any more
  EXPECT_EQ(ops_on(window, workload.key(workload.copy_stream()), op_kind::memcpy).size(), steps);
  EXPECT_EQ(window.dependencies.size(), steps);
  const auto all = collect.usage();
  EXPECT_EQ(usage_of(all, workload.key(workload.copy_stream())).memcpys, 3 * steps);
}

/// Runs the workload's steps one at a time, each finished before the next (so each step's ops
/// run inside it), marking step boundaries; `around(i, enqueue)` may wrap a step.
template <typename Around>
void run_marked_steps(two_stream_run& workload, collector& collect, Around&& around) {
  for (std::size_t i = 0; i < steps; ++i) {
    around(i, [&] {
      workload.run_step(i);
      workload.synchronize();
    });
    collect.step();
  }
}
void run_marked_steps(two_stream_run& workload, collector& collect) {
  run_marked_steps(workload, collect, [](std::size_t, auto&& enqueue) { enqueue(); });
}

TEST(CollectorSampling, CollectsOnlyTheSampledStepsAndSaysSo) {
  for (auto mode : {sim_mode::threaded, sim_mode::deterministic}) {
    SCOPED_TRACE(mode == sim_mode::threaded ? "threaded" : "deterministic");
    auto device = Device::sim({.mode = mode});
    two_stream_run workload(device);
    // Steps 0 and 3 of 6 are sampled.
    collector collect(device, {.sample_every_steps = 3, .sample_window_steps = 1});
    EXPECT_NE(collect.status_message().find("sampled: 1 step(s) in 3"), std::string::npos) << collect.status_message();
    // The host pauses between the unsampled steps 1 and 2: the pause lies inside the device's
    // window but outside both sampled windows, whatever the host's load.
    constexpr auto pause = std::chrono::milliseconds(20);
    run_marked_steps(workload, collect, [&](std::size_t i, auto&& enqueue) {
      enqueue();
      if (i == 1) std::this_thread::sleep_for(pause);
    });
    const auto usage = collect.usage();
    EXPECT_EQ(collect.ops_seen(), 4u);
    EXPECT_DOUBLE_EQ(usage.sampled_fraction, 2.0 / 6.0);
    EXPECT_EQ(usage_of(usage, workload.key(workload.copy_stream())).memcpys, 2u);
    EXPECT_EQ(usage_of(usage, workload.key(workload.compute_stream())).kernels, 2u);
    // Idle time is counted inside the two sampled windows only: the time between them, the
    // pause included, is left out.
    ASSERT_EQ(usage.devices.size(), 1u);
    const auto& d = usage.devices.front();
    EXPECT_GE(d.idle_us, 0);
    const double pause_us = std::chrono::duration<double, std::micro>(pause).count();
    EXPECT_GE(d.window_us() - (d.busy_us + d.idle_us), pause_us);
  }
}

TEST(CollectorSampling, WindowsOfSeveralStepsRepeatEveryPeriod) {
  auto device = threaded_sim();
  two_stream_run workload(device);
  // Steps 0, 1 and 4, 5 of 6 are sampled.
  collector collect(device, {.sample_every_steps = 4, .sample_window_steps = 2});
  run_marked_steps(workload, collect);
  const auto usage = collect.usage();
  EXPECT_EQ(usage_of(usage, workload.key(workload.compute_stream())).kernels, 4u);
  EXPECT_DOUBLE_EQ(usage.sampled_fraction, 4.0 / 6.0);
}

TEST(CollectorSampling, ATracedWindowIsCollectedInFullAndCountsAsSampled) {
  auto device = threaded_sim();
  two_stream_run workload(device);
  collector collect(device, {.sample_every_steps = 3, .sample_window_steps = 1});
  trace window;
  // Step 4 is not sampled, but it is traced.
  run_marked_steps(workload, collect, [&](std::size_t i, auto&& enqueue) {
    if (i == 4) window = collect.capture_window(enqueue);
    else enqueue();
  });
  EXPECT_EQ(ops_on(window, workload.key(workload.compute_stream()), op_kind::kernel).size(), 1u);
  EXPECT_EQ(window.dependencies.size(), 1u);
  const auto usage = collect.usage();
  EXPECT_EQ(usage_of(usage, workload.key(workload.compute_stream())).kernels, 3u);  // steps 0, 3, 4
  EXPECT_DOUBLE_EQ(usage.sampled_fraction, 3.0 / 6.0);
}

TEST(CollectorSampling, WithoutSamplingStepsChangeNothing) {
  auto device = threaded_sim();
  two_stream_run workload(device);
  collector collect(device, {.tracing = initial_tracing::on});
  run_marked_steps(workload, collect);
  const auto t = collect.stop_tracing();
  const auto online = collect.usage();
  EXPECT_EQ(online.sampled_fraction, 1.0);
  EXPECT_EQ(collect.ops_seen(), 2 * steps);
  expect_same_usage(online, measure_usage(t));
}

/// The clock of time-based sampling, set by hand: collectors constructed while a
/// scoped_sampling_clock lives read `now` (nanoseconds), so window boundaries fall exactly where
/// a test puts them.
class scoped_sampling_clock {
 public:
  explicit scoped_sampling_clock(std::int64_t start) {
    now_.store(start);
    detail::set_sampling_clock_for_testing([] { return now_.load(); });
  }
  ~scoped_sampling_clock() { detail::set_sampling_clock_for_testing(nullptr); }
  scoped_sampling_clock(const scoped_sampling_clock&) = delete;
  scoped_sampling_clock& operator=(const scoped_sampling_clock&) = delete;
  void set(std::int64_t now) { now_.store(now); }

 private:
  static inline std::atomic<std::int64_t> now_{0};
};

constexpr std::int64_t clock_start = 1'000'000;

/// Runs the workload's steps with the sampling clock at `clock_start + at(i)` for step i, each
/// step opened by a device synchronize (the callback that sees the clock move) and never marked
/// with step(); then moves the clock to `clock_start + end` (synchronizing again).
template <typename At>
void run_timed_steps(two_stream_run& workload, scoped_sampling_clock& clock, At&& at, std::int64_t end) {
  for (std::size_t i = 0; i < steps; ++i) {
    clock.set(clock_start + at(i));
    workload.synchronize();
    workload.run_step(i);
  }
  clock.set(clock_start + end);
  workload.synchronize();
}

TEST(CollectorTimeSampling, CollectsWhatIsEnqueuedInsideWindowsWithoutSteps) {
  for (auto mode : {sim_mode::threaded, sim_mode::deterministic}) {
    SCOPED_TRACE(mode == sim_mode::threaded ? "threaded" : "deterministic");
    scoped_sampling_clock clock(clock_start);
    auto device = Device::sim({.mode = mode});
    two_stream_run workload(device);
    // Windows of 30 ns every 100 ns; steps at 5, 55, 105, ..., 255 ns: steps 0, 2 and 4 are inside.
    collector collect(device, {.sample_period = std::chrono::nanoseconds(100), .sample_window = std::chrono::nanoseconds(30)});
    EXPECT_NE(collect.status_message().find("sampled: 30 ns every 100 ns"), std::string::npos) << collect.status_message();
    run_timed_steps(workload, clock, [](std::size_t i) { return 5 + 50 * static_cast<std::int64_t>(i); }, 300);
    const auto usage = collect.usage();
    EXPECT_EQ(collect.ops_seen(), 6u);
    EXPECT_EQ(usage_of(usage, workload.key(workload.copy_stream())).memcpys, 3u);
    EXPECT_EQ(usage_of(usage, workload.key(workload.compute_stream())).kernels, 3u);
    EXPECT_DOUBLE_EQ(usage.sampled_fraction, 90.0 / 300.0);  // three windows of 30 ns in 300 ns
    // Idle time is counted inside the windows' spans only (OnlineUsage tests the figures).
    ASSERT_EQ(usage.devices.size(), 1u);
    const auto& d = usage.devices.front();
    EXPECT_GE(d.idle_us, 0);
    EXPECT_LE(d.busy_us + d.idle_us, d.window_us() + 1e-9);
  }
}

TEST(CollectorTimeSampling, ATracedWindowIsCollectedInFullAndItsTimeCounts) {
  scoped_sampling_clock clock(clock_start);
  auto device = threaded_sim();
  two_stream_run workload(device);
  collector collect(device, {.sample_period = std::chrono::nanoseconds(100), .sample_window = std::chrono::nanoseconds(10)});
  // Step 0 at 5 ns is in the first window [0,10), steps 1.. at 20, 35, ..., 80 ns outside it;
  // step 2 is traced from 35 to 50 ns.
  trace window;
  for (std::size_t i = 0; i < steps; ++i) {
    clock.set(clock_start + 5 + 15 * static_cast<std::int64_t>(i));
    workload.synchronize();
    if (i != 2) {
      workload.run_step(i);
      continue;
    }
    window = collect.capture_window([&] {
      workload.run_step(i);
      clock.set(clock_start + 50);
    });
  }
  clock.set(clock_start + 100);
  const auto usage = collect.usage();
  EXPECT_EQ(ops_on(window, workload.key(workload.compute_stream()), op_kind::kernel).size(), 1u);
  EXPECT_EQ(usage_of(usage, workload.key(workload.compute_stream())).kernels, 2u);  // steps 0 and 2
  EXPECT_DOUBLE_EQ(usage.sampled_fraction, (10.0 + 15.0) / 100.0);
}

TEST(CollectorTimeSampling, TakesPrecedenceOverStepSampling) {
  scoped_sampling_clock clock(clock_start);
  auto device = threaded_sim();
  two_stream_run workload(device);
  collector collect(device, {.sample_every_steps = 2,
                             .sample_period = std::chrono::nanoseconds(100),
                             .sample_window = std::chrono::nanoseconds(50)});
  EXPECT_NE(collect.status_message().find("sample_every_steps ignored"), std::string::npos) << collect.status_message();
  // Every step inside the window: step() must not switch collection off.
  for (std::size_t i = 0; i < steps; ++i) {
    clock.set(clock_start + static_cast<std::int64_t>(i));
    workload.synchronize();
    workload.run_step(i);
    collect.step();
  }
  workload.synchronize();
  EXPECT_EQ(usage_of(collect.usage(), workload.key(workload.compute_stream())).kernels, steps);
}

TEST(CollectorTimeSampling, RunsOnTheSteadyClockByDefault) {
  auto device = threaded_sim();
  two_stream_run workload(device);
  // A window of half an hour: the test is over long before it closes.
  collector collect(device, {.sample_period = std::chrono::hours(1), .sample_window = std::chrono::minutes(30)});
  EXPECT_NE(collect.status_message().find("sampled: 1800 s every 3600 s"), std::string::npos) << collect.status_message();
  workload.run();
  const auto usage = collect.usage();
  EXPECT_EQ(collect.ops_seen(), 2 * steps);
  EXPECT_DOUBLE_EQ(usage.sampled_fraction, 1.0);
}

TEST(CollectorKernelsOnly, AlwaysOnCountsKernelsWhileTracesKeepEverything) {
  auto device = threaded_sim();
  two_stream_run workload(device);
  collector collect(device, {.always_on = always_on_ops::kernels});
  EXPECT_NE(collect.status_message().find("always-on: kernels only"), std::string::npos) << collect.status_message();
  workload.run();
  const auto window = collect.capture_window([&] { workload.run(); });
  EXPECT_EQ(ops_on(window, workload.key(workload.copy_stream()), op_kind::memcpy).size(), steps);
  const auto usage = collect.usage();
  EXPECT_EQ(collect.ops_seen(), 2 * steps);  // the kernels of both runs
  EXPECT_EQ(usage_of(usage, workload.key(workload.compute_stream())).kernels, 2 * steps);
  ASSERT_EQ(usage.streams.size(), 1u);  // the copy stream ran copies only
  ASSERT_EQ(usage.devices.size(), 1u);
  EXPECT_EQ(usage.devices.front().copy_us, 0);
  EXPECT_EQ(usage.sampled_fraction, 1.0);
}

/// Sets an environment variable for one scope (the collector reads its diagnostic settings at
/// construction).
class scoped_env {
 public:
  scoped_env(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~scoped_env() { ::unsetenv(name_); }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;

 private:
  const char* name_;
};

TEST(CollectorDiagnostics, ObserverOffGivesNoEdgesNorHostCallsButTheSameUsage) {
  const scoped_env observer("STREAMSAFE_COLLECTOR_OBSERVER", "off");
  auto device = threaded_sim();
  two_stream_run workload(device);
  collector collect(device, {.tracing = initial_tracing::on});
  EXPECT_NE(collect.status_message().find("[diagnostic: observer=off]"), std::string::npos) << collect.status_message();
  workload.run();
  const auto t = collect.stop_tracing();
  EXPECT_TRUE(t.dependencies.empty());
  EXPECT_TRUE(t.calls.empty());
  EXPECT_EQ(ops_on(t, workload.key(workload.compute_stream()), op_kind::kernel).size(), steps);
  expect_same_usage(collect.usage(), measure_usage(t));
}

TEST(CollectorDiagnostics, CuptiSettingsAreNamedInTheStatusMessage) {
  const scoped_env kinds("STREAMSAFE_CUPTI_KINDS", "kernel");
  const scoped_env clock("STREAMSAFE_CUPTI_CLOCK", "cupti");
  auto device = threaded_sim();
  collector collect(device);
  EXPECT_EQ(collect.status(), collector_status::active);
  EXPECT_NE(collect.status_message().find("[diagnostic: kinds=kernel clock=cupti]"), std::string::npos)
      << collect.status_message();
}

TEST(Collector, SecondCollectorOnADeviceBacksOffWithAMessage) {
  auto device = threaded_sim();
  two_stream_run workload(device);
  auto first = std::make_unique<collector>(device, collector_options{.tracing = initial_tracing::on});
  collector second(device, {.tracing = initial_tracing::on});
  EXPECT_EQ(second.status(), collector_status::inactive);
  EXPECT_NE(second.status_message().find("another collector"), std::string::npos) << second.status_message();
  workload.run();
  EXPECT_TRUE(second.stop_tracing().ops.empty());
  EXPECT_TRUE(second.usage().streams.empty());
  EXPECT_EQ(first->stop_tracing().dependencies.size(), steps);  // the first one is unaffected

  first.reset();
  collector third(device);
  EXPECT_EQ(third.status(), collector_status::active) << third.status_message();
}

TEST(Collector, BackoffMessageSaysWhatAndWhatToDo) {
  const auto message = detail::backoff_message("NVIDIA H200 (cuda:0)", "another CUPTI client is attached");
  EXPECT_NE(message.find("NVIDIA H200 (cuda:0)"), std::string::npos);
  EXPECT_NE(message.find("another CUPTI client is attached"), std::string::npos);
  EXPECT_NE(message.find("Nsight Systems"), std::string::npos);
}

// Worked by hand: A = [0,10) + [20,30), B = [5,25), C (copy) = [8,9).
// A: 20, B: 20, C: 1; device busy = [0,30) = 30; A∩B = [5,10)+[20,25) = 10; A∩C = 1; B∩C = 1;
// three streams busy at 8; compute = A∪B = 30, copy = 1, copy/compute overlap = 1.
TEST(OnlineUsage, SweepMatchesHandWorkedFiguresInAnyArrivalOrder) {
  detail::online_usage usage(64);
  const stream_key a{0, 1}, b{0, 2}, c{0, 3};
  const auto op = [](stream_key s, op_kind kind, double ts, double dur) {
    detail::op_record r;
    r.stream = s;
    r.kind = kind;
    r.name = "k";
    r.ts_us = ts;
    r.dur_us = dur;
    return r;
  };
  for (const auto& r : {op(a, op_kind::kernel, 20, 10), op(b, op_kind::kernel, 5, 20), op(c, op_kind::memcpy, 8, 1),
                        op(a, op_kind::kernel, 0, 10), op(a, op_kind::sync, 0, 100)}) {
    usage.add(r);
  }
  usage.reduce();
  const auto report = usage.report({});
  ASSERT_EQ(report.devices.size(), 1u);
  const auto& d = report.devices.front();
  EXPECT_DOUBLE_EQ(d.busy_us, 30);
  EXPECT_DOUBLE_EQ(d.compute_us, 30);
  EXPECT_DOUBLE_EQ(d.copy_us, 1);
  EXPECT_DOUBLE_EQ(d.copy_compute_overlap_us, 1);
  EXPECT_EQ(d.max_concurrent_streams, 3u);
  ASSERT_EQ(d.stream_pairs.size(), 3u);
  EXPECT_DOUBLE_EQ(d.stream_pairs[0].overlap_us, 10);  // (a, b)
  EXPECT_DOUBLE_EQ(d.stream_pairs[1].overlap_us, 1);   // (a, c)
  EXPECT_DOUBLE_EQ(d.stream_pairs[2].overlap_us, 1);   // (b, c)
  EXPECT_DOUBLE_EQ(report.streams[0].busy_us, 20);
  EXPECT_EQ(report.streams[0].kernels, 2u);  // the sync slice is not work
  EXPECT_EQ(usage.ops_seen(), 4u);
}

// Two windows, opened at 0 and 100: [0,10) + [20,30) in the first (span 30), [100,110) and
// [105,120) on another stream in the second (span 20). Busy 20 + 20 = 40; idle 50 - 40 = 10, not
// the 80 of the whole [0,120) window.
TEST(OnlineUsage, SampledWindowsCountIdleTimeInsideThemOnly) {
  detail::online_usage usage(2);  // batches of two: windows span batches
  const stream_key a{0, 1}, b{0, 2};
  const auto op = [](stream_key s, double ts, double dur) {
    detail::op_record r;
    r.stream = s;
    r.kind = op_kind::kernel;
    r.name = "k";
    r.ts_us = ts;
    r.dur_us = dur;
    return r;
  };
  usage.open_window(0);
  usage.add(op(a, 20, 10));
  usage.add(op(a, 0, 10));
  usage.open_window(100);
  usage.add(op(a, 100, 10));
  usage.add(op(b, 105, 15));
  usage.reduce();
  const auto report = usage.report({});
  ASSERT_EQ(report.devices.size(), 1u);
  const auto& d = report.devices.front();
  EXPECT_DOUBLE_EQ(d.busy_us, 40);
  EXPECT_DOUBLE_EQ(d.idle_us, 10);
  EXPECT_DOUBLE_EQ(d.window_us(), 120);
  ASSERT_EQ(report.streams.size(), 2u);
  EXPECT_DOUBLE_EQ(report.streams[0].idle_us, 50 - 30);
  EXPECT_DOUBLE_EQ(report.streams[1].idle_us, 50 - 15);
}

TEST(CollectorCuda, CollectsATwoStreamRunThroughCupti) {
  if (Device::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  auto device = Device::cuda(0);
  two_stream_run workload(device);
  collector collect(device, {.tracing = initial_tracing::on});
  if (collect.status() == collector_status::inactive) GTEST_SKIP() << collect.status_message();
  workload.run();
  const auto t = collect.stop_tracing();
  const auto result = analyze(t);
  EXPECT_EQ(t.dependencies.size(), steps);
  std::size_t kernels = 0, memcpys = 0;
  for (const auto& s : result.usage.streams) {
    kernels += s.kernels;
    memcpys += s.memcpys;
  }
  EXPECT_EQ(kernels, steps);
  EXPECT_EQ(memcpys, steps);
  EXPECT_FALSE(t.calls.empty());  // CUPTI's runtime records
  expect_same_usage(collect.usage(), measure_usage(t));
}

}  // namespace
}  // namespace streamsafe::monitor
