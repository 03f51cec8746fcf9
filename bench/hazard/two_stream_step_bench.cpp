// The two-stream step of issue 4 (PyTorch: 47.8 us without its sanitizer, 435.8 us with it):
// a small add on stream A, an event, a wait, a multiply on stream B, an event back, then the
// host waits for the step. Run with no tracker at all and with the tracker's three policies,
// side by side in one process; on cuda (needs a GPU) and on sim.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <optional>

#include "demo_kernels.hpp"
#include "streamsafe/device.hpp"
#include "streamsafe/event.hpp"
#include "streamsafe/hazard/tracker.hpp"
#include "streamsafe/stream.hpp"

namespace {

using namespace streamsafe;

constexpr std::size_t elements = 1 << 16;  // a small step: launch-bound, as in the PyTorch figure

enum class tracking { none, off, report, enforce };

struct step_buffers {
  explicit step_buffers(Device& device)
      : device(device),
        x(static_cast<std::uint32_t*>(device.allocate(elements * 4))),
        y(static_cast<std::uint32_t*>(device.allocate(elements * 4))) {}
  ~step_buffers() {
    device.synchronize();
    device.deallocate(x);
    device.deallocate(y);
  }
  Device& device;
  std::uint32_t* x;
  std::uint32_t* y;
};

void run_steps(benchmark::State& state, Device device, tracking mode) {
  Stream a(device, {.name = "A"});
  Stream b(device, {.name = "B"});
  Event a_done(device);
  Event b_done(device);
  step_buffers buffers(device);
  const auto add = demo::fill_kernel(buffers.x, elements, 3);
  const auto multiply = demo::double_kernel(buffers.x, buffers.y, elements);
  std::optional<hazard::tracker> tracker;
  if (mode != tracking::none) {
    const auto policy = mode == tracking::off      ? hazard::policy::off
                        : mode == tracking::report ? hazard::policy::report
                                                   : hazard::policy::enforce;
    tracker.emplace(device, policy);
  }
  for (auto _ : state) {
    a.wait(b_done);
    if (tracker) {
      tracker->on(a).writes(buffers.x, elements * 4).launch(add);
    } else {
      a.launch(add);
    }
    a_done.record(a);
    b.wait(a_done);
    if (tracker) {
      tracker->on(b).reads(buffers.x, elements * 4).writes(buffers.y, elements * 4).launch(multiply);
    } else {
      b.launch(multiply);
    }
    b_done.record(b);
    b_done.synchronize();
  }
  if (!tracker) return;
  const auto found = tracker->hazards();
  const auto wrong = std::count_if(found.begin(), found.end(), [](const auto& h) { return !hazard::is_informational(h.kind); });
  if (wrong > 0) state.SkipWithError("the correct step reported hazards");
  state.counters["informational_findings"] = static_cast<double>(found.size());
}

void BM_step_sim(benchmark::State& state, tracking mode) { run_steps(state, Device::sim(), mode); }

void BM_step_cuda(benchmark::State& state, tracking mode) {
  if (Device::cuda_device_count() == 0) {
    state.SkipWithError("no CUDA device");
    return;
  }
  run_steps(state, Device::cuda(0), mode);
}

BENCHMARK_CAPTURE(BM_step_sim, untracked, tracking::none)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_step_sim, off, tracking::off)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_step_sim, report, tracking::report)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_step_sim, enforce, tracking::enforce)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_step_cuda, untracked, tracking::none)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_step_cuda, off, tracking::off)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_step_cuda, report, tracking::report)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_step_cuda, enforce, tracking::enforce)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
