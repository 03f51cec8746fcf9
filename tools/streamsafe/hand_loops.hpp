// The training loops people write by hand, on training_model (the pipeline's kernels) and a
// staging_ring (the loader's pinned batches), one host thread enqueuing everything:
//   one_stream_loop:  every stage in order on one stream.
//   four_stream_loop: the four-stream loop of tutorials. A data stream copies the batch into a
//     new buffer and records E1; a preprocess stream waits E1, writes a new buffer, records E2;
//     a compute stream waits E2, runs forward and backward, records E3; (optionally a sync
//     stream waits E3 and all-reduces the gradients;) the optimizer runs on the default stream.
//     E1-E3 are created once and recorded again every step; record_stream on each tensor.
//   prefetcher_loop:  Apex's data_prefetcher: the next batch copied and preprocessed on one side
//     stream while the main stream computes this one; the main stream waits for the side stream.
// Each step allocates its tensors from the caching allocator and frees them at its end, as
// Python code does when they go out of scope. The host is never bounded by anything but the
// loader's ring (and the allocator), so it runs ahead of the device as such loops do.
#pragma once

#include <cstddef>
#include <optional>

#include "loop_ops.hpp"
#include "staging_ring.hpp"
#include "streamsafe/event.hpp"
#include "streamsafe/stream.hpp"
#include "training_model.hpp"

namespace streamsafe::demo {

class hand_loop {
 public:
  virtual ~hand_loop() = default;
  /// Enqueues batch `batch` (batches are stepped in order, from 0).
  virtual void step(std::size_t batch) = 0;
  /// The stream of each step's last op, ordered after all the step's work (when the loop is
  /// correct): synchronizing it waits for every step enqueued so far.
  [[nodiscard]] virtual StreamRef tail() const = 0;
  /// The last loss copied out: read only after synchronizing tail().
  [[nodiscard]] virtual float last_loss() const = 0;
  /// Times the host blocked on the loader before rewriting a pinned batch (staging_ring).
  [[nodiscard]] virtual std::uint64_t loader_waits() const = 0;
};

class one_stream_loop final : public hand_loop {
 public:
  one_stream_loop(const Device& device, loop_ops& ops, const training_config& config, std::size_t staging_slots);
  void step(std::size_t batch) override;
  [[nodiscard]] StreamRef tail() const override { return stream_; }
  [[nodiscard]] float last_loss() const override { return model_.last_loss(); }
  [[nodiscard]] std::uint64_t loader_waits() const override { return staging_.blocked_waits(); }

 private:
  loop_ops& ops_;
  Stream stream_;
  staging_ring staging_;
  training_model model_;
};

struct four_stream_options {
  /// true: with the waits and record_streams the hazard engine finds missing in the loop as
  /// people write it (the optimizer waits for the gradients, the next compute for the optimizer,
  /// each tensor recorded on the stream that reads it, the loader waits before reusing a pinned
  /// batch). false: exactly as written (each tensor recorded on the stream that produced it).
  bool fixed = true;
  bool allreduce = false;  ///< a sync stream between compute and the optimizer
  std::size_t staging_slots = 2;
};

class four_stream_loop final : public hand_loop {
 public:
  four_stream_loop(const Device& device, loop_ops& ops, const training_config& config, four_stream_options options);
  void step(std::size_t batch) override;
  [[nodiscard]] StreamRef tail() const override { return device_.default_stream(); }
  [[nodiscard]] float last_loss() const override { return model_.last_loss(); }
  [[nodiscard]] std::uint64_t loader_waits() const override { return staging_.blocked_waits(); }

 private:
  /// The optimizer on the default stream, after the gradients (and their all-reduce) when fixed.
  void optimize();

  Device device_;
  loop_ops& ops_;
  four_stream_options options_;
  Stream data_;
  Stream preprocess_;
  Stream compute_;
  std::optional<Stream> sync_;
  Event e1_, e2_, e3_;   // created once, recorded again every step
  Event reduced_;        // fixed, with the all-reduce: the sync stream's work of the step
  Event optimized_;      // fixed: the optimizer's work of the step
  staging_ring staging_;
  training_model model_;
};

class prefetcher_loop final : public hand_loop {
 public:
  prefetcher_loop(const Device& device, loop_ops& ops, const training_config& config, std::size_t staging_slots);
  /// Frees the batch it prefetched last.
  ~prefetcher_loop() override;
  prefetcher_loop(const prefetcher_loop&) = delete;
  prefetcher_loop& operator=(const prefetcher_loop&) = delete;
  /// Waits for batch `batch` (prefetched by the previous step, or now for the first), prefetches
  /// the next one on the side stream, then computes this one on the main stream.
  void step(std::size_t batch) override;
  /// The main stream: a batch prefetched but not yet stepped is not waited for.
  [[nodiscard]] StreamRef tail() const override { return main_; }
  [[nodiscard]] float last_loss() const override { return model_.last_loss(); }
  [[nodiscard]] std::uint64_t loader_waits() const override { return staging_.blocked_waits(); }

 private:
  loop_ops& ops_;
  Stream side_;
  Stream main_;
  staging_ring staging_;
  training_model model_;
  float* next_ = nullptr;  // the prefetched batch's pixels, written on the side stream
};

}  // namespace streamsafe::demo
