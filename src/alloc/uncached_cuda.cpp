#include <cuda_runtime_api.h>

#include "alloc/uncached_backend.hpp"
#include "runtime/cuda/cuda_check.hpp"

namespace streamsafe::detail {

void* cuda_allocate_async(std::size_t bytes, native_stream stream) {
  void* ptr = nullptr;
  SS_CUDA_TRY(cudaMallocAsync(&ptr, bytes, stream), "uncached_resource: " + std::to_string(bytes) + " bytes");
  return ptr;
}

void cuda_free_async(void* ptr, native_stream stream) {
  SS_CUDA_TRY(cudaFreeAsync(ptr, stream), "uncached_resource");
}

}  // namespace streamsafe::detail
