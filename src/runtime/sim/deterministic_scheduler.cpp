// sim_mode::deterministic: the host thread runs ops itself, inside the calls that wait.
#include <random>

#include "common/expects.hpp"
#include "runtime/sim/sim_scheduler.hpp"

namespace streamsafe::detail {

namespace {

class DeterministicScheduler final : public SimScheduler {
 public:
  explicit DeterministicScheduler(const sim_options& options) : SimScheduler(options), random_(options.seed) {}

 private:
  void after_enqueue(lock_type& /*lock*/) override {
    if (options_.max_background_steps == 0) return;
    const auto steps = random_() % (options_.max_background_steps + 1);
    for (std::uint64_t i = 0; i < steps && step(); ++i) {
    }
  }

  void block_until(lock_type& /*lock*/, const std::function<bool()>& condition) override {
    while (!condition()) {
      // Waits only name positions enqueued earlier, so some queue is always ready.
      SS_EXPECTS(step(), "sim: no stream can make progress, yet the host is waiting (scheduler bug)");
    }
  }

  void nudge(lock_type& /*lock*/) override { (void)step(); }

  /// Runs the head op of one ready queue; false when none is ready. Starved queues run only
  /// when no other queue can.
  bool step() {
    ready_.clear();
    for (auto pacing : {sim_pacing::normal, sim_pacing::starved}) {
      for (const auto& queue : queues_) {
        if (queue->pacing == pacing && head_ready(*queue)) ready_.push_back(queue.get());
      }
      if (!ready_.empty()) break;
    }
    if (ready_.empty()) return false;
    SimQueue& chosen = *ready_[random_() % ready_.size()];
    SimOp op = std::move(chosen.pending.front());
    chosen.pending.pop_front();
    execute(chosen, op, nullptr);
    return true;
  }

  std::mt19937_64 random_;
  std::vector<SimQueue*> ready_;
};

}  // namespace

std::unique_ptr<SimScheduler> make_deterministic_scheduler(const sim_options& options) {
  return std::make_unique<DeterministicScheduler>(options);
}

}  // namespace streamsafe::detail
