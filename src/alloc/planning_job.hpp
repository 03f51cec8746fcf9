// Plans a period's offsets (offset_planner.hpp) on a thread of its own, so that the allocating
// thread goes on serving requests while it runs: planning a training step's thousands of blocks
// takes milliseconds, which the pools' fast path pays back only over many iterations.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#include "alloc/offset_planner.hpp"

namespace streamsafe::detail {

/// The planner's inputs and, once `done`, its outputs.
struct planning_state {
  std::vector<cyclic_lifetime> lifetimes;
  std::uint64_t period = 0;
  std::vector<std::size_t> boundaries;
  offset_plan plan;
  std::size_t peak_live = 0;
  std::exception_ptr error;
  std::atomic<bool> done{false};
};

/// Thread-safe to the extent that ready() may be called while the job runs; result() by the
/// one owner, once ready. A job given up (destroyed unfinished) runs to its end on its own and frees its state:
/// no caller waits for it.
class planning_job {
 public:
  /// Starts the thread; when no thread can be started, plans on the caller's thread instead.
  planning_job(std::vector<cyclic_lifetime> lifetimes, std::uint64_t period, std::vector<std::size_t> boundaries);
  planning_job(const planning_job&) = delete;
  planning_job& operator=(const planning_job&) = delete;

  /// Whether the plan is done (acquire: its outputs are visible after true).
  [[nodiscard]] bool ready() const noexcept { return state_->done.load(std::memory_order_acquire); }
  /// The finished state; rethrows what the planner threw. Requires ready().
  [[nodiscard]] const planning_state& result() const;

 private:
  std::shared_ptr<planning_state> state_;
};

}  // namespace streamsafe::detail
