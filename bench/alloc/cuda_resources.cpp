// cudaMalloc/cudaFree and cudaMallocAsync/cudaFreeAsync (pool release threshold at maximum).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "bench_resource.hpp"

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

}  // namespace

std::unique_ptr<bench_resource> make_cuda_malloc(std::string& why) {
  if (!have_gpu(why)) return nullptr;
  return std::make_unique<cuda_malloc_resource>();
}

std::unique_ptr<bench_resource> make_cuda_malloc_async(std::string& why) {
  if (!have_gpu(why)) return nullptr;
  return std::make_unique<cuda_malloc_async_resource>();
}

}  // namespace streamsafe::bench
