// Runs the sim backend's queues. The base class keeps the queues and the CUDA rules of
// readiness (an op runs after the ops before it on its queue; a wait runs once the position it
// captured is done); the two modes decide who runs ops and when (see sim_options.hpp).
#pragma once

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "runtime/sim/sim_queue.hpp"
#include "streamsafe/sim_options.hpp"

namespace streamsafe::detail {

class SimScheduler {
 public:
  explicit SimScheduler(const sim_options& options) : options_(options) {}
  virtual ~SimScheduler() = default;
  SimScheduler(const SimScheduler&) = delete;
  SimScheduler& operator=(const SimScheduler&) = delete;

  [[nodiscard]] virtual std::shared_ptr<SimQueue> add_queue(std::string name, sim_pacing pacing);
  /// The stream owning `queue` is gone: its queued ops still run (as with cudaStreamDestroy).
  virtual void retire_queue(const std::shared_ptr<SimQueue>& queue);

  /// Appends `op` and returns the position just after it.
  SimPosition enqueue(const std::shared_ptr<SimQueue>& queue, SimOp op);
  /// The position after everything enqueued on `queue` so far.
  [[nodiscard]] SimPosition tail(const std::shared_ptr<SimQueue>& queue);

  /// Never blocks. deterministic: when not done yet, lets one op run (so polling terminates).
  [[nodiscard]] bool query(const SimPosition& position);
  /// Blocks the host until `position` is done.
  void wait(const SimPosition& position);
  /// Blocks the host until every queue is drained.
  void wait_all();

 protected:
  using lock_type = std::unique_lock<std::mutex>;
  [[nodiscard]] static bool done(const SimPosition& position) {
    return position.queue == nullptr || position.queue->completed >= position.sequence;
  }
  [[nodiscard]] static bool head_ready(const SimQueue& queue);
  [[nodiscard]] bool all_drained() const;
  /// Runs `op` (work or stamp), unlocked when `lock` is given, then counts it done. An
  /// exception from a kernel is kept and rethrown at the next host wait, as CUDA errors are.
  void execute(SimQueue& queue, SimOp& op, lock_type* unlock_while_running);
  void rethrow_kernel_failure();
  void drop_drained_retired();

  /// Mode hooks, called with mutex_ held.
  virtual void after_enqueue(lock_type& lock) = 0;
  virtual void block_until(lock_type& lock, const std::function<bool()>& condition) = 0;
  virtual void nudge(lock_type& lock) = 0;

  sim_options options_;
  std::mutex mutex_;
  std::vector<std::shared_ptr<SimQueue>> queues_;
  std::exception_ptr kernel_failure_;
};

[[nodiscard]] std::unique_ptr<SimScheduler> make_scheduler(const sim_options& options);

}  // namespace streamsafe::detail
