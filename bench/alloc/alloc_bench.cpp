// Host cost of allocation, side by side: streamsafe's caching allocator (sim and cuda),
// cudaMalloc/cudaFree, cudaMallocAsync/cudaFreeAsync, and PyTorch's c10 caching allocator.
// Run: alloc_bench [--benchmark_filter=...] [--benchmark_format=json]
#include <benchmark/benchmark.h>

#include <array>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <vector>

#include "bench_resource.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/device.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::bench {

namespace {

class streamsafe_resource final : public bench_resource {
 public:
  explicit streamsafe_resource(Device device) : device_(std::move(device)) {
    for (int i = 0; i < bench_streams; ++i) streams_.emplace_back(device_);
    allocator_.emplace(device_, alloc_options_from_env());
  }
  ~streamsafe_resource() override { allocator_.reset(); }
  void* allocate(std::size_t bytes, int stream) override { return allocator_->allocate(bytes, streams_[stream]); }
  void deallocate(void* ptr) override { allocator_->deallocate(ptr); }
  bool alloc_record_free(std::size_t bytes, int stream, int other) override {
    void* p = allocator_->allocate(bytes, streams_[stream]);
    allocator_->record_stream(p, streams_[other]);
    allocator_->deallocate(p);
    return true;
  }
  // As with PyTorch's allocator, pending frees are polled inside later allocations.
  void reclaim() override {}
  double free_fences() const override { return static_cast<double>(allocator_->stats().num_free_fences); }

 private:
  Device device_;
  std::vector<Stream> streams_;
  std::optional<caching_allocator> allocator_;  // destroyed before the streams
};

std::unique_ptr<bench_resource> make(resource_kind kind, std::string& why) {
  switch (kind) {
    case resource_kind::streamsafe_sim:
      return std::make_unique<streamsafe_resource>(Device::sim(sim_options{.memory_capacity = std::size_t{8} << 30}));
    case resource_kind::streamsafe_cuda:
      if (Device::cuda_device_count() == 0) {
        why = "no CUDA device";
        return nullptr;
      }
      return std::make_unique<streamsafe_resource>(Device::cuda(0));
    case resource_kind::cuda_malloc: return make_cuda_malloc(why);
    case resource_kind::cuda_malloc_async: return make_cuda_malloc_async(why);
    case resource_kind::torch_caching: return make_torch_caching(why);
  }
  return nullptr;
}

}  // namespace

bench_resource* shared_resource(resource_kind kind, std::string& why) {
  static std::mutex mutex;
  static std::map<resource_kind, std::pair<std::unique_ptr<bench_resource>, std::string>> made;
  std::lock_guard lock(mutex);
  auto it = made.find(kind);
  if (it == made.end()) {
    std::string reason;
    auto resource = make(kind, reason);
    it = made.emplace(kind, std::make_pair(std::move(resource), reason)).first;
  }
  why = it->second.second;
  return it->second.first.get();
}

namespace {

/// The resource for `state`, or nullptr after marking the case skipped.
bench_resource* resource_or_skip(benchmark::State& state, resource_kind kind) {
  std::string why;
  bench_resource* resource = shared_resource(kind, why);
  if (resource == nullptr) state.SkipWithError(why.c_str());
  return resource;
}

void alloc_free(benchmark::State& state, resource_kind kind) {
  bench_resource* r = resource_or_skip(state, kind);
  if (r == nullptr) return;
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const int stream = state.thread_index() % bench_streams;
  for (auto _ : state) {
    void* p = r->allocate(bytes, stream);
    benchmark::DoNotOptimize(p);
    r->deallocate(p);
  }
  state.SetItemsProcessed(state.iterations());
}

void live64_then_free(benchmark::State& state, resource_kind kind) {
  bench_resource* r = resource_or_skip(state, kind);
  if (r == nullptr) return;
  std::array<void*, 64> live{};
  for (auto _ : state) {
    for (void*& p : live) p = r->allocate(256 << 10, 0);
    for (void* p : live) r->deallocate(p);
  }
  state.SetItemsProcessed(state.iterations() * 64);  // items: alloc+free pairs
}

void record_stream_reclaim(benchmark::State& state, resource_kind kind) {
  bench_resource* r = resource_or_skip(state, kind);
  if (r == nullptr) return;
  const double fences_before = r->free_fences();
  for (auto _ : state) {
    if (!r->alloc_record_free(1 << 20, 0, bench_streams - 1)) {
      state.SkipWithError("no record_stream");
      return;
    }
    r->reclaim();
  }
  state.SetItemsProcessed(state.iterations());
  if (fences_before >= 0) {
    state.counters["events_per_buffer"] = (r->free_fences() - fences_before) / static_cast<double>(state.iterations());
  }
}

/// alloc+free pairs of mixed sizes with `range(0)` other blocks live: the cost must not grow
/// with the number of blocks (no linear scan).
void pairs_with_live_blocks(benchmark::State& state, resource_kind kind) {
  bench_resource* r = resource_or_skip(state, kind);
  if (r == nullptr) return;
  std::mt19937_64 rng(7);
  auto mixed_size = [&rng] { return std::size_t{512} << (rng() % 8); };  // 512 B .. 64 KiB
  std::vector<void*> background(static_cast<std::size_t>(state.range(0)));
  for (void*& p : background) p = r->allocate(mixed_size(), 0);
  for (std::size_t i = 0; i < background.size(); i += 2) {  // free every other one: many free blocks
    r->deallocate(background[i]);
    background[i] = nullptr;
  }
  std::array<std::size_t, 64> sizes{};
  for (auto& s : sizes) s = mixed_size();
  std::size_t next = 0;
  for (auto _ : state) {
    void* p = r->allocate(sizes[next++ % sizes.size()], 0);
    benchmark::DoNotOptimize(p);
    r->deallocate(p);
  }
  for (void* p : background) {
    if (p != nullptr) r->deallocate(p);
  }
  state.SetItemsProcessed(state.iterations());
}

constexpr std::array<std::pair<const char*, resource_kind>, 5> kinds{{
    {"streamsafe_sim", resource_kind::streamsafe_sim},
    {"streamsafe_cuda", resource_kind::streamsafe_cuda},
    {"cudaMalloc", resource_kind::cuda_malloc},
    {"cudaMallocAsync", resource_kind::cuda_malloc_async},
    {"torch_c10", resource_kind::torch_caching},
}};

void register_cases() {
  for (const auto& [name, kind] : kinds) {
    const std::string prefix(name);
    benchmark::RegisterBenchmark((prefix + "/alloc_free").c_str(), alloc_free, kind)
        ->Arg(512)->Arg(64 << 10)->Arg(2 << 20)->Arg(64 << 20);
    benchmark::RegisterBenchmark((prefix + "/live64_then_free").c_str(), live64_then_free, kind);
    benchmark::RegisterBenchmark((prefix + "/record_stream_reclaim").c_str(), record_stream_reclaim, kind);
    benchmark::RegisterBenchmark((prefix + "/pairs_with_live_blocks").c_str(), pairs_with_live_blocks, kind)
        ->Arg(64)->Arg(100'000);
    benchmark::RegisterBenchmark((prefix + "/threads_on_own_streams").c_str(), alloc_free, kind)
        ->Arg(64 << 10)->Threads(1)->Threads(8)->UseRealTime();
  }
}

}  // namespace

}  // namespace streamsafe::bench

int main(int argc, char** argv) {
  streamsafe::bench::register_cases();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
