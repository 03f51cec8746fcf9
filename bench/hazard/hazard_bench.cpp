// What the hazard engine costs: ns per tracked access and per sync op with 2, 4 and 16 streams,
// and the throughput of `check` over a generated op log. Target: at most 150 ns per access.
#include <benchmark/benchmark.h>

#include <array>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "streamsafe/hazard/engine.hpp"
#include "streamsafe/hazard/oplog_check.hpp"

namespace {

using namespace streamsafe::hazard;

constexpr std::uint64_t buffer_bytes = 1 << 20;

byte_range buffer_of(std::uint64_t index) { return byte_range{(index + 1) * 2 * buffer_bytes, buffer_bytes}; }

void expect_no_hazards(const engine& model, benchmark::State& state) {
  if (!model.hazards().empty()) state.SkipWithError("the benchmark program has a hazard");
}

// Each stream writes its own buffer, round robin: the common, race-free access.
void BM_TrackedAccess_OwnBuffer(benchmark::State& state) {
  const auto streams = static_cast<std::uint64_t>(state.range(0));
  engine model(policy::report);
  const op_site site{model.label("kernel", "bench.cpp:1"), 1};
  std::uint64_t i = 0;
  for (auto _ : state) {
    const std::uint64_t s = i++ % streams;
    benchmark::DoNotOptimize(model.access(stream_id{s}, {}, std::array{buffer_of(s)}, site));
  }
  expect_no_hazards(model, state);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TrackedAccess_OwnBuffer)->Arg(2)->Arg(4)->Arg(16);

// Each stream reads one shared input and writes its own output: two ranges per op, and the
// input's reads become a shared read set (the FastTrack slow case).
void BM_TrackedAccess_SharedInput(benchmark::State& state) {
  const auto streams = static_cast<std::uint64_t>(state.range(0));
  engine model(policy::report);
  const op_site site{model.label("kernel", "bench.cpp:2"), 1};
  const byte_range input{0, buffer_bytes};
  std::uint64_t i = 0;
  for (auto _ : state) {
    const std::uint64_t s = i++ % streams;
    benchmark::DoNotOptimize(model.access(stream_id{s}, std::array{input}, std::array{buffer_of(s)}, site));
  }
  expect_no_hazards(model, state);
  state.SetItemsProcessed(state.iterations() * 2);  // two tracked ranges per op
}
BENCHMARK(BM_TrackedAccess_SharedInput)->Arg(2)->Arg(4)->Arg(16);

// Pure sync ops. event_record copies the stream's clock; stream_sync joins it into the host.
void BM_SyncOp_EventRecord(benchmark::State& state) {
  const auto streams = static_cast<std::uint64_t>(state.range(0));
  engine model(policy::report);
  const op_site site{model.label("event_record", "bench.cpp:3"), 1};
  for (std::uint64_t s = 0; s < streams; ++s) (void)model.access(stream_id{s}, {}, std::array{buffer_of(s)}, site);
  std::uint64_t i = 0;
  for (auto _ : state) {
    const std::uint64_t s = i++ % streams;
    model.event_record(event_id{s}, stream_id{s}, site);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SyncOp_EventRecord)->Arg(2)->Arg(4)->Arg(16);

void BM_SyncOp_StreamSync(benchmark::State& state) {
  const auto streams = static_cast<std::uint64_t>(state.range(0));
  engine model(policy::report);
  const op_site site{model.label("stream_sync", "bench.cpp:4"), 1};
  for (std::uint64_t s = 0; s < streams; ++s) (void)model.access(stream_id{s}, {}, std::array{buffer_of(s)}, site);
  std::uint64_t i = 0;
  for (auto _ : state) model.stream_sync(stream_id{i++ % streams}, site);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SyncOp_StreamSync)->Arg(2)->Arg(4)->Arg(16);

// A ring of hand-offs: stream s writes, records an event, stream s+1 waits on it. One iteration
// is 1 access + 2 sync ops; every wait carries new information, so none is redundant.
void BM_HandOff(benchmark::State& state) {
  const auto streams = static_cast<std::uint64_t>(state.range(0));
  engine model(policy::report);
  const op_site site{model.label("op", "bench.cpp:5"), 1};
  std::uint64_t i = 0;
  for (auto _ : state) {
    const std::uint64_t s = i++ % streams;
    (void)model.access(stream_id{s}, {}, std::array{buffer_of(s)}, site);
    model.event_record(event_id{s}, stream_id{s}, site);
    model.stream_wait_event(stream_id{(s + 1) % streams}, event_id{s}, site);
  }
  expect_no_hazards(model, state);
  state.SetItemsProcessed(state.iterations() * 3);
}
BENCHMARK(BM_HandOff)->Arg(2)->Arg(4)->Arg(16);

// A copy -> compute -> download pipeline over 4 streams, with allocations, record_stream and frees.
std::string generate_log(std::uint64_t steps) {
  std::string log = "{\"streamsafe_oplog\":1}\n";
  for (std::uint64_t step = 0; step < steps; ++step) {
    const std::uint64_t in = 4096 + (step % 8) * 8192;
    const std::uint64_t out = in + 4096;
    const std::string e = std::to_string(step % 64);
    const std::string i = std::to_string(in);
    const std::string o = std::to_string(out);
    log += "{\"op\":\"alloc\",\"ptr\":" + i + ",\"size\":4096,\"stream\":1,\"loc\":\"gen.cpp:1\"}\n";
    log += "{\"op\":\"copy\",\"stream\":1,\"name\":\"upload\",\"src\":[1048576,4096],\"dst\":[" + i + ",4096],\"loc\":\"gen.cpp:2\"}\n";
    log += "{\"op\":\"event_record\",\"event\":" + e + ",\"stream\":1}\n";
    log += "{\"op\":\"stream_wait_event\",\"stream\":2,\"event\":" + e + "}\n";
    log += "{\"op\":\"alloc\",\"ptr\":" + o + ",\"size\":4096,\"stream\":2}\n";
    log += "{\"op\":\"kernel\",\"stream\":2,\"name\":\"compute\",\"reads\":[[" + i + ",4096]],\"writes\":[[" + o + ",4096]],\"loc\":\"gen.cpp:3\"}\n";
    log += "{\"op\":\"record_stream\",\"ptr\":" + i + ",\"stream\":2}\n";
    log += "{\"op\":\"free\",\"ptr\":" + i + "}\n";
    log += "{\"op\":\"copy\",\"stream\":2,\"name\":\"download\",\"src\":[" + o + ",4096],\"dst\":[2097152,4096]}\n";
    log += "{\"op\":\"stream_sync\",\"stream\":2}\n";
    log += "{\"op\":\"host_read\",\"ranges\":[[2097152,4096]]}\n";
    log += "{\"op\":\"free\",\"ptr\":" + o + "}\n";
  }
  return log;
}

void BM_CheckThroughput(benchmark::State& state) {
  const std::string log = generate_log(static_cast<std::uint64_t>(state.range(0)));
  std::uint64_t ops = 0;
  for (auto _ : state) {
    std::istringstream in(log);
    check_options options;
    options.on_hazard = [](const hazard&) { throw std::logic_error("the generated log has a hazard"); };
    ops = check_oplog(in, options).ops;
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(ops));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(log.size()));
  state.counters["ops"] = static_cast<double>(ops);
}
BENCHMARK(BM_CheckThroughput)->Arg(100000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
