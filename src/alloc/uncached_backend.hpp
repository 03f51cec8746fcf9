// The cuda half of uncached_resource: stream-ordered cudaMallocAsync / cudaFreeAsync
// (uncached_cuda.cpp; stubs without the cuda backend).
#pragma once

#include <cstddef>

#include "streamsafe/kernel.hpp"

namespace streamsafe::detail {

[[nodiscard]] void* cuda_allocate_async(std::size_t bytes, native_stream stream);
void cuda_free_async(void* ptr, native_stream stream);

}  // namespace streamsafe::detail
