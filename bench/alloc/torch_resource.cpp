// PyTorch's c10 CUDACachingAllocator from C++: raw_alloc_with_stream / raw_delete, and
// allocate + recordStream for the record_stream case. Built only with STREAMSAFE_TORCH_DIR.
#include <c10/core/Device.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <vector>

#include "bench_resource.hpp"

namespace streamsafe::bench {

namespace {

class torch_caching_resource final : public bench_resource {
 public:
  torch_caching_resource() {
    for (int i = 0; i < bench_streams; ++i) streams_.push_back(c10::cuda::getStreamFromPool(false, 0));
  }
  void* allocate(std::size_t bytes, int stream) override {
    return c10::cuda::CUDACachingAllocator::raw_alloc_with_stream(bytes, streams_[static_cast<std::size_t>(stream)]);
  }
  void deallocate(void* ptr) override { c10::cuda::CUDACachingAllocator::raw_delete(ptr); }
  /// recordStream takes a DataPtr made by the allocator, so this case allocates through
  /// allocate() on `stream` (made current) instead of raw_alloc_with_stream.
  bool alloc_record_free(std::size_t bytes, int stream, int other) override {
    c10::cuda::CUDAStreamGuard guard(streams_[static_cast<std::size_t>(stream)]);
    c10::DataPtr data = c10::cuda::CUDACachingAllocator::get()->allocate(bytes);
    c10::cuda::CUDACachingAllocator::recordStream(data, streams_[static_cast<std::size_t>(other)]);
    return true;  // the DataPtr's deleter frees the block here
  }
  void reclaim() override {}  // PyTorch polls its events inside later allocations

 private:
  std::vector<c10::cuda::CUDAStream> streams_;
};

}  // namespace

std::unique_ptr<bench_resource> make_torch_caching(std::string& why) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    why = "no CUDA device";
    return nullptr;
  }
  // Python's torch.cuda does this at its lazy init; from C++ it is ours to do.
  c10::cuda::CUDACachingAllocator::init(count);
  return std::make_unique<torch_caching_resource>();
}

}  // namespace streamsafe::bench
