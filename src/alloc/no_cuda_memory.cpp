// Stands in for the cuda memory source in builds without the cuda backend (no cuda Device can
// exist there, so this is never reached by a correct program).
#include "alloc/memory_source.hpp"
#include "common/expects.hpp"

namespace streamsafe::detail {

std::unique_ptr<memory_source> make_cuda_memory_source(const Device&) {
  SS_EXPECTS(false, "caching_allocator: this build has no cuda backend");
  return nullptr;
}

}  // namespace streamsafe::detail
