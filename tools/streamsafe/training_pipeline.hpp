// The synthetic training step that `streamsafe pipeline` runs: four stages on the pipeline.
//   h2d:        the producer's pinned uint8 batch -> device (copy engine, H2D)
//   preprocess: uint8 -> float, normalize, flip (SMs)
//   compute:    pool to `hidden` features, `layers` fully connected layers forward and backward,
//               the loss copied to pinned memory for the host (SMs)
//   step:       SGD on the shared weights (the step stage)
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "streamsafe/backend_kind.hpp"
#include "streamsafe/pipeline/pipeline.hpp"
#include "training_kernels.hpp"

namespace streamsafe::demo {

struct training_config {
  std::string name;  // copy_bound, sm_bound or balanced
  image_shape shape;
  std::size_t hidden = 0;
  std::size_t layers = 0;
  [[nodiscard]] std::size_t batch_bytes() const { return shape.pixels(); }
};

/// The sizes of `name` on `backend` (sim sizes are small: sim kernels are host loops). Throws
/// usage_error naming the configs for an unknown name.
[[nodiscard]] training_config training_config_for(std::string_view name, backend_kind backend);

/// Owns what the stages share (the cuBLAS handle, the loss of each batch) and makes the spec.
class training_step {
 public:
  training_step(training_config config, backend_kind backend);
  [[nodiscard]] pipeline::pipeline_spec spec(std::size_t depth);
  [[nodiscard]] const training_config& config() const { return config_; }
  /// The loss of the last batch the host read (after its slot's fence).
  [[nodiscard]] float last_loss() const { return last_loss_; }
  /// Called with each batch whose results the host read (a progress line); empty: nothing.
  void on_batch(std::function<void(std::size_t batch)> progress) { progress_ = std::move(progress); }

 private:
  [[nodiscard]] pipeline::stage_spec compute_stage();
  [[nodiscard]] pipeline::stage_spec step_stage();
  training_config config_;
  blas_handle blas_;
  float last_loss_ = 0;
  std::function<void(std::size_t)> progress_;
};

}  // namespace streamsafe::demo
