// Runtime primitives, streamsafe's wrappers side by side with the raw CUDA calls in one run:
// event record, query, stream wait, and pooled events against create+record+destroy.
// The CUDA cases need a GPU; the sim cases run anywhere (and measure the sim backend only).
#include <benchmark/benchmark.h>

#include "streamsafe/config.hpp"
#include "streamsafe/device.hpp"
#include "streamsafe/event.hpp"
#include "streamsafe/event_pool.hpp"
#include "streamsafe/stream.hpp"

#if STREAMSAFE_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace {

using namespace streamsafe;

bool have_gpu(benchmark::State& state) {
  if (Device::cuda_device_count() > 0) return true;
  state.SkipWithError("no CUDA device");
  return false;
}

Device bench_device(backend_kind kind) { return kind == backend_kind::cuda ? Device::cuda(0) : Device::sim(); }

template <backend_kind Kind>
void BM_streamsafe_event_record(benchmark::State& state) {
  if (Kind == backend_kind::cuda && !have_gpu(state)) return;
  Device device = bench_device(Kind);
  Stream stream(device);
  Event event(device);
  for (auto _ : state) event.record(stream);
  stream.synchronize();
}

template <backend_kind Kind>
void BM_streamsafe_event_query(benchmark::State& state) {
  if (Kind == backend_kind::cuda && !have_gpu(state)) return;
  Device device = bench_device(Kind);
  Stream stream(device);
  Event event(device);
  event.record(stream);
  event.synchronize();
  for (auto _ : state) benchmark::DoNotOptimize(event.query());
}

template <backend_kind Kind>
void BM_streamsafe_stream_query(benchmark::State& state) {
  if (Kind == backend_kind::cuda && !have_gpu(state)) return;
  Device device = bench_device(Kind);
  Stream stream(device);
  stream.synchronize();
  for (auto _ : state) benchmark::DoNotOptimize(stream.query());
}

template <backend_kind Kind>
void BM_streamsafe_stream_wait(benchmark::State& state) {
  if (Kind == backend_kind::cuda && !have_gpu(state)) return;
  Device device = bench_device(Kind);
  Stream producer(device);
  Stream consumer(device);
  Event event(device);
  event.record(producer);
  std::int64_t since_sync = 0;
  for (auto _ : state) {
    consumer.wait(event);
    if (++since_sync == 4096) {  // keep the sim queue (and CUDA's) from growing without bound
      state.PauseTiming();
      consumer.synchronize();
      since_sync = 0;
      state.ResumeTiming();
    }
  }
  consumer.synchronize();
}

template <backend_kind Kind>
void BM_streamsafe_pool_acquire_record_release(benchmark::State& state) {
  if (Kind == backend_kind::cuda && !have_gpu(state)) return;
  Device device = bench_device(Kind);
  Stream stream(device);
  EventPool pool(device);
  for (auto _ : state) {
    auto event = pool.acquire();
    event.record(stream);
  }
  stream.synchronize();
}

template <backend_kind Kind>
void BM_streamsafe_event_create_record_destroy(benchmark::State& state) {
  if (Kind == backend_kind::cuda && !have_gpu(state)) return;
  Device device = bench_device(Kind);
  Stream stream(device);
  for (auto _ : state) {
    Event event(device);
    event.record(stream);
  }
  stream.synchronize();
}

BENCHMARK(BM_streamsafe_event_record<backend_kind::sim>)->Name("sim/event_record");
BENCHMARK(BM_streamsafe_event_query<backend_kind::sim>)->Name("sim/event_query");
BENCHMARK(BM_streamsafe_stream_query<backend_kind::sim>)->Name("sim/stream_query");
BENCHMARK(BM_streamsafe_stream_wait<backend_kind::sim>)->Name("sim/stream_wait");
BENCHMARK(BM_streamsafe_pool_acquire_record_release<backend_kind::sim>)->Name("sim/pool_acquire_record_release");
BENCHMARK(BM_streamsafe_event_create_record_destroy<backend_kind::sim>)->Name("sim/event_create_record_destroy");

#if STREAMSAFE_HAVE_CUDA

BENCHMARK(BM_streamsafe_event_record<backend_kind::cuda>)->Name("cuda/streamsafe/event_record");
BENCHMARK(BM_streamsafe_event_query<backend_kind::cuda>)->Name("cuda/streamsafe/event_query");
BENCHMARK(BM_streamsafe_stream_wait<backend_kind::cuda>)->Name("cuda/streamsafe/stream_wait");
BENCHMARK(BM_streamsafe_pool_acquire_record_release<backend_kind::cuda>)
    ->Name("cuda/streamsafe/pool_acquire_record_release");
BENCHMARK(BM_streamsafe_event_create_record_destroy<backend_kind::cuda>)
    ->Name("cuda/streamsafe/event_create_record_destroy");

void BM_raw_event_record(benchmark::State& state) {
  if (!have_gpu(state)) return;
  cudaStream_t stream;
  cudaEvent_t event;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
  for (auto _ : state) cudaEventRecord(event, stream);
  cudaStreamSynchronize(stream);
  cudaEventDestroy(event);
  cudaStreamDestroy(stream);
}
BENCHMARK(BM_raw_event_record)->Name("cuda/raw/event_record");

// The same with the stream created as streamsafe creates it (with a priority), to separate the
// cost of the wrapper from that of the stream's kind.
void BM_raw_event_record_priority_stream(benchmark::State& state) {
  if (!have_gpu(state)) return;
  cudaStream_t stream;
  cudaEvent_t event;
  cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, 0);
  cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
  for (auto _ : state) cudaEventRecord(event, stream);
  cudaStreamSynchronize(stream);
  cudaEventDestroy(event);
  cudaStreamDestroy(stream);
}
BENCHMARK(BM_raw_event_record_priority_stream)->Name("cuda/raw/event_record_priority_stream");

void BM_raw_event_query(benchmark::State& state) {
  if (!have_gpu(state)) return;
  cudaStream_t stream;
  cudaEvent_t event;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
  cudaEventRecord(event, stream);
  cudaEventSynchronize(event);
  for (auto _ : state) benchmark::DoNotOptimize(cudaEventQuery(event));
  cudaEventDestroy(event);
  cudaStreamDestroy(stream);
}
BENCHMARK(BM_raw_event_query)->Name("cuda/raw/event_query");

void BM_raw_stream_wait(benchmark::State& state) {
  if (!have_gpu(state)) return;
  cudaStream_t producer, consumer;
  cudaEvent_t event;
  cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking);
  cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
  cudaEventRecord(event, producer);
  std::int64_t since_sync = 0;
  for (auto _ : state) {
    cudaStreamWaitEvent(consumer, event, 0);
    if (++since_sync == 4096) {
      state.PauseTiming();
      cudaStreamSynchronize(consumer);
      since_sync = 0;
      state.ResumeTiming();
    }
  }
  cudaStreamSynchronize(consumer);
  cudaEventDestroy(event);
  cudaStreamDestroy(producer);
  cudaStreamDestroy(consumer);
}
BENCHMARK(BM_raw_stream_wait)->Name("cuda/raw/stream_wait");

void BM_raw_event_create_record_destroy(benchmark::State& state) {
  if (!have_gpu(state)) return;
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  for (auto _ : state) {
    cudaEvent_t event;
    cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
    cudaEventRecord(event, stream);
    cudaEventDestroy(event);
  }
  cudaStreamSynchronize(stream);
  cudaStreamDestroy(stream);
}
BENCHMARK(BM_raw_event_create_record_destroy)->Name("cuda/raw/event_create_record_destroy");

#endif

}  // namespace

BENCHMARK_MAIN();
