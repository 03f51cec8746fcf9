#include "training_kernels.hpp"

#include <algorithm>
#include <cmath>

#include "streamsafe/config.hpp"

namespace streamsafe::demo {

namespace {

constexpr float channel_mean[3] = {0.485f, 0.456f, 0.406f};
constexpr float channel_std[3] = {0.229f, 0.224f, 0.225f};

void preprocess_on_host(const std::uint8_t* in, float* out, image_shape shape) {
  const std::size_t row = shape.width * 3;
  for (std::size_t n = 0; n < shape.images; ++n) {
    for (std::size_t y = 0; y < shape.height; ++y) {
      const std::size_t base = (n * shape.height + y) * row;
      for (std::size_t x = 0; x < shape.width; ++x) {
        for (std::size_t c = 0; c < 3; ++c) {
          const float v = static_cast<float>(in[base + (shape.width - 1 - x) * 3 + c]) / 255.0f;
          out[base + x * 3 + c] = (v - channel_mean[c]) / channel_std[c];
        }
      }
    }
  }
}

void pool_on_host(const float* pixels, float* features, image_shape shape, std::size_t hidden) {
  const std::size_t chunk = shape.per_image() / hidden;
  for (std::size_t n = 0; n < shape.images; ++n) {
    for (std::size_t j = 0; j < hidden; ++j) {
      const float* first = pixels + n * shape.per_image() + j * chunk;
      float sum = 0;
      for (std::size_t i = 0; i < chunk; ++i) sum += first[i];
      features[n * hidden + j] = sum / static_cast<float>(chunk);
    }
  }
}

void gemm_on_host(const float* a, const float* b, float* c, gemm_shape s) {
  for (std::size_t i = 0; i < s.m; ++i) {
    for (std::size_t j = 0; j < s.n; ++j) {
      float sum = 0;
      for (std::size_t p = 0; p < s.k; ++p) {
        const float x = s.transpose_a ? a[p * s.m + i] : a[i * s.k + p];
        const float y = s.transpose_b ? b[j * s.k + p] : b[p * s.n + j];
        sum += x * y;
      }
      c[i * s.n + j] = sum;
    }
  }
}

void loss_on_host(const float* out, float* delta, float* loss, std::size_t count, std::size_t rows) {
  double sum = 0;
  for (std::size_t i = 0; i < count; ++i) {
    sum += static_cast<double>(out[i]) * out[i];
    delta[i] = out[i] / static_cast<float>(rows);
  }
  loss[0] = static_cast<float>(sum / (2.0 * static_cast<double>(rows)));
}

// The kernel named `name`: `host` on sim, `device` (a cuda_launch call) on cuda.
template <typename Host, typename Device>
kernel both(const char* name, Host host, [[maybe_unused]] Device device) {
  kernel work{.name = name};
  work.sim = std::move(host);
#if STREAMSAFE_HAVE_CUDA
  work.cuda = std::move(device);
#endif
  return work;
}

}  // namespace

kernel preprocess_kernel(const std::uint8_t* in, float* out, image_shape shape) {
  return both("preprocess", [=] { preprocess_on_host(in, out, shape); },
              [=](native_stream s) { cuda_launch::preprocess(s, in, out, shape); });
}

kernel pool_kernel(const float* pixels, float* features, image_shape shape, std::size_t hidden) {
  return both("pool", [=] { pool_on_host(pixels, features, shape, hidden); },
              [=](native_stream s) { cuda_launch::pool(s, pixels, features, shape, hidden); });
}

kernel gemm_kernel(const float* a, const float* b, float* c, gemm_shape shape, void* blas) {
  return both("gemm", [=] { gemm_on_host(a, b, c, shape); },
              [=](native_stream s) { cuda_launch::gemm(s, blas, a, b, c, shape); });
}

kernel relu_kernel(float* x, std::size_t count) {
  return both("relu", [=] { std::transform(x, x + count, x, [](float v) { return std::max(v, 0.0f); }); },
              [=](native_stream s) { cuda_launch::relu(s, x, count); });
}

kernel relu_backward_kernel(float* delta, const float* activation, std::size_t count) {
  return both("relu_backward",
              [=] {
                for (std::size_t i = 0; i < count; ++i) delta[i] = activation[i] > 0 ? delta[i] : 0.0f;
              },
              [=](native_stream s) { cuda_launch::relu_backward(s, delta, activation, count); });
}

kernel loss_kernel(const float* out, float* delta, float* loss, std::size_t count, std::size_t rows) {
  return both("loss", [=] { loss_on_host(out, delta, loss, count, rows); },
              [=](native_stream s) { cuda_launch::loss(s, out, delta, loss, count, rows); });
}

kernel sgd_kernel(float* w, const float* grad, std::size_t count, float rate) {
  return both("sgd",
              [=] {
                for (std::size_t i = 0; i < count; ++i) w[i] -= rate * grad[i];
              },
              [=](native_stream s) { cuda_launch::sgd(s, w, grad, count, rate); });
}

kernel init_kernel(float* w, std::size_t count) {
  return both("init_weights",
              [=] {
                for (std::size_t i = 0; i < count; ++i) w[i] = 0.01f * static_cast<float>(i % 7) - 0.02f;
              },
              [=](native_stream s) { cuda_launch::init(s, w, count); });
}

blas_handle::blas_handle([[maybe_unused]] bool cuda) {
#if STREAMSAFE_HAVE_CUDA
  if (cuda) handle_ = cuda_launch::create_blas();
#endif
}

blas_handle::~blas_handle() {
#if STREAMSAFE_HAVE_CUDA
  if (handle_ != nullptr) cuda_launch::destroy_blas(handle_);
#endif
}

}  // namespace streamsafe::demo
