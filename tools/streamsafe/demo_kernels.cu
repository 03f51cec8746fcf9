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

}  // namespace streamsafe::demo::cuda_launch
