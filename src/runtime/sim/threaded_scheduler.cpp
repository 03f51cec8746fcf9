// sim_mode::threaded: a worker thread per queue, so streams really run concurrently.
#include <thread>

#include "runtime/sim/sim_scheduler.hpp"

namespace streamsafe::detail {

namespace {

class ThreadedScheduler final : public SimScheduler {
 public:
  using SimScheduler::SimScheduler;

  ~ThreadedScheduler() override {
    std::vector<std::shared_ptr<SimQueue>> queues;
    {
      std::lock_guard lock(mutex_);
      queues = queues_;
      for (auto& queue : queues) queue->retired = true;
    }
    changed_.notify_all();
    for (auto& queue : queues) {
      if (queue->worker.joinable()) queue->worker.join();
    }
  }

  std::shared_ptr<SimQueue> add_queue(std::string name, sim_pacing pacing) override {
    auto queue = SimScheduler::add_queue(std::move(name), pacing);
    std::lock_guard lock(mutex_);
    queue->worker = std::thread([this, raw = queue.get()] { work_on(*raw); });
    return queue;
  }

  void retire_queue(const std::shared_ptr<SimQueue>& queue) override {
    {
      std::lock_guard lock(mutex_);
      queue->retired = true;
    }
    changed_.notify_all();
    // The worker drains the queue, then exits; joining here keeps the thread count bounded.
    queue->worker.join();
    std::lock_guard lock(mutex_);
    drop_drained_retired();
  }

 private:
  void work_on(SimQueue& queue) {
    lock_type lock(mutex_);
    for (;;) {
      changed_.wait(lock, [&] { return head_ready(queue) || (queue.retired && queue.pending.empty()); });
      if (queue.pending.empty()) return;
      SimOp op = std::move(queue.pending.front());
      queue.pending.pop_front();
      if (queue.pacing == sim_pacing::starved && op.work) {
        lock.unlock();
        std::this_thread::sleep_for(options_.starve_delay);
        lock.lock();
      }
      execute(queue, op, &lock);
      changed_.notify_all();
    }
  }

  void after_enqueue(lock_type& /*lock*/) override { changed_.notify_all(); }

  void block_until(lock_type& lock, const std::function<bool()>& condition) override {
    changed_.wait(lock, condition);
  }

  void nudge(lock_type& /*lock*/) override {}

  std::condition_variable changed_;
};

}  // namespace

std::unique_ptr<SimScheduler> make_threaded_scheduler(const sim_options& options) {
  return std::make_unique<ThreadedScheduler>(options);
}

std::unique_ptr<SimScheduler> make_deterministic_scheduler(const sim_options& options);

std::unique_ptr<SimScheduler> make_scheduler(const sim_options& options) {
  switch (options.mode) {
    case sim_mode::deterministic: return make_deterministic_scheduler(options);
    case sim_mode::threaded: return make_threaded_scheduler(options);
  }
  return make_deterministic_scheduler(options);
}

}  // namespace streamsafe::detail
