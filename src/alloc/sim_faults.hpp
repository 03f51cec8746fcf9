// A test seam of the sim backend: makes its next device calls of one kind fail as a failing
// driver's would (cuda_error), so that tests can check what the allocator's books say after a
// failed unmap, map, free or fence record, and that callers which cannot throw (destructors)
// survive a failed stream query. Process-wide: every sim memory source and stream reads it.
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
  sim_fault releases;  ///< release_physical
  sim_fault frees;   ///< deallocate of a fixed segment
  sim_fault fence_records;  ///< pending_frees' event record of a fence (any backend)
  sim_fault stream_queries;  ///< a sim stream's query
};

/// Throws cuda_error naming `call` and `at`, as a failing driver call would, when `fault` is
/// armed to fail now (after its passing calls); otherwise nothing.
void inject_sim_fault(sim_fault& fault, const char* call, const void* at);

/// The faults armed now; all zero (no fault) unless a test arms one.
[[nodiscard]] sim_memory_faults& sim_faults() noexcept;

}  // namespace streamsafe::detail
