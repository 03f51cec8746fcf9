// A test seam of the sim memory source: makes its next device calls of one kind fail as a
// failing driver's would (cuda_error), so that tests can check what the allocator's books say
// after a failed unmap, map or free. Process-wide: every sim memory source reads it.
#pragma once

#include <atomic>

namespace streamsafe::detail {

/// One kind of call: the next `passing` calls succeed, the `failing` after them throw.
struct sim_fault {
  std::atomic<unsigned> passing{0};
  std::atomic<unsigned> failing{0};
  void arm(unsigned pass, unsigned fail) noexcept {
    passing.store(pass);
    failing.store(fail);
  }
};

struct sim_memory_faults {
  sim_fault unmaps;  ///< unmap_physical
  sim_fault maps;    ///< map_physical
  sim_fault frees;   ///< deallocate of a fixed segment
};

/// The faults armed now; all zero (no fault) unless a test arms one.
[[nodiscard]] sim_memory_faults& sim_faults() noexcept;

}  // namespace streamsafe::detail
