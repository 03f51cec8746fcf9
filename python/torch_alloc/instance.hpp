// The process's one torch allocator, behind the C ABI.
#pragma once

#include "torch_allocator.hpp"

namespace streamsafe::torch_alloc {

/// Made on first use from default_backend() and never destroyed: torch frees tensors during
/// its own static destruction, after ours would have run.
[[nodiscard]] torch_allocator& instance();
/// For the tests: a fresh allocator on `backend`; the previous one is destroyed, so no other
/// thread may be inside the ABI and no block of it may be live.
void replace_instance(torch_backend backend);

}  // namespace streamsafe::torch_alloc
