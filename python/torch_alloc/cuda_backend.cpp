// The shared library's backend: torch's devices and streams through the CUDA runtime.
#include <cuda_runtime_api.h>

#include "common/expects.hpp"
#include "stream_registry.hpp"
#include "torch_backend.hpp"

namespace streamsafe::torch_alloc {

torch_backend default_backend() {
  SS_EXPECTS(reinterpret_cast<std::uintptr_t>(cudaStreamLegacy) == legacy_stream_handle &&
                 reinterpret_cast<std::uintptr_t>(cudaStreamPerThread) == per_thread_stream_handle,
             "streamsafe torch allocator: this CUDA runtime spells its special stream handles differently");
  return {
      .device = [](int ordinal) { return Device::cuda(ordinal); },
      .adopt = [](const Device& device, native_stream native) { return device.adopt_stream(native); },
      .capturing =
          [](native_stream native) {
            cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
            if (cudaStreamIsCapturing(native, &status) != cudaSuccess) {
              // The legacy stream cannot be queried while another stream captures in global
              // mode: a capture is under way, which is what the caller needs to know.
              (void)cudaGetLastError();
              return true;
            }
            return status != cudaStreamCaptureStatusNone;
          },
  };
}

}  // namespace streamsafe::torch_alloc
