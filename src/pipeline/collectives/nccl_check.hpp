// Checks NCCL and CUDA results inside the nccl communicator and throws with context: which
// call, which rank, NCCL's own text.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

#include "streamsafe/error.hpp"

namespace streamsafe::collectives::detail {

[[noreturn]] inline void throw_nccl_error(ncclResult_t status, const char* call, const std::string& context) {
  throw error(std::string(call) + " failed for " + context + ": " + ncclGetErrorString(status) +
              " (set NCCL_DEBUG=WARN for NCCL's reason)");
}

[[noreturn]] inline void throw_cuda_call_error(cudaError_t status, const char* call, const std::string& context) {
  throw cuda_error(std::string(call) + " failed for " + context + ": " + cudaGetErrorName(status) + " (" +
                       cudaGetErrorString(status) + ")",
                   static_cast<int>(status));
}

}  // namespace streamsafe::collectives::detail

#define SS_NCCL_TRY(call, context)                                                                     \
  do {                                                                                                 \
    const ncclResult_t ss_nccl_status_ = (call);                                                       \
    if (ss_nccl_status_ != ncclSuccess) [[unlikely]] {                                                 \
      ::streamsafe::collectives::detail::throw_nccl_error(ss_nccl_status_, #call, (context));          \
    }                                                                                                  \
  } while (0)

#define SS_NCCL_CUDA_TRY(call, context)                                                                \
  do {                                                                                                 \
    const cudaError_t ss_nccl_cuda_status_ = (call);                                                   \
    if (ss_nccl_cuda_status_ != cudaSuccess) [[unlikely]] {                                            \
      ::streamsafe::collectives::detail::throw_cuda_call_error(ss_nccl_cuda_status_, #call, (context)); \
    }                                                                                                  \
  } while (0)
