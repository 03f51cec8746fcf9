// Without the cuda backend no cuda stream exists, so these are never reached.
#include "alloc/uncached_backend.hpp"
#include "common/expects.hpp"

namespace streamsafe::detail {

void* cuda_allocate_async(std::size_t, native_stream) {
  SS_EXPECTS(false, "uncached_resource: this build has no cuda backend");
  return nullptr;
}

void cuda_free_async(void*, native_stream) { SS_EXPECTS(false, "uncached_resource: this build has no cuda backend"); }

}  // namespace streamsafe::detail
