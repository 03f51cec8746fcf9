// The two-stream step of issue 4 (PyTorch: 47.8 us without its sanitizer, 435.8 us with it):
// a small add on stream A, an event, a wait, a multiply on stream B, an event back, then the
// host waits for the step. Run with no tracker at all and with the tracker's three policies,
// side by side in one process; on cuda (needs a GPU) and on sim.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
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

hazard::policy policy_of(tracking mode) {
  return mode == tracking::off      ? hazard::policy::off
         : mode == tracking::report ? hazard::policy::report
                                    : hazard::policy::enforce;
}

/// The streams, events, buffers and kernels of the step, made once per benchmark run.
struct step_setup {
  explicit step_setup(Device& device)
      : a(device, {.name = "A"}),
        b(device, {.name = "B"}),
        a_done(device),
        b_done(device),
        buffers(device),
        add(demo::fill_kernel(buffers.x, elements, 3)),
        multiply(demo::double_kernel(buffers.x, buffers.y, elements)) {}
  Stream a;
  Stream b;
  Event a_done;
  Event b_done;
  step_buffers buffers;
  kernel add;
  kernel multiply;

  /// One step; with a tracker, the two launches are tracked accesses.
  void run(hazard::tracker* tracker) {
    a.wait(b_done);
    if (tracker != nullptr) {
      tracker->on(a).writes(buffers.x, elements * 4).launch(add);
    } else {
      a.launch(add);
    }
    a_done.record(a);
    b.wait(a_done);
    if (tracker != nullptr) {
      tracker->on(b).reads(buffers.x, elements * 4).writes(buffers.y, elements * 4).launch(multiply);
    } else {
      b.launch(multiply);
    }
    b_done.record(b);
    b_done.synchronize();
  }
};

/// Fails the run if a correct step was reported, and counts the informational findings.
void check_findings(benchmark::State& state, const hazard::tracker& tracker) {
  const auto found = tracker.hazards();
  const auto wrong = std::count_if(found.begin(), found.end(), [](const auto& h) { return !hazard::is_informational(h.kind); });
  if (wrong > 0) state.SkipWithError("the correct step reported hazards");
  state.counters["informational_findings"] = static_cast<double>(found.size());
}

void run_steps(benchmark::State& state, Device device, tracking mode) {
  step_setup step(device);
  std::optional<hazard::tracker> tracker;
  if (mode != tracking::none) tracker.emplace(device, policy_of(mode));
  for (auto _ : state) step.run(tracker ? &*tracker : nullptr);
  if (tracker) check_findings(state, *tracker);
}

/// Paired: each iteration runs a block of steps untracked and a block under a fresh tracker,
/// in alternating order, so slow drifts of the host (clocks, other tenants) hit both alike. The
/// time reported is a tracked block's (steps_per_block steps); `tracked_over_untracked` is this repetition's ratio of
/// the two blocks' total times, the figure whose spread across repetitions says whether the
/// tracker's cost stands out of the noise.
void run_paired(benchmark::State& state, Device device, tracking mode) {
  constexpr int steps_per_block = 100;
  step_setup step(device);
  using clock = std::chrono::steady_clock;
  clock::duration untracked{};
  clock::duration tracked{};
  const auto block = [&](hazard::tracker* tracker) {
    const auto begin = clock::now();
    for (int i = 0; i < steps_per_block; ++i) step.run(tracker);
    return clock::now() - begin;
  };
  bool untracked_first = true;
  for (auto _ : state) {
    hazard::tracker tracker(device, policy_of(mode));
    const auto first = block(untracked_first ? nullptr : &tracker);
    const auto second = block(untracked_first ? &tracker : nullptr);
    untracked += untracked_first ? first : second;
    const auto tracked_now = untracked_first ? second : first;
    tracked += tracked_now;
    state.SetIterationTime(std::chrono::duration<double>(tracked_now).count());
    check_findings(state, tracker);
    untracked_first = !untracked_first;
  }
  const auto per_step_us = [&](clock::duration total) {
    return std::chrono::duration<double, std::micro>(total).count() / (steps_per_block * static_cast<double>(state.iterations()));
  };
  state.counters["untracked_us"] = per_step_us(untracked);
  state.counters["tracked_us"] = per_step_us(tracked);
  state.counters["tracked_over_untracked"] = std::chrono::duration<double>(tracked).count() /
                                             std::chrono::duration<double>(untracked).count();
}

using step_runner = void (*)(benchmark::State&, Device, tracking);

/// On the first GPU, or skipped where there is none.
void on_cuda(benchmark::State& state, step_runner run, tracking mode) {
  if (Device::cuda_device_count() == 0) {
    state.SkipWithError("no CUDA device");
    return;
  }
  run(state, Device::cuda(0), mode);
}

void BM_step_sim(benchmark::State& state, tracking mode) { run_steps(state, Device::sim(), mode); }
void BM_step_cuda(benchmark::State& state, tracking mode) { on_cuda(state, run_steps, mode); }
void BM_paired_sim(benchmark::State& state, tracking mode) { run_paired(state, Device::sim(), mode); }
void BM_paired_cuda(benchmark::State& state, tracking mode) { on_cuda(state, run_paired, mode); }

BENCHMARK_CAPTURE(BM_step_sim, untracked, tracking::none)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_step_sim, off, tracking::off)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_step_sim, report, tracking::report)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_step_sim, enforce, tracking::enforce)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_step_cuda, untracked, tracking::none)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_step_cuda, off, tracking::off)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_step_cuda, report, tracking::report)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_step_cuda, enforce, tracking::enforce)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_paired_sim, report, tracking::report)->Unit(benchmark::kMicrosecond)->UseManualTime();
BENCHMARK_CAPTURE(BM_paired_cuda, off, tracking::off)->Unit(benchmark::kMicrosecond)->UseManualTime();
BENCHMARK_CAPTURE(BM_paired_cuda, report, tracking::report)->Unit(benchmark::kMicrosecond)->UseManualTime();
BENCHMARK_CAPTURE(BM_paired_cuda, enforce, tracking::enforce)->Unit(benchmark::kMicrosecond)->UseManualTime();

}  // namespace

BENCHMARK_MAIN();
