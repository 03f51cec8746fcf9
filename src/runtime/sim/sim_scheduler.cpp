#include "runtime/sim/sim_scheduler.hpp"

#include <algorithm>
#include <utility>

#include "common/expects.hpp"

namespace streamsafe::detail {

std::shared_ptr<SimQueue> SimScheduler::add_queue(std::string name, sim_pacing pacing) {
  auto queue = std::make_shared<SimQueue>();
  queue->name = std::move(name);
  queue->pacing = pacing;
  std::lock_guard lock(mutex_);
  queues_.push_back(queue);
  return queue;
}

void SimScheduler::retire_queue(const std::shared_ptr<SimQueue>& queue) {
  std::lock_guard lock(mutex_);
  queue->retired = true;
  drop_drained_retired();
}

SimPosition SimScheduler::enqueue(const std::shared_ptr<SimQueue>& queue, SimOp op) {
  lock_type lock(mutex_);
  queue->pending.push_back(std::move(op));
  SimPosition position{queue, ++queue->enqueued};
  after_enqueue(lock);
  return position;
}

SimPosition SimScheduler::tail(const std::shared_ptr<SimQueue>& queue) {
  std::lock_guard lock(mutex_);
  return SimPosition{queue, queue->enqueued};
}

bool SimScheduler::query(const SimPosition& position) {
  lock_type lock(mutex_);
  if (done(position)) return true;
  nudge(lock);
  return false;
}

void SimScheduler::wait(const SimPosition& position) {
  lock_type lock(mutex_);
  block_until(lock, [&] { return done(position); });
  rethrow_kernel_failure();
}

void SimScheduler::wait_all() {
  lock_type lock(mutex_);
  block_until(lock, [&] { return all_drained(); });
  drop_drained_retired();
  rethrow_kernel_failure();
}

bool SimScheduler::head_ready(const SimQueue& queue) {
  if (queue.pending.empty()) return false;
  const auto& head = queue.pending.front();
  return !head.waits_for || done(*head.waits_for);
}

bool SimScheduler::all_drained() const {
  return std::all_of(queues_.begin(), queues_.end(),
                     [](const auto& q) { return q->completed == q->enqueued; });
}

void SimScheduler::execute(SimQueue& queue, SimOp& op, lock_type* unlock_while_running) {
  if (op.work) {
    if (unlock_while_running != nullptr) unlock_while_running->unlock();
    std::exception_ptr failure;
    try {
      op.work();
    } catch (...) {
      failure = std::current_exception();
    }
    if (unlock_while_running != nullptr) unlock_while_running->lock();
    if (failure && !kernel_failure_) {
      try {
        std::rethrow_exception(failure);
      } catch (const std::exception& e) {
        kernel_failure_ = std::make_exception_ptr(
            error("sim: kernel '" + op.name + "' on stream '" + queue.name + "' failed: " + e.what()));
      } catch (...) {
        kernel_failure_ = std::make_exception_ptr(
            error("sim: kernel '" + op.name + "' on stream '" + queue.name + "' failed"));
      }
    }
  }
  if (op.stamp) op.stamp->at = std::chrono::steady_clock::now();
  ++queue.completed;
}

void SimScheduler::rethrow_kernel_failure() {
  // Reported once, then cleared: unlike CUDA's sticky errors, the sim device stays usable.
  if (auto failure = std::exchange(kernel_failure_, nullptr)) std::rethrow_exception(failure);
}

void SimScheduler::drop_drained_retired() {
  std::erase_if(queues_, [](const auto& q) {
    return q->retired && q->completed == q->enqueued && !q->worker.joinable();
  });
}

}  // namespace streamsafe::detail
