#include "runtime/cuda/cuda_check.hpp"

#include <filesystem>

namespace streamsafe::detail {

void throw_cuda_error(cudaError_t status, const char* call, const std::string& context, const char* file,
                      int line) {
  // Clear a non-sticky error so the next call does not report it again.
  (void)cudaGetLastError();
  std::string message = std::string(call) + " failed for " + context + ": " + cudaGetErrorName(status) + " (" +
                        cudaGetErrorString(status) + ") [" + std::filesystem::path(file).filename().string() +
                        ":" + std::to_string(line) + "]";
  if (status == cudaErrorMemoryAllocation) throw out_of_memory(message);
  throw cuda_error(message, static_cast<int>(status));
}

}  // namespace streamsafe::detail
