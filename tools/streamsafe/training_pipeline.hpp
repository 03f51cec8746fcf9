// The synthetic training step that `streamsafe pipeline` runs: five stages on the pipeline.
//   h2d:        the producer's pinned uint8 batch -> device (copy engine, H2D)
//   preprocess: uint8 -> float, normalize, flip (SMs)
//   compute:    pool to `hidden` features, `layers` fully connected layers forward and backward,
//               the loss copied to pinned memory for the host (SMs); publishes each gradient
//               bucket (collectives::bucket_plan over the layers' weight gradients) once its
//               gradients are written, last layer first
//   sync:       all-reduces each bucket through a communicator as it is published (network)
//   step:       SGD on the shared weights with the reduced gradients (the step stage)
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "streamsafe/backend_kind.hpp"
#include "streamsafe/pipeline/collectives/bucket_plan.hpp"
#include "streamsafe/pipeline/collectives/communicator.hpp"
#include "streamsafe/pipeline/collectives/sync_stage.hpp"
#include "streamsafe/pipeline/pipeline.hpp"
#include "training_kernels.hpp"

namespace streamsafe::demo {

struct training_config {
  std::string name;  // copy_bound, sm_bound or balanced
  image_shape shape;
  std::size_t hidden = 0;
  std::size_t layers = 0;
  /// The bucket plan's cap (collectives::bucket_plan): the gradients of the layers are all-reduced
  /// in buckets of at most this many bytes (a layer larger than the cap gets a bucket of its own).
  std::size_t bucket_cap = collectives::default_bucket_cap;
  [[nodiscard]] std::size_t batch_bytes() const { return shape.pixels(); }
};

/// The sizes of `name` on `backend` (sim sizes are small: sim kernels are host loops). Throws
/// usage_error naming the configs for an unknown name.
[[nodiscard]] training_config training_config_for(std::string_view name, backend_kind backend);

/// Owns what the stages share (the cuBLAS handle, the bucket plan, the loss of each batch) and
/// makes the spec. Not movable: the specs it made point into it, and it must outlive them.
class training_step {
 public:
  /// `comm` is this rank's communicator (borrowed: it must outlive the training step), used from
  /// the thread that runs the pipelines. nullptr: a one-rank communicator of the backend's own
  /// (sim: a sim_group of 1; cuda: NCCL, one rank on cuda:0).
  training_step(training_config config, backend_kind backend, collectives::communicator* comm = nullptr);
  training_step(const training_step&) = delete;
  training_step& operator=(const training_step&) = delete;
  [[nodiscard]] pipeline::pipeline_spec spec(std::size_t depth);
  [[nodiscard]] const training_config& config() const { return config_; }
  [[nodiscard]] const collectives::bucket_plan& plan() const { return plan_; }
  [[nodiscard]] const collectives::communicator& communicator() const { return *comm_; }
  /// The loss of the last batch the host read (after its slot's fence).
  [[nodiscard]] float last_loss() const { return last_loss_; }
  /// Called with each batch whose results the host read (a progress line); empty: nothing.
  void on_batch(std::function<void(std::size_t batch)> progress) { progress_ = std::move(progress); }

 private:
  [[nodiscard]] pipeline::stage_spec compute_stage();
  [[nodiscard]] pipeline::stage_spec step_stage();
  training_config config_;
  blas_handle blas_;
  collectives::bucket_plan plan_;
  std::unique_ptr<collectives::communicator> own_comm_;
  collectives::communicator* comm_;
  collectives::sync_spec sync_;  // points into plan_ and comm_
  float last_loss_ = 0;
  std::function<void(std::size_t)> progress_;
};

}  // namespace streamsafe::demo
