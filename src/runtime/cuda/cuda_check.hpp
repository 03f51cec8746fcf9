// Checks CUDA runtime results and throws with context: which call, which handle, the CUDA error
// name and text. Only the cuda backend includes this (it needs cuda_runtime.h).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "streamsafe/error.hpp"

namespace streamsafe::detail {

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const std::string& context,
                                   const char* file, int line);

}  // namespace streamsafe::detail

/// SS_CUDA_TRY(cudaStreamSynchronize(s), "stream 'copy'"): throws cuda_error (out_of_memory for
/// cudaErrorMemoryAllocation) naming the call and the context unless it returns cudaSuccess.
#define SS_CUDA_TRY(call, context)                                                              \
  do {                                                                                          \
    const cudaError_t ss_status_ = (call);                                                      \
    if (ss_status_ != cudaSuccess) [[unlikely]] {                                               \
      ::streamsafe::detail::throw_cuda_error(ss_status_, #call, (context), __FILE__, __LINE__); \
    }                                                                                           \
  } while (0)
