#include <cuda_runtime.h>

#include "demo_kernels.hpp"

namespace streamsafe::demo::cuda_launch {

namespace {

__device__ void spin_for(unsigned microseconds) {
  unsigned long long start = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  unsigned long long now = start;
  while (now - start < 1000ull * microseconds) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
}

__global__ void fill_kernel(std::uint32_t* data, std::size_t count, std::uint32_t value, unsigned spin_us) {
  if (spin_us > 0) spin_for(spin_us);
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) data[i] = value;
}

__global__ void double_kernel(const std::uint32_t* in, std::uint32_t* out, std::size_t count) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) out[i] = 2 * in[i];
}

__global__ void copy_kernel(const std::uint32_t* in, std::uint32_t* out, std::size_t count, unsigned spin_us) {
  if (spin_us > 0) spin_for(spin_us);
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) out[i] = in[i];
}

/// A dependent chain of `iterations` FMAs: its length is the chain's latency or, with enough
/// warps resident, the SM's FMA issue rate. The result is below 1 and never negative, which the
/// compiler cannot know, so the chain is not removed.
__device__ float fma_chain(unsigned iterations, float seed) {
  float x = seed;
#pragma unroll 16
  for (unsigned i = 0; i < iterations; ++i) x = fmaf(x, 0.999f, 0.0001f);
  return x;
}

__global__ void compute_copy_kernel(const std::uint32_t* in, std::uint32_t* out, std::size_t count,
                                    unsigned fma_iterations) {
  const float x = fma_chain(fma_iterations, static_cast<float>(threadIdx.x) / blockDim.x);
  const std::uint32_t never = x < 0.0f ? 1u : 0u;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) out[i] = in[i] + never;
}

unsigned blocks_for(std::size_t count) {
  const std::size_t blocks = count / 256 + 1;
  return static_cast<unsigned>(blocks < 1024 ? blocks : 1024);
}

}  // namespace

void fill(native_stream stream, std::uint32_t* data, std::size_t count, std::uint32_t value, unsigned spin_us) {
  fill_kernel<<<blocks_for(count), 256, 0, stream>>>(data, count, value, spin_us);
}

void doubled(native_stream stream, const std::uint32_t* in, std::uint32_t* out, std::size_t count) {
  double_kernel<<<blocks_for(count), 256, 0, stream>>>(in, out, count);
}

void copy(native_stream stream, const std::uint32_t* in, std::uint32_t* out, std::size_t count, unsigned spin_us) {
  copy_kernel<<<blocks_for(count), 256, 0, stream>>>(in, out, count, spin_us);
}

void compute_copy(native_stream stream, const std::uint32_t* in, std::uint32_t* out, std::size_t count,
                  unsigned fma_iterations) {
  compute_copy_kernel<<<blocks_for(count), 256, 0, stream>>>(in, out, count, fma_iterations);
}

}  // namespace streamsafe::demo::cuda_launch
