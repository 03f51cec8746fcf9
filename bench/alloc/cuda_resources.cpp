// cudaMalloc/cudaFree and cudaMallocAsync/cudaFreeAsync (pool release threshold at maximum), for
// the micro benchmark and, as a replay_target, for the replay benchmark.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench_resource.hpp"
#include "replay_resource.hpp"
#include "streamsafe/error.hpp"

namespace streamsafe::bench {

namespace {

bool have_gpu(std::string& why) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    why = "no CUDA device";
    return false;
  }
  return true;
}

class cuda_malloc_resource final : public bench_resource {
 public:
  void* allocate(std::size_t bytes, int) override {
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) throw std::bad_alloc();
    return p;
  }
  void deallocate(void* ptr) override { cudaFree(ptr); }
  bool alloc_record_free(std::size_t, int, int) override { return false; }
  void reclaim() override {}
};

class cuda_malloc_async_resource final : public bench_resource {
 public:
  cuda_malloc_async_resource() {
    cudaMemPool_t pool = nullptr;
    cudaDeviceGetDefaultMemPool(&pool, 0);
    std::uint64_t threshold = UINT64_MAX;
    cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);
    streams_.resize(bench_streams);
    for (auto& s : streams_) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  }
  void* allocate(std::size_t bytes, int stream) override {
    void* p = nullptr;
    if (cudaMallocAsync(&p, bytes, streams_[static_cast<std::size_t>(stream)]) != cudaSuccess) throw std::bad_alloc();
    // cudaFreeAsync takes the stream again; these cases free on the allocating stream.
    last_stream_ = streams_[static_cast<std::size_t>(stream)];
    return p;
  }
  void deallocate(void* ptr) override { cudaFreeAsync(ptr, last_stream_); }
  bool alloc_record_free(std::size_t, int, int) override { return false; }
  void reclaim() override {}

 private:
  std::vector<cudaStream_t> streams_;
  static thread_local cudaStream_t last_stream_;
};

thread_local cudaStream_t cuda_malloc_async_resource::last_stream_ = nullptr;

void check(cudaError_t status, const std::string& call) {
  if (status != cudaSuccess) throw cuda_error(call + ": " + cudaGetErrorString(status), static_cast<int>(status));
}

std::string describe(const void* ptr, cudaStream_t stream) {
  return "(ptr " + std::to_string(reinterpret_cast<std::uintptr_t>(ptr)) + ", stream " +
         std::to_string(reinterpret_cast<std::uintptr_t>(stream)) + ")";
}

class cuda_async_replay_target final : public replay_target {
 public:
  cuda_async_replay_target() {
    check(cudaDeviceGetDefaultMemPool(&pool_, 0), "cudaDeviceGetDefaultMemPool");
    std::uint64_t threshold = UINT64_MAX;
    check(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold),
          "cudaMemPoolSetAttribute(ReleaseThreshold)");
  }
  cuda_async_replay_target(const cuda_async_replay_target&) = delete;
  cuda_async_replay_target& operator=(const cuda_async_replay_target&) = delete;
  // Cold for the next run in this process: the frees must have run before the pool trims.
  ~cuda_async_replay_target() override {
    cudaDeviceSynchronize();
    cudaMemPoolTrimTo(pool_, 0);
    for (const auto& [stream, event] : events_) cudaEventDestroy(event);
  }

  void* allocate(std::size_t bytes, StreamRef stream) override {
    void* ptr = nullptr;
    check(cudaMallocAsync(&ptr, bytes, stream.native()),
          "cudaMallocAsync(" + std::to_string(bytes) + " bytes) " + describe(nullptr, stream.native()));
    blocks_.emplace(ptr, block{.stream = stream.native(), .users = {}});
    return ptr;
  }
  void deallocate(void* ptr) override {
    const auto it = blocks_.find(ptr);
    if (it == blocks_.end()) throw usage_error("cudaFreeAsync of a block not allocated here " + describe(ptr, nullptr));
    const block& b = it->second;
    for (cudaStream_t user : b.users) {
      const cudaEvent_t event = event_of(user);
      check(cudaEventRecord(event, user), "cudaEventRecord before a free " + describe(ptr, user));
      check(cudaStreamWaitEvent(b.stream, event, 0), "cudaStreamWaitEvent before a free " + describe(ptr, b.stream));
    }
    check(cudaFreeAsync(ptr, b.stream), "cudaFreeAsync " + describe(ptr, b.stream));
    blocks_.erase(it);
  }
  void record_stream(void* ptr, StreamRef stream) override {
    block& b = blocks_.at(ptr);
    if (stream.native() != b.stream && std::find(b.users.begin(), b.users.end(), stream.native()) == b.users.end()) {
      b.users.push_back(stream.native());
    }
  }
  void reset_reserved_peak() override {
    std::uint64_t zero = 0;
    check(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReservedMemHigh, &zero), "cudaMemPoolSetAttribute(ReservedMemHigh)");
  }
  replay_counters counters() const override {
    std::uint64_t high = 0;
    check(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemHigh, &high), "cudaMemPoolGetAttribute(ReservedMemHigh)");
    return replay_counters{.peak_reserved_bytes = high};
  }

 private:
  struct block {
    cudaStream_t stream;
    std::vector<cudaStream_t> users;  // other streams recorded on it
  };

  /// One event per using stream: a wait captures the event's record at the wait, so the next
  /// free may record it again at once.
  cudaEvent_t event_of(cudaStream_t stream) {
    auto [it, added] = events_.try_emplace(stream, nullptr);
    if (added) check(cudaEventCreateWithFlags(&it->second, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    return it->second;
  }

  cudaMemPool_t pool_ = nullptr;
  std::unordered_map<void*, block> blocks_;
  std::unordered_map<cudaStream_t, cudaEvent_t> events_;
};

}  // namespace

std::unique_ptr<bench_resource> make_cuda_malloc(std::string& why) {
  if (!have_gpu(why)) return nullptr;
  return std::make_unique<cuda_malloc_resource>();
}

std::unique_ptr<bench_resource> make_cuda_malloc_async(std::string& why) {
  if (!have_gpu(why)) return nullptr;
  return std::make_unique<cuda_malloc_async_resource>();
}

replay_resource make_cuda_async_replay() {
  replay_resource made;
  if (have_gpu(made.why)) made.target = std::make_unique<cuda_async_replay_target>();
  return made;
}

}  // namespace streamsafe::bench
