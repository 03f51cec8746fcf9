// A multi-stream pipeline of named stages over a ring of slots, with every hand-off inserted by
// the pipeline (docs/pipeline.md).
//
// Ordering. Batch i uses slot i % depth. In each batch the stages are enqueued in their order,
// each on its own stream. When a stage body first asks for an input (stage_context::buffer), the
// stage's stream waits, on the device, for the pooled event its producer recorded after its body
// in the same slot (one event per slot and edge); a shared buffer's readers in batch i wait for
// its writer's batch i-1 (batch 0: its initialize); a signal's buffers wait for the signal. The
// step stage waits for every other stage of its slot before its body. Slot fences: a stage
// rewrites a per-slot buffer of batch i only after every stage that used it in batch i - depth
// signalled (device waits), the producer rewrites a staging slot only after the stages that read
// it signalled (a host wait on their events, on a pool thread), and the host reads a slot's
// results only after their writers signalled. Without producer and results, the host waits for
// batch i - depth before enqueuing batch i (backpressure). A wait already implied (by the
// stream's own order, an earlier wait, or what the host saw done) is not enqueued. Nothing else
// blocks the host, except stage_context::synchronize.
// Lifetime. run() allocates every buffer (device memory from the caching allocator, pinned host
// memory from the device) and every event (from a pool) before the first batch and frees them
// after the last, once all streams are drained: the loop allocates and frees nothing, and
// run_stats counts what it did. The streams live as long as the pipeline.
// Threads. One pipeline runs one run() at a time, on the calling thread (stage bodies run there,
// in stage order); the producer runs on the pipeline's host threads, started by run() and joined
// before it returns or throws. on_result runs on the calling thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/device.hpp"
#include "streamsafe/error.hpp"
#include "streamsafe/pipeline/stage.hpp"
#include "streamsafe/pipeline/stage_context.hpp"

namespace streamsafe::hazard {
class tracker;
}

namespace streamsafe::pipeline {

/// What the host reads of one batch once its slot's fence passed: the batch's pinned results.
class result_view {
 public:
  result_view(std::size_t batch, std::function<const_byte_span(std::string_view)> lookup)
      : batch_(batch), lookup_(std::move(lookup)) {}
  [[nodiscard]] std::size_t batch() const noexcept { return batch_; }
  /// A pinned per-slot output by name; usage_error for any other.
  [[nodiscard]] const_byte_span buffer(std::string_view name) const { return lookup_(name); }
  template <typename T>
  [[nodiscard]] std::span<const T> buffer_as(std::string_view name) const {
    const const_byte_span bytes = buffer(name);
    return {reinterpret_cast<const T*>(bytes.data()), bytes.size() / sizeof(T)};
  }

 private:
  std::size_t batch_;
  std::function<const_byte_span(std::string_view)> lookup_;
};

struct pipeline_spec {
  std::vector<stage_spec> stages;
  /// Ring depth: batches in flight at once.
  std::size_t depth = 2;
  /// The pinned staging buffer the producer fills (scope per_slot, place pinned); stages read it
  /// by name. bytes 0: no producer.
  buffer_spec staging;
  /// Fills the staging slot for `batch`; runs on a host thread, never on a slot still uploading.
  std::function<void(std::size_t batch, byte_span staging)> producer;
  std::size_t host_threads = 2;
  /// The host's view of each finished batch, in batch order, after its slot's fence.
  std::function<void(const result_view&)> on_result;
};

/// How run() schedules the batches. alone: each stage's stream is synchronized after its body,
/// so no two stages overlap (the "each stage alone" measurement; those syncs are counted).
enum class run_mode { overlapped, alone };

struct run_stats {
  std::size_t batches = 0;
  /// Caching allocator calls between setup and teardown (its stats: blocks allocated and freed),
  /// plus device memory calls (cudaMalloc and kin) it made meanwhile. 0 by construction.
  std::uint64_t loop_allocations = 0;
  std::uint64_t loop_frees = 0;
  /// Host syncs in the loop that were not fences: stage_context::synchronize calls (run_mode::alone
  /// makes one per stage and batch) and the allocator's own host syncs.
  std::uint64_t loop_host_syncs = 0;
  std::uint64_t requested_host_syncs = 0;
  /// Host waits on slot fences (backpressure and results), and those that found the work unfinished.
  std::uint64_t fence_waits = 0;
  std::uint64_t fence_waits_blocked = 0;
  /// Events created after setup (0 by construction: every record reuses a pooled event).
  std::uint64_t loop_events_created = 0;
  std::uint64_t events = 0;  ///< pooled events the run used
  /// Host wall time from the first batch's enqueue to the end of the last batch's work.
  double loop_us = 0;
  /// The steady step: the time between the host seeing the first and the last batch's results,
  /// over the batches between (0 without results, or with fewer than two batches). Leaves out
  /// the ramp (the first batch's latency) that loop_us includes.
  double step_us = 0;
};

/// An error of a stage body, the producer, a fence (an asynchronous device error) or on_result,
/// with the batch and the stage ("producer", "on_result", or a stage name). The pipeline was
/// drained and freed before it was thrown; run() may be called again.
class pipeline_error : public error {
 public:
  pipeline_error(std::size_t batch, std::string stage, std::exception_ptr cause);
  [[nodiscard]] std::size_t batch() const noexcept { return batch_; }
  [[nodiscard]] const std::string& stage() const noexcept { return stage_; }
  [[nodiscard]] std::exception_ptr cause() const noexcept { return cause_; }

 private:
  std::size_t batch_;
  std::string stage_;
  std::exception_ptr cause_;
};

/// Validates the spec (usage_error naming what is wrong: an unknown input, an input produced by a
/// later stage, two writers, a misplaced step stage, an undeclared signal) and creates the
/// streams. `allocator` must be of `device` and outlive the pipeline; `hazards`, when given, sees
/// every op (device buffers go through a hazard::tracked_allocator) and must outlive it too.
class pipeline {
 public:
  pipeline(const Device& device, caching_allocator& allocator, pipeline_spec spec,
           hazard::tracker* hazards = nullptr);
  ~pipeline();
  pipeline(const pipeline&) = delete;
  pipeline& operator=(const pipeline&) = delete;

  /// Runs `batches` batches; throws pipeline_error (after draining and freeing) on a failure.
  run_stats run(std::size_t batches, run_mode mode = run_mode::overlapped);

  [[nodiscard]] std::size_t stage_count() const;
  [[nodiscard]] const stage_spec& stage(std::size_t index) const;
  [[nodiscard]] StreamRef stream_of(std::size_t stage) const;
  [[nodiscard]] const pipeline_spec& spec() const;

  struct state;

 private:
  std::unique_ptr<state> state_;
};

}  // namespace streamsafe::pipeline
