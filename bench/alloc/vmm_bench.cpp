// What the virtual-memory calls behind expandable segments cost, per 2 MiB chunk:
// creating and releasing physical memory, mapping and unmapping it, and granting access, on the
// cuda backend (cuMemCreate, cuMemMap, cuMemSetAccess, cuMemUnmap, cuMemRelease) and on sim
// (memfd pages, mmap). The growth paths of bench/results/alloc_replay.md are made of these.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "alloc/memory_source.hpp"
#include "streamsafe/device.hpp"

namespace {

using namespace streamsafe;
using detail::memory_source;
using detail::physical_handle;

constexpr std::size_t chunk = std::size_t{2} << 20;

std::optional<Device> device_for(bool cuda) {
  if (!cuda) return Device::sim();
  if (Device::cuda_device_count() == 0) return std::nullopt;
  return Device::cuda(0);
}

/// The source of the case's backend, or a skip naming why there is none.
std::unique_ptr<memory_source> source_for(benchmark::State& state, std::optional<Device>& device) {
  device = device_for(state.range(0) != 0);
  if (!device) {
    state.SkipWithError("no CUDA device");
    return nullptr;
  }
  auto source = detail::make_memory_source(*device);
  if (!source->supports_mapping()) {
    state.SkipWithError("the driver has no virtual memory management");
    return nullptr;
  }
  return source;
}

void create_release(benchmark::State& state) {
  std::optional<Device> device;
  auto source = source_for(state, device);
  if (!source) return;
  for (auto _ : state) source->release_physical(source->create_physical(chunk), chunk);
}

/// Maps `chunks` chunks of one physical chunk side by side (aliases),
/// grants access once over them, and unmaps them: the cost of one window of that many chunks.
void map_window(benchmark::State& state) {
  std::optional<Device> device;
  auto source = source_for(state, device);
  if (!source) return;
  const auto chunks = static_cast<std::size_t>(state.range(1));
  const physical_handle physical = source->create_physical(chunk);
  const std::uintptr_t range = source->reserve(chunks * chunk);
  for (auto _ : state) {
    for (std::size_t i = 0; i < chunks; ++i) source->map_physical(range + i * chunk, physical, chunk);
    source->grant_access(range, chunks * chunk);
    for (std::size_t i = 0; i < chunks; ++i) source->unmap_physical(range + i * chunk, chunk);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * chunks));
  source->free_range(range, chunks * chunk);
  source->release_physical(physical, chunk);
}

/// As map_window, without the access grant: what the grant of a fresh mapping adds.
void map_window_without_access(benchmark::State& state) {
  std::optional<Device> device;
  auto source = source_for(state, device);
  if (!source) return;
  const auto chunks = static_cast<std::size_t>(state.range(1));
  const physical_handle physical = source->create_physical(chunk);
  const std::uintptr_t range = source->reserve(chunks * chunk);
  for (auto _ : state) {
    for (std::size_t i = 0; i < chunks; ++i) source->map_physical(range + i * chunk, physical, chunk);
    for (std::size_t i = 0; i < chunks; ++i) source->unmap_physical(range + i * chunk, chunk);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * chunks));
  source->free_range(range, chunks * chunk);
  source->release_physical(physical, chunk);
}

/// Which half costs: mapping with access (`timed_half` 0) or unmapping it (1), the other half
/// outside the timing.
void map_or_unmap_alone(benchmark::State& state) {
  std::optional<Device> device;
  auto source = source_for(state, device);
  if (!source) return;
  const bool time_unmap = state.range(1) != 0;
  const physical_handle physical = source->create_physical(chunk);
  const std::uintptr_t range = source->reserve(chunk);
  for (auto _ : state) {
    if (time_unmap) state.PauseTiming();
    source->map_physical(range, physical, chunk);
    source->grant_access(range, chunk);
    if (time_unmap) {
      state.ResumeTiming();
    } else {
      state.PauseTiming();
    }
    source->unmap_physical(range, chunk);
    if (!time_unmap) state.ResumeTiming();
  }
  source->free_range(range, chunk);
  source->release_physical(physical, chunk);
}

/// The access grant alone, again, on a chunk that stays mapped.
void grant_access(benchmark::State& state) {
  std::optional<Device> device;
  auto source = source_for(state, device);
  if (!source) return;
  const physical_handle physical = source->create_physical(chunk);
  const std::uintptr_t range = source->reserve(chunk);
  source->map_physical(range, physical, chunk);
  for (auto _ : state) source->grant_access(range, chunk);
  source->unmap_physical(range, chunk);
  source->free_range(range, chunk);
  source->release_physical(physical, chunk);
}

// range(0): 0 sim, 1 cuda.
BENCHMARK(create_release)->ArgName("cuda")->Arg(0)->Arg(1);
BENCHMARK(map_window)->ArgNames({"cuda", "chunks"})->ArgsProduct({{0, 1}, {1, 8, 64}});
BENCHMARK(map_window_without_access)->ArgNames({"cuda", "chunks"})->ArgsProduct({{0, 1}, {1, 8}});
BENCHMARK(map_or_unmap_alone)->ArgNames({"cuda", "timed_half"})->ArgsProduct({{0, 1}, {0, 1}});
BENCHMARK(grant_access)->ArgName("cuda")->Arg(0)->Arg(1);

}  // namespace

BENCHMARK_MAIN();
