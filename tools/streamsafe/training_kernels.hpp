// The kernels of the synthetic training step that `streamsafe pipeline` runs, on both backends:
// the same arithmetic as host loops on sim (so sim times are real host work, proportional to the
// sizes) and as CUDA kernels (cuBLAS for the matrix products) on cuda. Matrices are row-major.
#pragma once

#include <cstddef>
#include <cstdint>

#include "streamsafe/kernel.hpp"

namespace streamsafe::demo {

/// Image layout: images x height x width x 3 channels.
struct image_shape {
  std::size_t images = 0;
  std::size_t height = 0;
  std::size_t width = 0;
  [[nodiscard]] std::size_t pixels() const { return images * height * width * 3; }
  [[nodiscard]] std::size_t per_image() const { return height * width * 3; }
};

/// out = (in / 255 - mean[c]) / std[c], each image flipped left to right.
kernel preprocess_kernel(const std::uint8_t* in, float* out, image_shape shape);
/// features[n][j] = the mean of chunk j of image n's values (hidden chunks per image).
kernel pool_kernel(const float* pixels, float* features, image_shape shape, std::size_t hidden);

/// C[m x n] = op(A)[m x k] . op(B)[k x n]; op transposes a stored matrix when asked.
struct gemm_shape {
  std::size_t m = 0;
  std::size_t n = 0;
  std::size_t k = 0;
  bool transpose_a = false;
  bool transpose_b = false;
};
/// `blas` is the cuBLAS handle (cuda only; may be null on sim).
kernel gemm_kernel(const float* a, const float* b, float* c, gemm_shape shape, void* blas);
/// x = max(x, 0).
kernel relu_kernel(float* x, std::size_t count);
/// delta *= (activation > 0).
kernel relu_backward_kernel(float* delta, const float* activation, std::size_t count);
/// loss[0] = sum(out^2) / (2 rows); delta = out / rows.
kernel loss_kernel(const float* out, float* delta, float* loss, std::size_t count, std::size_t rows);
/// w -= rate * grad.
kernel sgd_kernel(float* w, const float* grad, std::size_t count, float rate);
/// w[i] = a small deterministic pattern (the weights' first values).
kernel init_kernel(float* w, std::size_t count);

/// A cuBLAS handle for the lifetime of the object (nullptr without the cuda backend or on sim).
class blas_handle {
 public:
  explicit blas_handle(bool cuda);
  ~blas_handle();
  blas_handle(const blas_handle&) = delete;
  blas_handle& operator=(const blas_handle&) = delete;
  [[nodiscard]] void* get() const { return handle_; }

 private:
  void* handle_ = nullptr;
};

namespace cuda_launch {
// Host launchers of training_kernels.cu; defined only with the cuda backend.
void preprocess(native_stream stream, const std::uint8_t* in, float* out, image_shape shape);
void pool(native_stream stream, const float* pixels, float* features, image_shape shape, std::size_t hidden);
void gemm(native_stream stream, void* blas, const float* a, const float* b, float* c, gemm_shape shape);
void relu(native_stream stream, float* x, std::size_t count);
void relu_backward(native_stream stream, float* delta, const float* activation, std::size_t count);
void loss(native_stream stream, const float* out, float* delta, float* loss, std::size_t count, std::size_t rows);
void sgd(native_stream stream, float* w, const float* grad, std::size_t count, float rate);
void init(native_stream stream, float* w, std::size_t count);
void* create_blas();
void destroy_blas(void* handle);
}  // namespace cuda_launch

}  // namespace streamsafe::demo
