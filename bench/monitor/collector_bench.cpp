// Collection overhead: one multi-stream step (4 streams: an upload, two compute streams fed
// through events, a download waiting on both), timed with collection off, always-on, and full
// tracing, side by side in one process. Targets on the H200: always-on at most 1% of the step
// time, full tracing at most 5% (docs/monitor.md). The cuda cases skip without a GPU.
#include <benchmark/benchmark.h>

#include <memory>
#include <optional>
#include <vector>

#include "demo_kernels.hpp"
#include "streamsafe/device.hpp"
#include "streamsafe/event.hpp"
#include "streamsafe/monitor/collector.hpp"
#include "streamsafe/stream.hpp"

namespace {

using namespace streamsafe;

enum class collection { off, always_on, full_trace };

constexpr std::size_t values = 256 * 1024;  // 1 MiB per buffer
constexpr unsigned spin_us = 100;            // cuda: each compute kernel's length

class pipeline_step {
 public:
  explicit pipeline_step(const Device& device) : device_(device) {
    for (const char* name : {"upload", "compute_a", "compute_b", "download"}) streams_.emplace_back(device, stream_options{.name = name});
    for (int i = 0; i < 3; ++i) handoff_.emplace_back(device);
    host_ = static_cast<std::uint32_t*>(device_.allocate_pinned(bytes()));
    for (auto*& buffer : buffers_) buffer = static_cast<std::uint32_t*>(device_.allocate(bytes()));
  }
  ~pipeline_step() {
    device_.synchronize();
    for (auto* buffer : buffers_) device_.deallocate(buffer);
    device_.deallocate_pinned(host_);
  }
  pipeline_step(const pipeline_step&) = delete;
  pipeline_step& operator=(const pipeline_step&) = delete;

  void run() {
    auto [upload, compute_a, compute_b, download] = streams();
    upload.copy(buffers_[0], host_, bytes());
    handoff_[0].record(upload);
    for (auto* compute : {&compute_a, &compute_b}) {
      compute->wait(handoff_[0]);
      compute->launch(demo::slow_copy_kernel(buffers_[0], compute == &compute_a ? buffers_[1] : buffers_[2], values, spin_us));
    }
    handoff_[1].record(compute_a);
    handoff_[2].record(compute_b);
    download.wait(handoff_[1]);
    download.wait(handoff_[2]);
    download.copy(host_, buffers_[1], bytes());
    download.synchronize();
  }

 private:
  struct four_streams {
    Stream& upload;
    Stream& compute_a;
    Stream& compute_b;
    Stream& download;
  };
  four_streams streams() { return {streams_[0], streams_[1], streams_[2], streams_[3]}; }
  static constexpr std::size_t bytes() { return values * sizeof(std::uint32_t); }

  Device device_;
  std::vector<Stream> streams_;
  std::vector<Event> handoff_;
  std::uint32_t* host_ = nullptr;
  std::uint32_t* buffers_[3] = {};
};

void run_steps(benchmark::State& state, const Device& device, collection mode) {
  pipeline_step step(device);
  std::optional<monitor::collector> collect;
  if (mode != collection::off) {
    collect.emplace(device);
    if (collect->status() == monitor::collector_status::inactive) {
      state.SkipWithError(collect->status_message().c_str());
      return;
    }
  }
  constexpr std::int64_t steps_per_window = 512;  // bounds the memory a full trace holds
  std::int64_t in_window = 0;
  if (mode == collection::full_trace) collect->start_tracing();
  for (auto _ : state) {
    step.run();
    if (mode == collection::full_trace && ++in_window == steps_per_window) {
      state.PauseTiming();
      benchmark::DoNotOptimize(collect->stop_tracing());
      collect->start_tracing();
      in_window = 0;
      state.ResumeTiming();
    }
  }
  if (!collect) return;
  const auto usage = collect->usage();  // flushes what CUPTI still buffers
  state.counters["ops_seen"] = static_cast<double>(collect->ops_seen());
  state.counters["streams_seen"] = static_cast<double>(usage.streams.size());
}

void sim_case(benchmark::State& state, collection mode) {
  run_steps(state, Device::sim({.memory_capacity = std::size_t{64} << 20, .mode = sim_mode::threaded}), mode);
}

void cuda_case(benchmark::State& state, collection mode) {
  if (Device::cuda_device_count() == 0) {
    state.SkipWithError("no CUDA device");
    return;
  }
  run_steps(state, Device::cuda(0), mode);
}

BENCHMARK_CAPTURE(sim_case, off, collection::off)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(sim_case, always_on, collection::always_on)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(sim_case, full_trace, collection::full_trace)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(cuda_case, off, collection::off)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(cuda_case, always_on, collection::always_on)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(cuda_case, full_trace, collection::full_trace)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
BENCHMARK_MAIN();
