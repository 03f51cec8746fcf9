#include "training_model.hpp"

namespace streamsafe::demo {

training_model::training_model(const Device& device, loop_ops& ops, const training_config& config,
                               StreamRef weights_stream, StreamRef grads_stream)
    : device_(device), ops_(ops), config_(config), blas_(device.backend() == backend_kind::cuda) {
  loss_host_ = static_cast<float*>(device_.allocate_pinned(sizeof(float)));
  *loss_host_ = 0;
  weights_ = static_cast<float*>(ops_.allocate(weight_bytes(), weights_stream));
  grads_ = static_cast<float*>(ops_.allocate(weight_bytes(), grads_stream));
  ops_.launch(weights_stream, init_kernel(weights_, weight_count()), {}, {{weights_, weight_bytes()}});
}

training_model::~training_model() {
  device_.synchronize();
  ops_.deallocate(grads_);
  ops_.deallocate(weights_);
  device_.deallocate_pinned(loss_host_);
}

training_model::step_tensors training_model::allocate_step(StreamRef stream) {
  return {.activations = static_cast<float*>(ops_.allocate(activation_bytes(), stream)),
          .deltas = static_cast<float*>(ops_.allocate(activation_bytes(), stream)),
          .loss = static_cast<float*>(ops_.allocate(sizeof(float), stream))};
}

void training_model::free_step(const step_tensors& tensors) {
  ops_.deallocate(tensors.loss);
  ops_.deallocate(tensors.deltas);
  ops_.deallocate(tensors.activations);
}

void training_model::preprocess(StreamRef stream, const std::uint8_t* images, float* pixels) {
  ops_.launch(stream, preprocess_kernel(images, pixels, config_.shape), {{images, image_bytes()}},
              {{pixels, pixel_bytes()}});
}

void training_model::forward_backward(StreamRef stream, const float* pixels, const step_tensors& tensors) {
  const std::size_t rows = config_.shape.images;
  const std::size_t h = config_.hidden;
  const memory_range acts{tensors.activations, activation_bytes()};
  const memory_range weights{weights_, weight_bytes()};
  const auto a = [&](std::size_t l) { return tensors.activations + l * plane(); };
  ops_.launch(stream, pool_kernel(pixels, a(0), config_.shape, h), {{pixels, pixel_bytes()}}, {acts});
  for (std::size_t l = 0; l < config_.layers; ++l) {
    ops_.launch(stream, gemm_kernel(a(l), weights_ + l * h * h, a(l + 1), {rows, h, h}, blas_.get()), {acts, weights},
                {acts});
    ops_.launch(stream, relu_kernel(a(l + 1), plane()), {acts}, {acts});
  }
  ops_.launch(stream, loss_kernel(a(config_.layers), tensors.deltas + config_.layers * plane(), tensors.loss, plane(), rows),
              {acts}, {{tensors.deltas, activation_bytes()}, {tensors.loss, sizeof(float)}});
  backward(stream, tensors);
  ops_.copy(stream, loss_host_, tensors.loss, sizeof(float));
}

void training_model::backward(StreamRef stream, const step_tensors& tensors) {
  const std::size_t rows = config_.shape.images;
  const std::size_t h = config_.hidden;
  const memory_range acts{tensors.activations, activation_bytes()};
  const memory_range deltas{tensors.deltas, activation_bytes()};
  const memory_range weights{weights_, weight_bytes()};
  const auto a = [&](std::size_t l) { return tensors.activations + l * plane(); };
  const auto d = [&](std::size_t l) { return tensors.deltas + l * plane(); };
  for (std::size_t l = config_.layers; l-- > 0;) {
    ops_.launch(stream, gemm_kernel(a(l), d(l + 1), grads_ + l * h * h, {h, h, rows, true, false}, blas_.get()),
                {acts, deltas}, {{grads_, weight_bytes()}});
    if (l == 0) continue;
    ops_.launch(stream, gemm_kernel(d(l + 1), weights_ + l * h * h, d(l), {rows, h, h, false, true}, blas_.get()),
                {deltas, weights}, {deltas});
    ops_.launch(stream, relu_backward_kernel(d(l), a(l), plane()), {acts, deltas}, {deltas});
  }
}

void training_model::allreduce(StreamRef stream) {
  ops_.launch(stream, sgd_kernel(grads_, grads_, weight_count(), 0.0f), {{grads_, weight_bytes()}},
              {{grads_, weight_bytes()}});
}

void training_model::optimizer(StreamRef stream) {
  ops_.launch(stream, sgd_kernel(weights_, grads_, weight_count(), 1e-3f), {{grads_, weight_bytes()}, {weights_, weight_bytes()}},
              {{weights_, weight_bytes()}});
}

}  // namespace streamsafe::demo
