// Host memory that runs out on cue, for the tests of what the allocator does when it cannot get
// host memory in the middle of a switch: the test binary that links failing_operator_new.cpp
// has its global operator new replaced by one that throws std::bad_alloc for the nth request of
// an armed size, on the thread that armed it, and serves every other request with malloc.
#pragma once

#include <cstddef>

namespace streamsafe::testing {

/// From now on, on this thread, the `nth` (1-based) global operator new of exactly `bytes`
/// throws std::bad_alloc; once it has, or when disarmed, every request is served again.
void fail_host_allocation(std::size_t bytes, int nth) noexcept;
void disarm_host_allocation_failure() noexcept;
/// Whether the armed failure has been thrown since it was armed.
[[nodiscard]] bool host_allocation_failed() noexcept;

}  // namespace streamsafe::testing
