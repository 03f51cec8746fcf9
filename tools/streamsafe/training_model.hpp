// training_step's model (training_pipeline.hpp) on streams the caller picks, for the training
// loops written by hand: the same kernels, in the same order and on the same sizes, as the
// pipeline's compute and step stages, so a loop and the pipeline differ only in their schedule.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loop_ops.hpp"
#include "streamsafe/device.hpp"
#include "training_kernels.hpp"
#include "training_pipeline.hpp"

namespace streamsafe::demo {

class training_model {
 public:
  /// Allocates the weights on `weights_stream` and writes their first values there, and the
  /// gradients on `grads_stream`: parameters live as long as the model, as a framework's do.
  training_model(const Device& device, loop_ops& ops, const training_config& config, StreamRef weights_stream,
                 StreamRef grads_stream);
  /// Synchronizes the device, then frees what the model allocated.
  ~training_model();
  training_model(const training_model&) = delete;
  training_model& operator=(const training_model&) = delete;

  /// One step's activations, deltas and loss: allocated per step, as a framework's tensors are.
  struct step_tensors {
    float* activations = nullptr;
    float* deltas = nullptr;
    float* loss = nullptr;
  };
  [[nodiscard]] step_tensors allocate_step(StreamRef stream);
  void free_step(const step_tensors& tensors);

  [[nodiscard]] const training_config& config() const { return config_; }
  [[nodiscard]] std::size_t image_bytes() const { return config_.shape.pixels(); }
  [[nodiscard]] std::size_t pixel_bytes() const { return config_.shape.pixels() * sizeof(float); }
  [[nodiscard]] float* grads() const { return grads_; }

  /// uint8 images -> normalized, flipped float pixels.
  void preprocess(StreamRef stream, const std::uint8_t* images, float* pixels);
  /// Pool, forward, loss, backward into grads(), then the loss copied to pinned memory.
  void forward_backward(StreamRef stream, const float* pixels, const step_tensors& tensors);
  /// One rank's all-reduce of the gradients, in place (the sum of one is the gradient itself).
  void allreduce(StreamRef stream);
  /// SGD: weights -= rate * grads.
  void optimizer(StreamRef stream);
  /// The loss the last forward_backward copied out: read only once the device is synchronized.
  [[nodiscard]] float last_loss() const { return *loss_host_; }

 private:
  [[nodiscard]] std::size_t plane() const { return config_.shape.images * config_.hidden; }
  [[nodiscard]] std::size_t activation_bytes() const { return (config_.layers + 1) * plane() * sizeof(float); }
  [[nodiscard]] std::size_t weight_count() const { return config_.layers * config_.hidden * config_.hidden; }
  [[nodiscard]] std::size_t weight_bytes() const { return weight_count() * sizeof(float); }
  void backward(StreamRef stream, const step_tensors& tensors);

  Device device_;
  loop_ops& ops_;
  training_config config_;
  blas_handle blas_;
  float* weights_ = nullptr;
  float* grads_ = nullptr;
  float* loss_host_ = nullptr;  // pinned
};

}  // namespace streamsafe::demo
