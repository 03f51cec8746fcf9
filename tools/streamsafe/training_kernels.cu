#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "training_kernels.hpp"

namespace streamsafe::demo::cuda_launch {

namespace {

__constant__ float channel_mean[3] = {0.485f, 0.456f, 0.406f};
__constant__ float channel_std[3] = {0.229f, 0.224f, 0.225f};

__global__ void preprocess_device(const std::uint8_t* in, float* out, image_shape shape) {
  const std::size_t total = shape.images * shape.height * shape.width * 3;
  const std::size_t row = shape.width * 3;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const std::size_t c = i % 3;
    const std::size_t x = (i / 3) % shape.width;
    const std::size_t line = i / row;
    const float v = static_cast<float>(in[line * row + (shape.width - 1 - x) * 3 + c]) / 255.0f;
    out[i] = (v - channel_mean[c]) / channel_std[c];
  }
}

// One block per (image, feature): a tree sum over the feature's chunk.
__global__ void pool_device(const float* pixels, float* features, std::size_t per_image, std::size_t hidden) {
  __shared__ float partial[256];
  const std::size_t chunk = per_image / hidden;
  const std::size_t n = blockIdx.x / hidden;
  const std::size_t j = blockIdx.x % hidden;
  const float* first = pixels + n * per_image + j * chunk;
  float sum = 0;
  for (std::size_t i = threadIdx.x; i < chunk; i += blockDim.x) sum += first[i];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) features[blockIdx.x] = partial[0] / static_cast<float>(chunk);
}

__global__ void relu_device(float* x, std::size_t count) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) x[i] = fmaxf(x[i], 0.0f);
}

__global__ void relu_backward_device(float* delta, const float* activation, std::size_t count) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
    if (activation[i] <= 0.0f) delta[i] = 0.0f;
  }
}

// One block: the loss is one number, and a single block needs no zeroed accumulator.
__global__ void loss_device(const float* out, float* delta, float* loss, std::size_t count, std::size_t rows) {
  __shared__ float partial[1024];
  float sum = 0;
  for (std::size_t i = threadIdx.x; i < count; i += blockDim.x) {
    sum += out[i] * out[i];
    delta[i] = out[i] / static_cast<float>(rows);
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) loss[0] = partial[0] / (2.0f * static_cast<float>(rows));
}

__global__ void sgd_device(float* w, const float* grad, std::size_t count, float rate) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) w[i] -= rate * grad[i];
}

__global__ void init_device(float* w, std::size_t count) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
    w[i] = 0.01f * static_cast<float>(i % 7) - 0.02f;
  }
}

unsigned blocks_for(std::size_t count) {
  const std::size_t blocks = count / 256 + 1;
  return static_cast<unsigned>(blocks < 4096 ? blocks : 4096);
}

void check_blas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(call) + " failed: cuBLAS status " + std::to_string(static_cast<int>(status)));
  }
}

}  // namespace

void preprocess(native_stream stream, const std::uint8_t* in, float* out, image_shape shape) {
  preprocess_device<<<blocks_for(shape.pixels()), 256, 0, stream>>>(in, out, shape);
}

void pool(native_stream stream, const float* pixels, float* features, image_shape shape, std::size_t hidden) {
  pool_device<<<static_cast<unsigned>(shape.images * hidden), 256, 0, stream>>>(pixels, features, shape.per_image(), hidden);
}

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS gets B first.
void gemm(native_stream stream, void* blas, const float* a, const float* b, float* c, gemm_shape s) {
  auto handle = static_cast<cublasHandle_t>(blas);
  check_blas(cublasSetStream(handle, stream), "cublasSetStream");
  const float one = 1.0f;
  const float zero = 0.0f;
  const int m = static_cast<int>(s.m);
  const int n = static_cast<int>(s.n);
  const int k = static_cast<int>(s.k);
  check_blas(cublasSgemm(handle, s.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, s.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, n,
                         m, k, &one, b, s.transpose_b ? k : n, a, s.transpose_a ? m : k, &zero, c, n),
             "cublasSgemm");
}

void relu(native_stream stream, float* x, std::size_t count) { relu_device<<<blocks_for(count), 256, 0, stream>>>(x, count); }

void relu_backward(native_stream stream, float* delta, const float* activation, std::size_t count) {
  relu_backward_device<<<blocks_for(count), 256, 0, stream>>>(delta, activation, count);
}

void loss(native_stream stream, const float* out, float* delta, float* loss_value, std::size_t count, std::size_t rows) {
  loss_device<<<1, 1024, 0, stream>>>(out, delta, loss_value, count, rows);
}

void sgd(native_stream stream, float* w, const float* grad, std::size_t count, float rate) {
  sgd_device<<<blocks_for(count), 256, 0, stream>>>(w, grad, count, rate);
}

void init(native_stream stream, float* w, std::size_t count) { init_device<<<blocks_for(count), 256, 0, stream>>>(w, count); }

void* create_blas() {
  cublasHandle_t handle = nullptr;
  check_blas(cublasCreate(&handle), "cublasCreate");
  return handle;
}

void destroy_blas(void* handle) { cublasDestroy(static_cast<cublasHandle_t>(handle)); }

}  // namespace streamsafe::demo::cuda_launch
