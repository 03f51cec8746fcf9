// A unit of device work that runs on either backend.
#pragma once

#include <functional>
#include <string>

struct CUstream_st;  // the type behind cudaStream_t, declared here so no CUDA header is needed

namespace streamsafe {

/// The backend's own stream handle: a cudaStream_t on cuda, nullptr on sim.
using native_stream = CUstream_st*;

/// Work for a stream. `cuda` must enqueue its work on the stream it is given (a kernel launch,
/// a library call) and must not synchronize it; `sim` is run by the sim scheduler when the
/// stream reaches it, on memory that is host memory there. A kernel launched on a backend whose
/// callable is empty throws usage_error naming the kernel. Neither callable may call back into
/// streamsafe's stream or event API (a CUDA kernel cannot either).
struct kernel {
  std::string name;
  std::function<void(native_stream)> cuda;
  std::function<void()> sim;
};

}  // namespace streamsafe
