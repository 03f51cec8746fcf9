// Checks NCCL results inside the nccl communicator and throws with context: which call, which
// rank, NCCL's own text. CUDA results go through the runtime's SS_CUDA_TRY.
#pragma once

#include <nccl.h>

#include <string>

#include "streamsafe/error.hpp"

namespace streamsafe::collectives::detail {

[[noreturn]] inline void throw_nccl_error(ncclResult_t status, const char* call, const std::string& context) {
  throw error(std::string(call) + " failed for " + context + ": " + ncclGetErrorString(status) +
              " (set NCCL_DEBUG=WARN for NCCL's reason)");
}

}  // namespace streamsafe::collectives::detail

#define SS_NCCL_TRY(call, context)                                                                     \
  do {                                                                                                 \
    const ncclResult_t ss_nccl_status_ = (call);                                                       \
    if (ss_nccl_status_ != ncclSuccess) [[unlikely]] {                                                 \
      ::streamsafe::collectives::detail::throw_nccl_error(ss_nccl_status_, #call, (context));          \
    }                                                                                                  \
  } while (0)
