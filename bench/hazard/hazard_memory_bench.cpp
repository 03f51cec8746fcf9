// Whether the engine's memory stays flat on a long run: 10M events recorded, waited on and
// destroyed; 1M short-lived streams; one bug repeated 1M times. Each benchmark reports the
// process's resident set (RSS) before its loop, a tenth of the way in, and at the end, plus the
// engine's own sizes. Run each alone (--benchmark_filter) so no other benchmark's heap shows.
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <array>
#include <cstdint>
#include <fstream>

#include "streamsafe/hazard/engine.hpp"

namespace {

using namespace streamsafe::hazard;

double rss_mib() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t pages = 0;
  std::uint64_t resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

/// RSS at the start, after a tenth of the iterations, and at the end, as counters.
class rss_probe {
 public:
  explicit rss_probe(benchmark::State& state) : state_(state), start_(rss_mib()) {}
  void tick(std::uint64_t i) {
    if (i == static_cast<std::uint64_t>(state_.max_iterations) / 10) tenth_ = rss_mib();
  }
  void finish() {
    state_.counters["rss_start_MiB"] = start_;
    state_.counters["rss_tenth_MiB"] = tenth_;
    state_.counters["rss_end_MiB"] = rss_mib();
  }

 private:
  benchmark::State& state_;
  double start_;
  double tenth_ = 0;
};

byte_range bytes_of(std::uint64_t index) { return byte_range{4096 * (index + 1), 1024}; }

/// Runs step(model, site, i) for each iteration i on a fresh engine under an RSS probe, then
/// reports the engine's sizes: what is still tracked at the end.
template <typename Step>
void measure(benchmark::State& state, Step&& step) {
  engine model(policy::report);
  const op_site site{model.label("op", "bench.cpp:1"), 1};
  rss_probe probe(state);
  std::uint64_t i = 0;
  for (auto _ : state) {
    probe.tick(i);
    step(model, site, i++);
  }
  probe.finish();
  state.counters["hazards"] = static_cast<double>(model.hazards().size());
  state.counters["count"] = model.hazards().empty() ? 0.0 : static_cast<double>(model.hazards()[0].count);
  state.counters["events_tracked"] = static_cast<double>(model.events_tracked());
  state.counters["stream_slots"] = static_cast<double>(model.stream_slots());
}

// Events live for one hand-off: recorded on a producer, waited on by a consumer, destroyed.
void BM_Memory_Events(benchmark::State& state) {
  measure(state, [&](engine& model, op_site site, std::uint64_t i) {
    (void)model.access(stream_id{i % 4}, {}, std::array{bytes_of(i % 4)}, site);
    model.event_record(event_id{i}, stream_id{i % 4}, site);
    model.stream_wait_event(stream_id{(i + 1) % 4}, event_id{i}, site);
    if (state.range(0) == 1) model.event_destroy(event_id{i}, site);
  });
}
// Arg 1: events destroyed. Arg 0, the control: never destroyed, so memory must grow.
BENCHMARK(BM_Memory_Events)->Arg(1)->Iterations(10'000'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Memory_Events)->Arg(0)->Iterations(1'000'000)->Unit(benchmark::kMillisecond);

// Each stream lives for one op: it writes one of 4 buffers, the host syncs it, it is destroyed.
void BM_Memory_ShortLivedStreams(benchmark::State& state) {
  measure(state, [&](engine& model, op_site site, std::uint64_t i) {
    (void)model.access(stream_id{1000 + i}, {}, std::array{bytes_of(i % 4)}, site);
    model.stream_sync(stream_id{1000 + i}, site);
    if (state.range(0) == 1) model.stream_destroy(stream_id{1000 + i}, site);
  });
}
// Arg 1: streams destroyed. Arg 0, the control: never destroyed, so every clock grows.
BENCHMARK(BM_Memory_ShortLivedStreams)->Arg(1)->Iterations(1'000'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Memory_ShortLivedStreams)->Arg(0)->Iterations(5'000)->Unit(benchmark::kMillisecond);

// The same missing wait every iteration, collected (no sink): one hazard with its count.
void BM_Memory_RepeatedBug(benchmark::State& state) {
  measure(state, [](engine& model, op_site fill, std::uint64_t) {
    const op_site consume{model.label("consume", "bench.cpp:2"), 2};
    (void)model.access(stream_id{1}, {}, std::array{bytes_of(0)}, fill);
    (void)model.access(stream_id{2}, std::array{bytes_of(0)}, {}, consume);
    model.device_sync(fill);
  });
}
BENCHMARK(BM_Memory_RepeatedBug)->Iterations(1'000'000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
