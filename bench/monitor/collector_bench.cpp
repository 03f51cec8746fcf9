// Collection overhead: one multi-stream step (4 streams: an upload, two compute streams fed
// through events, a download waiting on both), timed with collection off, always-on, always-on
// with kernels only (collector_options::always_on), full tracing, step-sampled always-on (one
// step in 50, marked by collector::step()) and time-sampled always-on (1 ms every 100 ms, no
// step() calls), side by side in one process. Targets on the H200: always-on at most 1% of the
// step time, full tracing at most 5% (docs/monitor.md). The cuda cases skip without a GPU.
//
// Two kinds of step on cuda: fixed_work (the default: the compute kernels run a fixed number of
// FMAs) and timer_spin (they spin on %globaltimer, as before), to see whether collection changes
// the timer-spinning kernels themselves. The diagnostic settings of docs/monitor.md
// (STREAMSAFE_CUPTI_KINDS, ...) apply to every case; bench/monitor/overhead_matrix.sh runs them.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "demo_kernels.hpp"
#include "streamsafe/device.hpp"
#include "streamsafe/event.hpp"
#include "streamsafe/monitor/collector.hpp"
#include "streamsafe/stream.hpp"

namespace {

using namespace streamsafe;

enum class collection { off, always_on, always_on_kernels, full_trace, sampled, time_sampled };
enum class step_work { fixed_work, timer_spin };

constexpr std::size_t values = 256 * 1024;  // 1 MiB per buffer; one thread per value
constexpr unsigned spin_us = 100;           // timer_spin: each compute kernel's length
// fixed_work: FMAs per thread, for about 100 us per kernel on an H200 at 1.98 GHz. 1,024 blocks
// of 256 threads (16 registers each: all resident at once) are 8,192 warps, about 15.5 per SM
// sub-partition (132 SMs x 4). A sub-partition issues one warp instruction per clock, and 15
// warps hide the chain's ~4-cycle FMA latency, so the kernel is issue-bound: 11,000 FMAs plus
// the loop's ~3 instructions per 16 (unrolled) is 15.5 x 11,000 x 19/16 / 1.98e9 s = 102 us
// (112 us at 1.8 GHz). The collected cases report the real figure (compute_us_per_step, two
// kernels per step); STREAMSAFE_BENCH_FMA_ITERATIONS overrides the count without a rebuild.
constexpr unsigned default_fma_iterations = 11000;
// sampled: one step in this many has its ops collected.
constexpr std::size_t sample_every_steps = 50;
// time_sampled: collected for sample_window out of every sample_period of wall time. The same
// 1% duty cycle as a production choice of 10 ms every 1 s, ten times faster so that one
// repetition sees many windows: time_sampled_min_time (which overrides --benchmark_min_time)
// gives about 1.4 s per repetition once Google Benchmark has sized it, so 14 windows. Switching
// is then ten times as frequent as at 1 s, which overstates its cost, not understates it. A
// window holds about 3.5 steps of 280 us, so sampled_fraction (time) and compute_us_per_step
// are estimates; the step time is what this case measures.
constexpr auto sample_period = std::chrono::milliseconds(100);
constexpr auto sample_window = std::chrono::milliseconds(1);
constexpr double time_sampled_min_time = 1.0;

unsigned fma_iterations() {
  static const unsigned iterations = [] {
    const char* text = std::getenv("STREAMSAFE_BENCH_FMA_ITERATIONS");
    const unsigned long parsed = text != nullptr ? std::strtoul(text, nullptr, 10) : 0;
    return parsed > 0 ? static_cast<unsigned>(parsed) : default_fma_iterations;
  }();
  return iterations;
}

class pipeline_step {
 public:
  pipeline_step(const Device& device, step_work work) : device_(device), work_(work) {
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
    compute_a.wait(handoff_[0]);
    compute_a.launch(compute(buffers_[1]));
    compute_b.wait(handoff_[0]);
    compute_b.launch(compute(buffers_[2]));
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
  [[nodiscard]] kernel compute(std::uint32_t* out) const {
    return work_ == step_work::fixed_work ? demo::compute_copy_kernel(buffers_[0], out, values, fma_iterations())
                                          : demo::slow_copy_kernel(buffers_[0], out, values, spin_us);
  }

  Device device_;
  step_work work_;
  std::vector<Stream> streams_;
  std::vector<Event> handoff_;
  std::uint32_t* host_ = nullptr;
  std::uint32_t* buffers_[3] = {};
};

monitor::collector_options options_for(collection mode) {
  monitor::collector_options options;
  if (mode == collection::sampled) options.sample_every_steps = sample_every_steps;
  if (mode == collection::time_sampled) {
    options.sample_period = sample_period;
    options.sample_window = sample_window;
  }
  if (mode == collection::always_on_kernels) options.always_on = monitor::always_on_ops::kernels;
  return options;
}

/// The status message's notes (sampling, diagnostic settings), which say what was measured.
std::string notes_of(const monitor::collector& collect) {
  const auto message = collect.status_message();
  const auto at = std::min({message.find(", sampled"), message.find(", always-on"), message.find(" [diagnostic")});
  if (at == std::string::npos) return {};
  return message.substr(message.find_first_not_of(", ", at));
}

void count_collected(benchmark::State& state, monitor::collector& collect) {
  const auto usage = collect.usage();  // flushes what CUPTI still buffers
  state.counters["ops_seen"] = static_cast<double>(collect.ops_seen());
  state.counters["streams_seen"] = static_cast<double>(usage.streams.size());
  state.counters["sampled_fraction"] = usage.sampled_fraction;
  // How long the compute kernels ran per collected step, as the collector saw them (time
  // sampled: an estimate, the steps in the windows being taken as the fraction of time in them).
  const double collected_steps = static_cast<double>(state.iterations()) * usage.sampled_fraction;
  if (!usage.devices.empty() && collected_steps > 0) {
    state.counters["compute_us_per_step"] = usage.devices.front().compute_us / collected_steps;
  }
  state.SetLabel(notes_of(collect));
}

void run_steps(benchmark::State& state, const Device& device, step_work work, collection mode) {
  pipeline_step step(device, work);
  std::optional<monitor::collector> collect;
  if (mode != collection::off) {
    collect.emplace(device, options_for(mode));
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
    if (!collect) continue;
    if (mode != collection::time_sampled) collect->step();  // time sampling needs no step hook
    if (mode == collection::full_trace && ++in_window == steps_per_window) {
      state.PauseTiming();
      benchmark::DoNotOptimize(collect->stop_tracing());
      collect->start_tracing();
      in_window = 0;
      state.ResumeTiming();
    }
  }
  if (collect) count_collected(state, *collect);
}

void sim_case(benchmark::State& state, collection mode) {
  run_steps(state, Device::sim({.memory_capacity = std::size_t{64} << 20, .mode = sim_mode::threaded}),
            step_work::fixed_work, mode);
}

void cuda_case(benchmark::State& state, step_work work, collection mode) {
  if (Device::cuda_device_count() == 0) {
    state.SkipWithError("no CUDA device");
    return;
  }
  run_steps(state, Device::cuda(0), work, mode);
}

void cuda_fixed_work(benchmark::State& state, collection mode) { cuda_case(state, step_work::fixed_work, mode); }
void cuda_timer_spin(benchmark::State& state, collection mode) { cuda_case(state, step_work::timer_spin, mode); }

#define COLLECTOR_BENCH(function, mode) \
  BENCHMARK_CAPTURE(function, mode, collection::mode)->UseRealTime()->Unit(benchmark::kMicrosecond)

COLLECTOR_BENCH(sim_case, off);
COLLECTOR_BENCH(sim_case, always_on);
COLLECTOR_BENCH(sim_case, always_on_kernels);
COLLECTOR_BENCH(sim_case, full_trace);
COLLECTOR_BENCH(sim_case, sampled);
COLLECTOR_BENCH(sim_case, time_sampled)->MinTime(time_sampled_min_time);
COLLECTOR_BENCH(cuda_fixed_work, off);
COLLECTOR_BENCH(cuda_fixed_work, always_on);
COLLECTOR_BENCH(cuda_fixed_work, always_on_kernels);
COLLECTOR_BENCH(cuda_fixed_work, full_trace);
COLLECTOR_BENCH(cuda_fixed_work, sampled);
COLLECTOR_BENCH(cuda_fixed_work, time_sampled)->MinTime(time_sampled_min_time);
COLLECTOR_BENCH(cuda_timer_spin, off);
COLLECTOR_BENCH(cuda_timer_spin, always_on);
COLLECTOR_BENCH(cuda_timer_spin, full_trace);

}  // namespace
BENCHMARK_MAIN();
