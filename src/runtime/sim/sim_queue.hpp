// A sim stream's queue of ops and the positions events capture in it.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "streamsafe/sim_options.hpp"

namespace streamsafe::detail {

struct SimQueue;

/// A point in one queue: done once the queue has completed `sequence` ops. Holding the queue
/// keeps events valid after their stream is destroyed.
struct SimPosition {
  std::shared_ptr<SimQueue> queue;
  std::uint64_t sequence = 0;
};

/// When a timing marker ran.
struct SimTimestamp {
  std::chrono::steady_clock::time_point at{};
};

/// One queued op: work to run, a wait for another position, or a timing marker.
struct SimOp {
  std::string name;
  std::function<void()> work;
  std::optional<SimPosition> waits_for;
  std::shared_ptr<SimTimestamp> stamp;
};

/// Guarded by its scheduler's mutex, except `worker`, owned by the threaded scheduler.
struct SimQueue {
  std::string name;
  sim_pacing pacing = sim_pacing::normal;
  std::deque<SimOp> pending;
  std::uint64_t enqueued = 0;
  std::uint64_t completed = 0;
  bool retired = false;  // its stream is gone; drop the queue once drained
  std::thread worker;
};

}  // namespace streamsafe::detail
